"""The one clock jobsync reads.

Production reads the wall clock. The local harness swaps in a virtual clock
(``set_clock``) so a simulated multi-hour run finishes in seconds while every
time-based decision still sees the times it would see in AWS.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

# Seconds added to the wall clock. Zero in production; tests move it (pytest
# --clock-offset-days) to prove that nothing depends on today's date.
_offset: float = 0.0


def wall() -> float:
    """The wall clock, seconds since the epoch, moved by the offset."""
    return time.time() + _offset


_now: Callable[[], float] = wall


def now() -> float:
    """Seconds since the epoch."""
    return _now()


def set_clock(source: Callable[[], float] | None) -> None:
    """Use ``source`` as the clock; None restores the wall clock."""
    global _now
    _now = source or wall


def set_offset(seconds: float) -> None:
    """Move the wall clock ``seconds`` ahead (tests only: see ``wall``)."""
    global _offset
    _offset = float(seconds)


def offset() -> float:
    return _offset


def utcnow() -> datetime:
    return datetime.fromtimestamp(now(), tz=UTC)


def isoformat(ts: float) -> str:
    """RFC 3339 in UTC with a ``Z``, to the second, as Kubernetes writes it."""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(value: str | None) -> float | None:
    """An RFC 3339 timestamp as epoch seconds; None when absent, unreadable or out of range.

    A time without a zone is read as UTC (Kubernetes writes UTC), never as
    the machine's local time: the same input gives the same answer anywhere.
    Out of range: a time that is no datetime once in UTC, such as
    ``9999-12-31T23:00:00-05:00``.
    """
    if not value or not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC).timestamp()
    except (ValueError, OverflowError):
        return None
