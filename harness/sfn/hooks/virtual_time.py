"""Virtual time: every wait, sleep, timeout and timestamp of the interpreter on the harness's clock.

A run's hours of Wait states, retries and task-token timeouts pass in seconds of wall
time, and every time the execution shows is the one the service would show. The
hooks that order concurrent executions on that one clock (who is at work, who waits)
are here too: without them time could move while an execution is still starting a state.
"""

from __future__ import annotations

import random
import types
from datetime import UTC, datetime, timezone
from typing import TYPE_CHECKING, Any

from harness.clock import VirtualClock
from harness.sfn import moto

if TYPE_CHECKING:
    from harness.sfn.hooks import Patch
    from harness.sfn.service import LocalStepFunctions


def jsonata_now_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """``$now()`` and ``$millis()`` read the service clock, which here is the virtual one (not the wall clock)."""
    clock = harness.clock
    patch(moto.JSONATA_NOW, staticmethod(lambda: int(clock.now() * 1000)))


def wait_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """A Wait state moves the virtual clock (and is recorded) instead of blocking on the wall clock.

    A StopExecution during the Wait ends it there, as in the service.
    """
    patch(moto.WAIT_INTERVAL, lambda wait_fn, env, wait_seconds: harness._wait_state(env, wait_seconds))


def retry_backoff_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """Retry back-off sleeps on the virtual clock (and is recorded in ``retry_sleeps``).

    moto computes the delay as the service does (IntervalSeconds x BackoffRate^n,
    MaxDelaySeconds, JitterStrategy) but sleeps it with ``time.sleep``.
    """
    patch(moto.RETRY_TIME, types.SimpleNamespace(sleep=harness._retry_sleep))


def seeded_full_jitter(harness: LocalStepFunctions, patch: Patch) -> None:
    """``JitterStrategy: FULL`` draws from a generator seeded with ``jitter_seed``, so runs repeat.

    moto draws from the process-wide ``random``; the bounds stay the service's.
    """
    patch(moto.JITTER_RANDOM, random.Random(harness.jitter_seed))


def dates_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """``Execution.StartTime``, ``State.EnteredTime``, startDate and stopDate come from the virtual clock.

    moto reads ``datetime.now()``; the context object also shows them as AWS
    does, ``2025-01-01T00:00:00.000Z``, where moto prints Python's isoformat.
    """
    virtual_datetime = _virtual_datetime_module(harness.clock)
    for seam in moto.DATETIMES:
        patch(seam, virtual_datetime)


def history_timestamps_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """Execution history events carry virtual-clock timestamps (moto stamps them with the wall clock)."""
    clock = harness.clock
    patch(moto.HISTORY_TIMESTAMP, staticmethod(lambda: datetime.fromtimestamp(clock.now(), UTC)))


def execution_timeout_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """An execution's ``TimeoutSeconds`` counts virtual time.

    moto runs the program in a thread and joins it with a wall-clock timeout. Here
    it runs in the execution thread, and the virtual clock times it out when it
    reaches the deadline (see ``LocalStepFunctions._advance``), as the service does.
    """
    clock = harness.clock

    def program_eval(program: Any, env: Any) -> None:
        if program.timeout_seconds and not env.is_frame():
            harness._deadlines[id(env)] = (env, clock.now() + program.timeout_seconds.timeout_seconds)
        try:
            env.next_state_name = program.start_at.start_at_name
            moto.evaluate_component(program, env)
        finally:
            harness._deadlines.pop(id(env), None)

    patch(moto.PROGRAM_EVAL, program_eval)


def task_token_wait_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """A ``.waitForTaskToken`` task's ``TimeoutSeconds`` counts virtual time.

    moto waits for SendTaskSuccess on the wall clock for the whole timeout. Here it
    waits in short wall-clock slices and moves the virtual clock on by
    ``harness.callback_step_seconds`` after each slice without an answer, so the
    simulated job goes on and the timeout (``States.Timeout``) comes when the
    virtual clock reaches it, as the service does. SendTaskSuccess still ends the
    wait at once. Among concurrent executions (``cooperative_waits``) each step waits
    its turn as a Wait state does (``LocalStepFunctions.virtual_sleep``), so a thousand
    waiting tasks move time together instead of each racing it on.
    """
    clock = harness.clock

    def wait(task: Any, timeout_seconds: int, callback_endpoint: Any) -> Any:
        deadline = clock.now() + timeout_seconds
        while True:
            outcome = callback_endpoint.wait(timeout=harness.callback_slice_seconds)
            if outcome is not None:
                return outcome
            if clock.now() >= deadline:
                return None
            if harness.cooperative_waits:
                # SendTaskSuccess sets the endpoint's event after its outcome: it wakes the sleep.
                answered = moto.answered(callback_endpoint)
                arrived = lambda: callback_endpoint.get_outcome() is not None  # noqa: E731
                harness.virtual_sleep(harness.callback_step_seconds, wake=answered, stop=arrived, until=deadline)
            else:
                harness._advance(min(harness.callback_step_seconds, deadline - clock.now()))

    patch(moto.TOKEN_WAIT, wait)


