"""The notifier: one watcher per allowed kind, publishing to EventBridge, with health endpoints."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes.client import ApiClient

from jobsync.settings import Settings
from jobsync_notifier.health import HealthServer
from jobsync_notifier.publish import EventBridgePublisher
from jobsync_notifier.settings import NotifierSettings
from jobsync_notifier.watch import KindWatcher


class Notifier:
    def __init__(
        self,
        api_client: ApiClient,
        settings: Settings,
        notifier_settings: NotifierSettings,
        events_client: Any = None,
    ) -> None:
        publisher = EventBridgePublisher(notifier_settings.event_bus_name, events_client)
        self.watchers = [
            KindWatcher(
                api_client, spec, settings.namespace, publisher.publish, notifier_settings.watch_timeout_seconds
            )
            for spec in settings.allowed_kinds
        ]
        self.health = HealthServer(self.watchers, notifier_settings.health_port, notifier_settings.stale_after_seconds)
        self._threads = [
            threading.Thread(target=w.run, name=f"watch-{w.spec.kind}", daemon=True) for w in self.watchers
        ]

    def start(self) -> Notifier:
        self.health.start()
        for thread in self._threads:
            thread.start()
        return self

    def wait_synced(self, timeout: float) -> bool:
        return all(w.synced.wait(timeout) for w in self.watchers)

    def stop(self, timeout: float = 10.0) -> None:
        for watcher in self.watchers:
            watcher.stopping.set()
        for thread in self._threads:
            thread.join(timeout)
        self.health.stop()
