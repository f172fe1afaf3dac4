"""Virtual time for the local run: hours of Wait states pass in milliseconds.

``now()`` reads the clock; ``advance()``/``sleep()`` move it forward at once.
Whoever needs to react to time passing (the training-operator simulator, a test
that stops an execution part-way) registers ``on_advance(callback)``; callbacks
run in the thread that advanced the clock, after each step.

With ``max_step`` set, a long advance is cut into steps of at most that many
seconds, so callbacks see the intermediate times and ``advance_to(..., stop=)``
can end early (a StopExecution in the middle of a 10-minute Wait stops time
where it happened, not at the end of the Wait).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

from jobsync import clock as jobsync_clock

# 2025-01-01T00:00:00Z: fixed, so runs are reproducible.
DEFAULT_START = datetime(2025, 1, 1, tzinfo=UTC).timestamp()


def default_start() -> float:
    """DEFAULT_START, moved by the same offset as the wall clock (pytest --clock-offset-days)."""
    return DEFAULT_START + jobsync_clock.offset()


class VirtualClock:
    def __init__(self, start: float | None = None, max_step: float | None = None) -> None:
        if max_step is not None and max_step <= 0:
            raise ValueError("max_step must be positive")
        self._now = float(default_start() if start is None else start)
        self.max_step = max_step
        self._callbacks: list[Callable[[float], None]] = []
        # Re-entrant: a callback may read the clock or advance it further.
        self._lock = threading.RLock()

    def now(self) -> float:
        """Seconds since the epoch, on the virtual clock."""
        return self._now

    def utcnow(self) -> datetime:
        return datetime.fromtimestamp(self.now(), tz=UTC)

    def on_advance(self, callback: Callable[[float], None]) -> Callable[[], None]:
        """Call ``callback(now)`` after every step forward; returns a function that unregisters it."""
        with self._lock:
            self._callbacks.append(callback)

        def remove() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return remove

    def advance_to(self, target: float, stop: Callable[[], bool] | None = None) -> float:
        """Move forward to ``target`` (never backwards); returns the time reached.

        ``stop`` is asked after each step; when it answers True the clock stays
        where it is.
        """
        with self._lock:
            while self._now < target:
                step_end = target if self.max_step is None else min(target, self._now + self.max_step)
                self._now = step_end
                for callback in list(self._callbacks):
                    callback(self._now)
                if stop is not None and stop():
                    break
            return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("time only moves forward")
        with self._lock:
            return self.advance_to(self.now() + seconds)

    def sleep(self, seconds: float) -> None:
        """``time.sleep`` on the virtual clock: returns at once, time has moved."""
        self.advance(max(0.0, seconds))
