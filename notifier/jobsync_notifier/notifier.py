"""The notifier: one watcher per allowed kind, publishing to EventBridge in batches, with health endpoints."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes.client import ApiClient

from jobsync.settings import Settings
from jobsync_notifier.health import HealthServer
from jobsync_notifier.publish import BatchedPublisher
from jobsync_notifier.settings import NotifierSettings
from jobsync_notifier.waiting import WaitingExecutions
from jobsync_notifier.watch import KindWatcher


class Notifier:
    def __init__(
        self,
        api_client: ApiClient,
        settings: Settings,
        notifier_settings: NotifierSettings,
        events_client: Any = None,
        dynamodb_client: Any = None,
    ) -> None:
        self.publisher = BatchedPublisher(
            notifier_settings.event_bus_name, events_client, notifier_settings.publish_concurrency
        )
        # Which executions wait (the stack's table): what a start or a relist needs to say, and no more.
        waiting = WaitingExecutions(settings.table_name, dynamodb_client) if settings.table_name else None
        self.watchers = [
            KindWatcher(
                api_client,
                spec,
                settings.namespace,
                self.publisher.submit,
                notifier_settings.watch_timeout_seconds,
                waiting,
                notifier_settings.page_size,
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
        self.publisher.stop(timeout)  # what was seen is published before the process ends
        self.health.stop()
