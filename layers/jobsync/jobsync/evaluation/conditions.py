"""Readers of a job's ``status`` that never raise, shared by every family's evaluator.

Every evaluator takes the whole object (a mapping, already checked by
``jobsync.evaluation.evaluate``) and returns an ``Evaluation`` without
``kind``, which the caller fills in. None of them raises on malformed status
data:

- no ``status`` at all means the operator has not looked at the job yet:
  PENDING;
- a ``status`` that is not an object, a ``conditions`` that is not a list, or
  a status string that is not a string cannot be read: UNKNOWN, with a reason
  that says what was seen;
- condition entries that are not objects, or whose ``type`` is not a string,
  are ignored (one bad entry must not hide the good ones beside it); a list
  with entries but nothing recognisable among them is UNKNOWN.

A condition counts only when its ``status`` is ``"True"`` (YAML 1.1 turns an
unquoted ``True`` into a boolean, which is accepted too). Order, duplicates
and unknown condition types never change a verdict; where two conditions
compete, the later ``lastTransitionTime`` wins, then a fixed order by type.

A reader that finds the status unreadable raises ``Unreadable`` with the
verdict; ``@evaluator`` turns it into the evaluator's answer, so evaluators
read straight through.
"""

from __future__ import annotations

import functools
import math
import reprlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from jobsync import clock
from jobsync.evaluation.phase import Evaluation, Phase

Condition = Mapping[str, Any]
Evaluator = Callable[[Mapping[str, Any]], Evaluation]


class Unreadable(Exception):
    """The status cannot be read further; ``evaluation`` is the verdict."""

    def __init__(self, evaluation: Evaluation) -> None:
        super().__init__(evaluation.reason)
        self.evaluation = evaluation


def evaluator(fn: Evaluator) -> Evaluator:
    """An evaluator whose readers may raise ``Unreadable``: the verdict it carries is the answer."""

    @functools.wraps(fn)
    def evaluate(obj: Mapping[str, Any]) -> Evaluation:
        try:
            return fn(obj)
        except Unreadable as unreadable:
            return unreadable.evaluation

    return evaluate


def text(value: Any) -> str:
    """``value`` when it is a string, else ""; status fields are not trusted to be strings."""
    return value if isinstance(value, str) else ""


