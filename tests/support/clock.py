"""A clock that stands still until the test moves it."""

from __future__ import annotations

# 2027-01-15T08:00:00Z: any fixed instant will do; tests that need a date pin one.
DEFAULT_START = 1_800_000_000.0


class FakeClock:
    """Callable like ``time.time``, so it can be jobsync's clock (``jobsync.clock.set_clock``) or the harness's."""

    def __init__(self, start: float = DEFAULT_START) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("time only moves forward")
        self.now += seconds
        return self.now
