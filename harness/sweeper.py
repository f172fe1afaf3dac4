"""template.yaml's sweep schedule for the local run: the sweep function every N seconds of the run's clock.

EventBridge Scheduler invokes SweepFunction on a rate; here the stack's schedule
is played on the run's own clock. On virtual time each step of the clock that
reaches the next multiple of N invokes the function once, synchronously, in the
thread that moved the clock (after the operator simulator's step, so it sees the
cluster as it is then): time stands still while it runs, as a sweep takes
seconds where the jobs take hours. The clock moves in steps of at most
``max_step`` (30 s), so a sweep runs up to one step after its moment. On the
wall clock (a real cluster) a thread invokes it every N seconds.

The invocation goes through moto's Lambda backend, as every other function's
does, so it is recorded among ``LocalStepFunctions.invocations``.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any

from harness.clock import VirtualClock

FUNCTION = "jobsync-sweep"
# What EventBridge Scheduler sends: the schedule's Input (template.yaml's Sweep event).
EVENT: dict[str, Any] = {"sweep": "scheduled"}


class SweepSchedule:
    def __init__(self, sfn: Any, clock: VirtualClock, seconds: int) -> None:
        self.sfn = sfn
        self.clock = clock
        self.seconds = seconds
        self.runs = 0
        self._next = (math.floor(clock.now() / seconds) + 1) * seconds
        self._remove: Any = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._running = threading.Lock()

    def start(self) -> SweepSchedule:
        from harness.local import WallClock

        if isinstance(self.clock, WallClock):
            self._thread = threading.Thread(target=self._wall, name="sweep-schedule", daemon=True)
            self._thread.start()
        else:
            self._remove = self.clock.on_advance(self._tick)
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._remove:
            self._remove()
        if self._thread:
            self._thread.join(30)

    def run_now(self) -> Any:
        """One invocation of the sweep function, as the schedule makes it; returns its answer."""
        from harness.sfn import moto

        arn = self.sfn.function_arn(FUNCTION)
        parts = arn.split(":")  # arn:aws:lambda:<region>:<account>:function:<name>
        with self._running:  # one at a time, as the function's own time limit keeps them
            self.runs += 1
            function = moto.lambda_function(parts[4], parts[3], parts[6])
            answer = function.invoke(json.dumps(EVENT), {}, {})
        return json.loads(answer) if answer else None

    def _tick(self, now: float) -> None:
        if self._stopping.is_set() or now < self._next:
            return
        self._next = (math.floor(now / self.seconds) + 1) * self.seconds
        self.run_now()

    def _wall(self) -> None:
        while not self._stopping.wait(max(0.0, self._next - self.clock.now())):
            self._next += self.seconds
            try:
                self.run_now()
            except Exception as exc:  # a harness bug: kept for wait() to report, as an async invocation's
                self.sfn.internal_errors.append(exc)
