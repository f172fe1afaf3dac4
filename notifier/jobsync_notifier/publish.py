"""Phase changes as EventBridge events (``jobsync.core.event``: ``source: jobsync``, ``detail-type: Job Phase
Changed``), put in batches: up to 10 entries and 256 KB a call, a few calls at once, failed entries tried again.

A thousand jobs that end together (a sweep's last epoch) are a thousand events:
one call each, one after the other, takes 20 s at a 20 ms round trip. Here the
changes go to ``concurrency`` workers, each putting up to ``MAX_ENTRIES`` of its
own at a time. A job's changes always go to the same worker (by its uid), so
they leave in the order they were seen (EventBridge itself does not promise to
deliver them in order: each event carries its ``since``).

PutEvents answers per entry: ``FailedEntryCount``, and an ``ErrorCode`` on each
entry it did not take (``ThrottlingException``, ``InternalFailure``, ...). Those
entries are put again, alone of their batch, after a backoff with full jitter;
a whole call that fails (throttled, unreachable) is tried again the same way.
After ``ATTEMPTS`` an event is logged as lost: a lost event costs delay, not a
run (a later look finds the end: docs/notifier.md).
"""

from __future__ import annotations

import queue
import random
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger

from jobsync import strict_json
from jobsync.core.event import DETAIL_TYPE, SOURCE, PhaseChangedDetail

logger = Logger(service="jobsync-notifier")

MAX_ENTRIES = 10  # PutEvents takes at most 10 entries a call
MAX_REQUEST_BYTES = 256 * 1024  # ... and at most 256 KB of them, counted as EventBridge counts (entry_size)
ATTEMPTS = 4
BACKOFF_SECONDS = 0.25
MAX_BACKOFF_SECONDS = 8.0


def entry_size(entry: dict[str, Any]) -> int:
    """An entry's size as EventBridge counts it: Source, DetailType and Detail in UTF-8 (plus Time, Resources)."""
    size = sum(len(str(entry.get(key, "")).encode()) for key in ("Source", "DetailType", "Detail"))
    size += 14 if entry.get("Time") else 0
    return size + sum(len(str(resource).encode()) for resource in entry.get("Resources") or [])


def entry_of(change: PhaseChangedDetail, bus: str) -> dict[str, Any]:
    """The PutEvents entry of one change; a message too long for one call is cut (the verdict never is)."""
    detail = change.payload()
    entry = {"Source": SOURCE, "DetailType": DETAIL_TYPE, "Detail": strict_json.dumps(detail), "EventBusName": bus}
    excess = entry_size(entry) - MAX_REQUEST_BYTES
    if excess > 0:
        message = str(detail.get("message") or "").encode()
        detail["message"] = message[: max(0, len(message) - excess - 64)].decode(errors="ignore") + " [cut]"
        entry["Detail"] = strict_json.dumps(detail)
    return entry


@dataclass
class _Pending:
    change: PhaseChangedDetail
    entry: dict[str, Any]
    size: int
    attempts: int = 0