def timestamp_text(value: Any) -> str | None:
    """An RFC 3339 string from a status field, or None.

    YAML 1.1 parses an unquoted ``2019-01-11T00:51:48Z`` (as older kubectl
    printed it) into a datetime, so those are turned back into text; one
    without a zone is UTC, one that is no datetime in UTC (year 10000) None.
    """
    if isinstance(value, str):
        return value or None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        try:
            return str(value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        except OverflowError:
            return None
    if isinstance(value, date):
        return value.isoformat()
    return None


def _epoch(condition: Condition) -> float:
    """The condition's lastTransitionTime for ordering; unknown times sort first."""
    seconds = clock.parse(timestamp_text(condition.get("lastTransitionTime")))
    return -math.inf if seconds is None else seconds


def status_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``status`` as a mapping; raises Unreadable when there is none (PENDING) or it is not an object."""
    status = obj.get("status")
    if status is None:
        raise Unreadable(Evaluation(Phase.PENDING, "NoStatus", "the controller has not reported a status yet"))
    if not isinstance(status, Mapping):
        raise Unreadable(Evaluation(Phase.UNKNOWN, f"MalformedStatus: status is a {type(status).__name__}"))
    return status


@dataclass(frozen=True)
class Conditions:
    """``status.conditions`` as read: the well-formed entries, the True ones by type, what was ignored."""

    entries: list[Condition]
    true: dict[str, Condition]
    ignored: tuple[str, ...] = ()

    @classmethod
    def read(cls, status: Mapping[str, Any], strict: bool = True) -> Conditions:
        """The conditions of ``status``; raises Unreadable (UNKNOWN) when they are not a list, unless not strict."""
        raw = status.get("conditions")
        if raw is None:
            return cls([], {})
        if not isinstance(raw, list):
            if not strict:
                return cls([], {})
            raise Unreadable(Evaluation(Phase.UNKNOWN, f"MalformedConditions: conditions is a {type(raw).__name__}"))
        entries = [c for c in raw if isinstance(c, Mapping) and isinstance(c.get("type"), str)]
        ignored = tuple(reprlib.repr(c) for c in raw if not (isinstance(c, Mapping) and isinstance(c.get("type"), str)))
        return cls(entries, _true_by_type(entries), ignored)

    def pick(self, types: Iterable[str]) -> tuple[str, Condition] | None:
        """Among True ``types``, the one that changed last; earlier in ``types`` wins ties."""
        candidates = [(t, self.true[t]) for t in types if t in self.true]
        if not candidates:
            return None
        order = {t: i for i, (t, _) in enumerate(candidates)}
        return max(candidates, key=lambda tc: (_epoch(tc[1]), -order[tc[0]]))

    def ended_or_suspended(self, success: str) -> Evaluation | None:
        """Every condition family agrees: ``Failed`` or ``success`` end the job (the later wins), then Suspended."""
        if ended := self.pick(("Failed", success)):
            kind, condition = ended
            return from_condition(Phase.FAILED if kind == "Failed" else Phase.SUCCEEDED, condition)
        if "Suspended" in self.true:
            return from_condition(Phase.SUSPENDED, self.true["Suspended"])
        return None

    def unrecognised(self, known: frozenset[str]) -> Evaluation | None:
        """UNKNOWN when there are entries but none of a type this family knows (malformed ones included)."""
        if any(c["type"] in known for c in self.entries) or not (self.entries or self.ignored):
            return None
        seen = [f"types {sorted({c['type'] for c in self.entries})}"] if self.entries else []
        if self.ignored:
            seen.append(f"unreadable entries {list(self.ignored[:5])}")
        return Evaluation(Phase.UNKNOWN, f"UnrecognisedConditions: {'; '.join(seen)}")

    def latest_of_type(self, kind: str) -> Condition | None:
        return latest(c for c in self.entries if c["type"] == kind)


def _is_true(condition: Condition) -> bool:
    status = condition.get("status")
    return status == "True" or status is True


def latest(conditions: Iterable[Condition]) -> Condition | None:
    """The most recent condition; ties broken by content so order never matters."""
    return max(
        conditions,
        key=lambda c: (
            _epoch(c),
            text(c.get("reason")),
            text(c.get("message")),
            timestamp_text(c.get("lastTransitionTime")) or "",
        ),
        default=None,
    )


def _true_by_type(conditions: Iterable[Condition]) -> dict[str, Condition]:
    """The latest condition with status True for each type."""
    grouped: dict[str, list[Condition]] = {}
    for condition in conditions:
        if _is_true(condition):
            grouped.setdefault(condition["type"], []).append(condition)
    return {kind: c for kind, group in grouped.items() if (c := latest(group)) is not None}


def from_condition(phase: Phase, condition: Condition, default_reason: str = "") -> Evaluation:
    """A verdict that quotes the deciding condition."""
    return Evaluation(
        phase,
        text(condition.get("reason")) or default_reason or condition["type"],
        text(condition.get("message")),
        timestamp_text(condition.get("lastTransitionTime")),
    )


def count(value: Any) -> int:
    """A replica/job counter; anything that is not a plain number counts as 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0
    return int(value) if math.isfinite(value) else 0


def status_string(
    status: Mapping[str, Any],
    field: str,
    table: Mapping[str, Phase],
    details: Iterable[str],
    times: Iterable[str],
) -> Evaluation:
    """The phase of ``status[field]`` through ``table`` (the SageMaker, ACK and Azure ML families).

    ``details`` name fields whose text goes into the message (the operator's
    ``additional``, the secondary status, the failure reason); ``times``
    name the timestamp fields to report as ``since``, first present wins.
    """
    value = status.get(field)
    since = next((t for name in times if (t := timestamp_text(status.get(name)))), None)
    message = "; ".join(f"{name}: {detail}" for name in details if (detail := text(status.get(name))))
    if value is None or value == "":
        return Evaluation(Phase.PENDING, "NoStatus", message or f"{field} is not set yet", since)
    if not isinstance(value, str):
        return Evaluation(Phase.UNKNOWN, f"MalformedStatus: {field} is a {type(value).__name__}", message, since)
    phase = table.get(value)
    if phase is None:
        return Evaluation(Phase.UNKNOWN, f"UnrecognisedStatus: {field}={value!r}", message, since)
    return Evaluation(phase, value, message, since)
