"""List, then watch, one kind's jobsync jobs in one namespace, and report each phase change.

As client-go's informers do: list, then watch from the list's
``resourceVersion`` with bookmarks; when the watch answers 410 Gone (the
version left the API server's window after a compaction), list again; never
watch from an object's own old version. Every list compares what it sees with
what was last reported, so a change made while the notifier was down, or
while a watch was broken, is reported at the next list, and a job that
vanished before it ended is reported as NOT_FOUND.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException
from kubernetes.watch import Watch

from jobsync.bodies import meta
from jobsync.cluster.errors import TRANSPORT_ERRORS
from jobsync.core.event import PhaseChangedDetail
from jobsync.core.ours import MANAGED_BY
from jobsync.core.outcome import Phase
from jobsync.errors import JobsyncError
from jobsync.evaluation.kinds import KindSpec

logger = Logger(service="jobsync-notifier")

SELECTOR = f"{MANAGED_BY}=jobsync"
RETRY_SECONDS = (1, 2, 5, 10, 30)


class Expired(Exception):
    """The watch's resourceVersion is too old (410 Gone): list again."""


class KindWatcher:
    """Reports the phase changes of one kind's jobsync jobs to ``report`` (``jobsync.core.event``)."""

    def __init__(
        self,
        api_client: ApiClient,
        spec: KindSpec,
        namespace: str,
        report: Callable[[PhaseChangedDetail], Any],
        watch_timeout_seconds: int = 300,
    ) -> None:
        self.spec = spec
        self.namespace = namespace
        self._api = CustomObjectsApi(api_client)
        self._report = report
        self._timeout = watch_timeout_seconds
        self._phases: dict[str, Phase] = {}  # uid -> last reported
        self._seen: dict[str, dict[str, Any]] = {}  # uid -> last object seen
        self.resource_version: str | None = None
        self.synced = threading.Event()
        self.last_contact = 0.0
        self.stopping = threading.Event()

    # -- one step at a time (tests drive these) --------------------------------

    def sync(self) -> None:
        """List the kind's jobsync jobs; report every phase that differs from the last one reported."""
        listing = self._api.list_namespaced_custom_object(
            self.spec.group, self.spec.version, self.namespace, self.spec.plural, label_selector=SELECTOR
        )
        self.last_contact = time.monotonic()
        present = {}
        for obj in listing.get("items") or []:
            uid = meta(obj).uid
            if uid:
                present[uid] = obj
                self._observe(obj)
        for uid in [u for u in self._seen if u not in present]:
            self._vanished(self._seen[uid])
        self.resource_version = (listing.get("metadata") or {}).get("resourceVersion")  # a list's, not an object's
        self.synced.set()

    def watch_once(self) -> None:
        """One watch request from the last version; raises Expired on 410."""
        stream = Watch().stream(
            self._api.list_namespaced_custom_object,
            self.spec.group,
            self.spec.version,
            self.namespace,
            self.spec.plural,
            label_selector=SELECTOR,
            resource_version=self.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=self._timeout,
            _request_timeout=(5, self._timeout + 30),
        )
        try:
            for event in stream:
                self.last_contact = time.monotonic()
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    if (obj or {}).get("code") == 410:
                        raise Expired((obj or {}).get("message", "410 Gone"))
                    raise ApiException(status=(obj or {}).get("code"), reason=(obj or {}).get("message"))
                version = meta(obj).resource_version
                if version:
                    self.resource_version = version
                if kind == "DELETED":
                    self._vanished(obj)
                elif kind in ("ADDED", "MODIFIED"):
                    self._observe(obj)
                if self.stopping.is_set():
                    return
            self.last_contact = time.monotonic()  # the server ended the request on time: it is there
        except ApiException as exc:
            if exc.status == 410:
                raise Expired(str(exc.reason)) from None
            raise
        finally:
            stream.close()

    # -- the loop ---------------------------------------------------------------

    def run(self) -> None:
        """List and watch until ``stopping`` is set; every failure ends in a fresh list."""
        failures = 0
        while not self.stopping.is_set():
            try:
                self.sync()
                failures = 0
                while not self.stopping.is_set():
                    self.watch_once()
            except Expired as exc:
                logger.info("watch expired; listing again", extra={"kind": self.spec.kind, "detail": str(exc)})
            except (ApiException, JobsyncError, *TRANSPORT_ERRORS) as exc:
                delay = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
                failures += 1
                logger.warning(
                    "list or watch failed; retrying",
                    extra={"kind": self.spec.kind, "error": type(exc).__name__, "retryInSeconds": delay},
                )
                self.stopping.wait(delay)

    # -- what is reported ---------------------------------------------------------

    def _observe(self, obj: dict[str, Any]) -> None:
        uid = meta(obj).uid
        if not uid:
            return
        self._seen[uid] = obj
        change = PhaseChangedDetail.of(obj, self.spec)
        if self._phases.get(uid) == change.phase:
            return
        self._phases[uid] = change.phase
        self._report(change)

    def _vanished(self, obj: dict[str, Any]) -> None:
        uid = meta(obj).uid
        last = self._phases.pop(uid, None)
        self._seen.pop(uid, None)
        if last is None or last.terminal:
            return  # an ended job that cleanup (or its TTL) removed: nothing new to say
        self._report(PhaseChangedDetail.deleted(obj, self.spec, last))