class BatchedPublisher:
    """Puts ``PhaseChangedDetail``s on the bus in batches (see the module docstring). ``submit`` never blocks."""

    def __init__(
        self,
        bus_name: str,
        client: Any = None,
        concurrency: int = 8,
        sleep: Callable[[float], Any] = time.sleep,
    ) -> None:
        if client is None:
            from jobsync import aws

            client = aws.client("events", pool=concurrency + 2)
        self._bus = bus_name
        self._client = client
        self._sleep = sleep
        self._queues: list[queue.Queue[_Pending | None]] = [queue.Queue() for _ in range(max(1, concurrency))]
        self._idle = threading.Condition()
        self._in_flight = 0
        self.published = 0
        self.lost = 0
        self.calls = 0
        self._threads = [
            threading.Thread(target=self._work, args=(q,), name=f"putevents-{i}", daemon=True)
            for i, q in enumerate(self._queues)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, change: PhaseChangedDetail) -> None:
        """Queue one change for its worker (by the job's uid, so one job's changes keep their order)."""
        entry = entry_of(change, self._bus)
        uid = str(change.job.uid or change.job.name or "")
        with self._idle:
            self._in_flight += 1
        self._queues[zlib.crc32(uid.encode()) % len(self._queues)].put(_Pending(change, entry, entry_size(entry)))

    def flush(self, timeout: float) -> bool:
        """Wait until every change submitted so far is published or lost; False when ``timeout`` ran out first."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def stop(self, timeout: float = 10.0) -> None:
        """Publish what is queued (for up to ``timeout`` s), then end the workers."""
        if not self.flush(timeout):
            logger.warning("stopping with events still queued", extra={"queued": self._in_flight})
        for q in self._queues:
            q.put(None)
        for thread in self._threads:
            thread.join(1.0)

    # -- a worker -----------------------------------------------------------------------

    def _work(self, q: queue.Queue[_Pending | None]) -> None:
        carry: list[_Pending] = []  # put these first: entries to try again, or one the last call had no room for
        stopping = False
        while carry or not stopping:
            batch, carry, stopping = self._take(q, carry, stopping)
            if not batch:
                continue
            again = self._put(batch)
            if again:
                attempt = max(p.attempts for p in again)
                self._sleep(random.uniform(0, min(MAX_BACKOFF_SECONDS, BACKOFF_SECONDS * 2**attempt)))
            carry = again + carry

    @staticmethod
    def _take(
        q: queue.Queue[_Pending | None], carry: list[_Pending], stopping: bool
    ) -> tuple[list[_Pending], list[_Pending], bool]:
        """(the next call's entries, what is left for later, whether the worker was told to stop):
        ``carry`` first, then what is queued, within MAX_ENTRIES and MAX_REQUEST_BYTES."""
        batch: list[_Pending] = []
        size = 0
        waiting = list(carry)
        while len(batch) < MAX_ENTRIES:
            if waiting:
                item: _Pending | None = waiting.pop(0)
            elif stopping:
                break
            else:
                try:
                    item = q.get(block=not batch)
                except queue.Empty:
                    break
                if item is None:
                    stopping = True
                    continue
            assert item is not None
            if batch and size + item.size > MAX_REQUEST_BYTES:
                waiting.insert(0, item)  # it starts the next call
                break
            batch.append(item)
            size += item.size
        return batch, waiting, stopping

    def _put(self, batch: list[_Pending]) -> list[_Pending]:
        """One PutEvents call; returns the entries to try again (those under ATTEMPTS that it did not take)."""
        self.calls += 1
        for pending in batch:
            pending.attempts += 1
        try:
            answer = self._client.put_events(Entries=[p.entry for p in batch])
            results = answer.get("Entries") or []
            failures = [(p, r.get("ErrorCode")) for p, r in zip(batch, results, strict=False) if r.get("ErrorCode")]
            if len(results) < len(batch):  # not answered: not taken
                failures += [(p, "NoAnswer") for p in batch[len(results) :]]
        except Exception as exc:  # botocore's errors, throttling included: the whole batch again
            failures = [(p, type(exc).__name__) for p in batch]
        failed = {id(p) for p, _ in failures}
        for pending in batch:
            if id(pending) not in failed:
                self._done(pending, published=True)
        retry = []
        for pending, error in failures:
            if pending.attempts < ATTEMPTS:
                retry.append(pending)
            else:
                logger.error(
                    "phase change not published", extra={"job": pending.change.job.model_dump(), "error": error}
                )
                self._done(pending, published=False)
        return retry

    def _done(self, pending: _Pending, published: bool) -> None:
        if published:
            logger.info(
                "phase change published",
                extra={"job": pending.change.job.model_dump(), "phase": str(pending.change.phase)},
            )
        with self._idle:
            if published:
                self.published += 1
            else:
                self.lost += 1
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.notify_all()
