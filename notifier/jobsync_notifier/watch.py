"""List, then watch, one kind's jobsync jobs in one namespace, and report each phase change.

As client-go's informers do: list, then watch from the list's
``resourceVersion`` with bookmarks; when the watch answers 410 Gone (the
version left the API server's window after a compaction), list again; never
watch from an object's own old version. The LIST comes in pages
(jobsync.cluster.paging), so one page is in memory at a time, and an expired
continue token lists again.

What it keeps is sized by the jobs that run, not by the history a namespace
keeps (succeeded jobs stay under the default cleanup): for each job that has
not ended, its uid, name, execution and the last phase seen (``Tracked``); of
the jobs that ended, nothing but a bounded set of the latest uids. An ended
job's phase does not change again, and whatever the notifier has to say of it
was said when it ended.

Which changes are reported:

* a change the notifier witnessed: a new job (a watch's ADDED), a tracked
  job's new phase (in a watch event, or at a LIST after a broken watch), a
  tracked job that vanished before it ended (NOT_FOUND);
* a job first seen already ended (at start, at a LIST after a broken watch,
  a change of an ended job no longer tracked): only when its execution still
  waits, as the stack's task-token store says (``WaitingExecutions``), read
  after the job was seen ended. That is what a waiting execution may not have
  seen; the others have moved on. Without the store (no table configured, or
  it cannot be read) every such job is reported;
* a job first seen at a LIST while it runs is recorded, not reported (nothing
  waits on a job's start), unless there is no store to ask: then, as ever,
  the LIST reports every job's phase.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException
from kubernetes.watch import Watch

from jobsync.bodies import meta
from jobsync.cluster.errors import TRANSPORT_ERRORS
from jobsync.cluster.paging import PAGE_SIZE, list_in_pages
from jobsync.core.event import EventJob, PhaseChangedDetail, execution_arn
from jobsync.core.ours import EXECUTION_ANNOTATION, MANAGED_BY
from jobsync.core.outcome import Phase
from jobsync.errors import JobsyncError
from jobsync.evaluation import evaluate
from jobsync.evaluation.kinds import KindSpec
from jobsync_notifier.waiting import WaitingExecutions

logger = Logger(service="jobsync-notifier")

SELECTOR = f"{MANAGED_BY}=jobsync"
RETRY_SECONDS = (1, 2, 5, 10, 30)
# Uids of the jobs that ended lately: a later event of one (the operator's last status write) is not news.
RECENTLY_ENDED = 4096


class Expired(Exception):
    """The watch's resourceVersion is too old (410 Gone): list again."""


@dataclass(slots=True)
class Tracked:
    """A job that has not ended: what its next change (or its disappearance) needs."""

    name: str
    execution: str | None
    phase: Phase


@dataclass(frozen=True, slots=True)
class Listed:
    """What a LIST keeps of one job until the LIST is read; ``change`` only where it is likely to be reported."""

    uid: str
    name: str
    execution: str | None
    phase: Phase
    reason: str
    change: PhaseChangedDetail | None