def tasks_are_waits_for_the_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """Speed and order only: while a Task runs (on the thread moto gives it), its execution counts as waiting.

    Time among concurrent executions moves only when none is at work in the interpreter
    (``LocalStepFunctions.at_work``): a task's own waits (a watch, a task token) move it
    in their turn, and a Lambda's run is covered by ``wait_settle_seconds``. A .sync task's
    execution (the parent) waits for its children from its first such task on.
    """
    original = moto.STATE_TIMEOUT.original

    def evaluate_with_timeout(state: Any, env: Any) -> None:
        arn = None if moto.is_sfn_task(state) else moto.execution_arn(env)
        if arn:
            harness.parked(arn)
        try:
            original(state, env)
        finally:
            if arn and env.is_running():
                harness.at_work(arn)

    patch(moto.STATE_TIMEOUT, evaluate_with_timeout)


def map_iterations_are_at_work(harness: LocalStepFunctions, patch: Patch) -> None:
    """Speed and order only: each worker thread of a Map counts as its execution at work until it parks.

    The Map state itself parks its execution's own thread while its iterations run on
    worker threads. Without this the clock could move between an iteration's start and its
    first park (evaluating its input and arguments, starting a child execution): on a
    loaded machine longer than ``wait_settle_seconds``, and then an item starts late.
    """
    original = moto.ITERATION_EVAL.original

    def worker_eval(worker: Any) -> None:
        arn = moto.execution_arn(moto.iteration_env(worker))
        if arn is None:
            original(worker)
            return
        harness.iteration_began(arn)
        try:
            original(worker)
        finally:
            harness.iteration_ended(arn)

    patch(moto.ITERATION_EVAL, worker_eval)


def sync_wait_checks_promptly(harness: LocalStepFunctions, patch: Patch) -> None:
    """A ``.sync`` task waits for its child only: no task token, no time of its own.

    moto also waits, beside the child, for a task token no one has (the service
    gives a ``.sync`` task none), and that wait moves the virtual clock on
    (``task_token_wait_on_virtual_clock``): the parent would race time ahead of its
    children. Here the child's own states move time. Speed: moto sleeps 0.5 s of wall
    time between DescribeExecution calls; here the task looks again as soon as its child
    has ended or its own execution stopped, woken by either (``LocalStepFunctions._sync_sleep``):
    a thousand Map Run children asking DescribeExecution twice a second would starve the
    executions they wait for.
    """
    patch(moto.SYNC_TIME, types.SimpleNamespace(sleep=harness._sync_sleep))

    def wakes_sync_waits(seam: Any) -> Any:
        original = seam.original

        def end(env: Any, *args: Any, **kwargs: Any) -> None:
            original(env, *args, **kwargs)  # a frame is ended through this too: its execution's end reaches it
            harness.wake_sync_waits(env=env)

        return end

    for seam in (moto.SET_STOP, moto.SET_TIMED_OUT, moto.SET_ERROR, moto.SET_ENDED):
        patch(seam, wakes_sync_waits(seam))
    original = moto.SFN_SYNC.original

    def eval_sync(
        task: Any,
        env: Any,
        sync_resolver: Any,
        timeout_seconds: int | None,
        callback_endpoint: Any,
        heartbeat_endpoint: Any,
    ) -> Any:
        return original(task, env, sync_resolver, timeout_seconds, None, heartbeat_endpoint)

    patch(moto.SFN_SYNC, eval_sync)


def _virtual_datetime_module(clock: VirtualClock) -> types.SimpleNamespace:
    """A stand-in for the ``datetime`` module whose ``datetime.now()`` reads the virtual clock."""

    class VirtualDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> VirtualDatetime:  # type: ignore[override]
            return cls.fromtimestamp(clock.now(), tz)

        def isoformat(self, *args: Any, **kwargs: Any) -> str:
            if args or kwargs or self.utcoffset() is None or self.utcoffset().total_seconds() != 0:
                return super().isoformat(*args, **kwargs)
            return f"{self:%Y-%m-%dT%H:%M:%S}.{self.microsecond // 1000:03d}Z"

    return types.SimpleNamespace(datetime=VirtualDatetime, timezone=timezone, UTC=UTC)
