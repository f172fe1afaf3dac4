"""EventBridge's PutEvents as AWS answers it, where moto does not: its request size limit, and partial failures.

moto refuses more than 10 entries a call, as AWS does, but takes a request of any
size, and never fails an entry it can parse. AWS refuses a request whose entries
add up to more than 256 KB (``ValidationException``: "Total size of the entries
in the request is over the limit."), counting each entry as its Source,
DetailType and Detail in UTF-8, 14 bytes for a Time and each Resources entry
("Calculating PutEvents event entry size"); and under load it answers 200 with
some entries not taken (``FailedEntryCount``, an ``ErrorCode`` such as
``ThrottlingException`` on each), or throttles the whole call.

- ``put_events_size_limit()`` patches moto's backend with the size limit (every
  client, in this process or over HTTP, meets it);
- ``PutEventsFaults(client)`` makes one boto3 client's next calls meet AWS's
  partial failures: the entries named fail and are not delivered, the others
  are; or the whole call is throttled.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

MAX_REQUEST_BYTES = 256 * 1024
TOO_LARGE = "Total size of the entries in the request is over the limit."


def aws_entry_size(entry: dict[str, Any]) -> int:
    """An entry's size as AWS documents it (the harness's own reading, not the notifier's)."""
    size = 14 if entry.get("Time") else 0
    for key in ("Source", "DetailType", "Detail"):
        size += len(str(entry.get(key) or "").encode("utf-8"))
    return size + sum(len(str(r).encode("utf-8")) for r in entry.get("Resources") or [])


@contextlib.contextmanager
def put_events_size_limit() -> Iterator[None]:
    """moto's PutEvents with AWS's 256 KB request limit, while the context lasts."""
    from moto.events.exceptions import ValidationException
    from moto.events.models import EventsBackend

    original = EventsBackend.put_events

    def put_events(backend: EventsBackend, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if sum(aws_entry_size(e) for e in events) > MAX_REQUEST_BYTES:
            raise ValidationException(TOO_LARGE)
        return original(backend, events)

    EventsBackend.put_events = put_events  # type: ignore[method-assign]
    try:
        yield
    finally:
        EventsBackend.put_events = original  # type: ignore[method-assign]


THROTTLE = "throttle"  # a call of the plan that fails whole, ThrottlingException


class PutEventsFaults:
    """A boto3 ``events`` client whose coming PutEvents calls fail as AWS's do under load, call by call.

    ``plan(*calls)``: one item per coming call, in order: ``None`` (answered as moto answers it), a set of
    entry positions that fail (``code``; the others are delivered), or ``THROTTLE`` (the whole call fails,
    botocore's own retries spent). Calls past the plan are answered as moto answers them.
    """

    def __init__(self, client: Any, code: str = "ThrottlingException") -> None:
        self.code = code
        self.calls: list[int] = []  # entries per call, as the caller sent them
        self._plan: list[set[int] | str | None] = []
        events = client.meta.events
        events.register("provide-client-params.events.PutEvents", self._drop_failing)
        events.register("before-call.events.PutEvents", self._throttle)
        events.register("after-call.events.PutEvents", self._report_failures)

    def plan(self, *calls: set[int] | str | None) -> None:
        self._plan.extend(calls)

    def _drop_failing(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        entries = list(params.get("Entries") or [])
        self.calls.append(len(entries))
        step = self._plan.pop(0) if self._plan else None
        if step == THROTTLE:
            context["jobsync_throttle"] = True
        elif isinstance(step, set):
            failing = {i for i in step if i < len(entries)}
            if len(failing) == len(entries):
                raise ValueError("a planned call must deliver at least one entry (PutEvents takes 1 to 10)")
            context["jobsync_failing"] = (failing, len(entries))
            params["Entries"] = [e for i, e in enumerate(entries) if i not in failing]

    def _throttle(self, context: dict[str, Any], **_: Any) -> None:
        from botocore.exceptions import ClientError

        if context.pop("jobsync_throttle", False):
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "PutEvents")

    def _report_failures(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if "jobsync_failing" not in context:
            return
        failing, count = context.pop("jobsync_failing")
        taken = iter(parsed.get("Entries") or [])
        parsed["Entries"] = [
            {"ErrorCode": self.code, "ErrorMessage": "Rate exceeded"} if i in failing else next(taken)
            for i in range(count)
        ]
        parsed["FailedEntryCount"] = len(failing)