class KindWatcher:
    """Reports the phase changes of one kind's jobsync jobs to ``report`` (``jobsync.core.event``)."""

    def __init__(
        self,
        api_client: ApiClient,
        spec: KindSpec,
        namespace: str,
        report: Callable[[PhaseChangedDetail], Any],
        watch_timeout_seconds: int = 300,
        waiting: WaitingExecutions | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.spec = spec
        self.namespace = namespace
        self._api = CustomObjectsApi(api_client)
        self._report = report
        self._timeout = watch_timeout_seconds
        self._waiting = waiting
        self._page_size = page_size
        self._tracked: dict[str, Tracked] = {}  # uid -> a job that has not ended
        self._ended: OrderedDict[str, None] = OrderedDict()  # uids of jobs that ended lately
        self.resource_version: str | None = None
        self.synced = threading.Event()
        self.last_contact = 0.0
        self.stopping = threading.Event()

    @property
    def tracked(self) -> int:
        """How many jobs it keeps: those that have not ended."""
        return len(self._tracked)

    # -- one step at a time (tests drive these) --------------------------------

    def sync(self) -> None:
        """List the kind's jobsync jobs in pages; report what changed since the last look (module docstring)."""
        started = time.monotonic()
        before = self._waiting.all() if self._waiting else None
        listing = list_in_pages(self._page, lambda obj: self._listed(obj, before))
        self.last_contact = time.monotonic()
        # Read after every job was seen: an execution missing here will look at its job after that moment.
        after = self._waiting.all() if self._waiting and any(i.phase.terminal for i in listing.kept) else None
        present = set()
        for item in listing.kept:
            present.add(item.uid)
            self._settle(item, after)
        for uid in [u for u in self._tracked if u not in present]:
            self._vanished(uid)
        self.resource_version = listing.resource_version
        logger.info(
            "listed",
            extra={
                "kind": self.spec.kind,
                "jobs": len(listing.kept),
                "pages": listing.pages,
                "relisted": listing.restarts,
                "tracked": len(self._tracked),
                "seconds": round(time.monotonic() - started, 3),
            },
        )
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
                    self._vanished(meta(obj).uid)
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

    # -- the LIST ---------------------------------------------------------------

    def _page(self, token: str | None) -> dict[str, Any]:
        """One page of the LIST, parsed from the answer's bytes (no second copy as text)."""
        options: dict[str, Any] = {"_continue": token} if token else {}
        response = self._api.list_namespaced_custom_object(
            self.spec.group,
            self.spec.version,
            self.namespace,
            self.spec.plural,
            label_selector=SELECTOR,
            limit=self._page_size,
            _preload_content=False,
            **options,
        )
        try:
            page: dict[str, Any] = json.loads(response.data)
        finally:
            response.release_conn()
        return page

    def _listed(self, obj: dict[str, Any], waiting_before: set[str] | None) -> Listed | None:
        """What the LIST keeps of ``obj``: the whole change only where it will likely be reported."""
        seen = meta(obj)
        if not seen.uid:
            return None
        evaluation = evaluate(obj)
        tracked = self._tracked.get(seen.uid)
        execution = execution_arn(obj)
        likely = tracked is None or tracked.phase != evaluation.phase
        if likely and tracked is None and self._waiting is not None:
            # First seen: reported only once ended, and only while its execution waits.
            likely = evaluation.terminal and (waiting_before is None or execution in waiting_before)
        change = PhaseChangedDetail.of(obj, self.spec) if likely else None
        return Listed(seen.uid, seen.name, execution, evaluation.phase, evaluation.reason, change)

    def _settle(self, item: Listed, waiting: set[str] | None) -> None:
        tracked = self._tracked.get(item.uid)
        if tracked is not None and tracked.phase == item.phase:
            return
        if not item.phase.terminal:
            self._tracked[item.uid] = Tracked(item.name, item.execution, item.phase)
            if tracked is not None or self._waiting is None:
                self._send(item)
            return
        self._tracked.pop(item.uid, None)
        self._remember_ended(item.uid)
        if tracked is not None or self._waiting is None or waiting is None or item.execution in waiting:
            self._send(item)

    def _send(self, item: Listed) -> None:
        if item.change is not None:
            self._report(item.change)
            return
        # Its execution began to wait while the LIST was read: what the LIST kept of the job says enough.
        job = EventJob(
            apiVersion=self.spec.api_version,
            kind=self.spec.kind,
            namespace=self.namespace,
            name=item.name,
            uid=item.uid,
        )
        self._report(
            PhaseChangedDetail(
                job=job, executionArn=item.execution, phase=item.phase, terminal=True, reason=item.reason
            )
        )

    # -- watch events -----------------------------------------------------------

    def _observe(self, obj: dict[str, Any]) -> None:
        uid = meta(obj).uid
        if not uid:
            return
        evaluation = evaluate(obj)
        tracked = self._tracked.get(uid)
        if tracked is not None and tracked.phase == evaluation.phase:
            return
        if not evaluation.terminal:
            self._tracked[uid] = Tracked(meta(obj).name, execution_arn(obj), evaluation.phase)
            self._report(PhaseChangedDetail.of(obj, self.spec))
            return
        self._tracked.pop(uid, None)
        if tracked is None:
            # An ended job it does not track: news only to an execution that still waits for it.
            if uid in self._ended:
                return
            execution = execution_arn(obj)
            if self._waiting is not None and execution and self._waiting.waits(execution) is False:
                self._remember_ended(uid)
                return
        self._remember_ended(uid)
        self._report(PhaseChangedDetail.of(obj, self.spec))

    def _vanished(self, uid: str) -> None:
        """A job deleted (or gone from a LIST): news only if it had not ended (its end was already reported)."""
        self._ended.pop(uid, None)
        tracked = self._tracked.pop(uid, None)
        if tracked is None:
            return  # an ended job that cleanup (or its TTL) removed, or one never seen: nothing new to say
        # What the event needs of the object is what was kept of it.
        annotations = {EXECUTION_ANNOTATION: tracked.execution} if tracked.execution else {}
        gone = {"metadata": {"name": tracked.name, "namespace": self.namespace, "uid": uid, "annotations": annotations}}
        self._report(PhaseChangedDetail.deleted(gone, self.spec, tracked.phase))

    # -- helpers ----------------------------------------------------------------

    def _remember_ended(self, uid: str) -> None:
        self._ended[uid] = None
        self._ended.move_to_end(uid)
        while len(self._ended) > RECENTLY_ENDED:
            self._ended.popitem(last=False)
