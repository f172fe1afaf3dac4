"""Virtual time among concurrent executions: who is at work, who waits, and when the one clock may move.

Every wait of the interpreter (a Wait state, a retry's back-off, a task token's timeout, a
.sync task's look at its child) moves the harness's virtual clock instead of sleeping.
With one execution that is simple: the wait moves the clock. With many (RunJobs' children,
``cooperative_waits``), time may move only once no execution is at work in the interpreter
(starting, evaluating a state, running a Lambda) and every wait that ends sooner has
moved it: otherwise an execution still starting its state would see the clock jump past
it. ``VirtualTime`` keeps that bookkeeping; ``LocalStepFunctions`` is one.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.clock import VirtualClock
from harness.sfn import moto


@dataclass
class WaitRecord:
    """One entry into a Wait state: what it asked for and how long it really waited."""

    execution_arn: str
    state: str
    seconds: float
    started_at: float
    waited: float = 0.0


@dataclass
class SyncWait:
    """A ``.sync`` task's wait: for its child execution to end, or its own execution (``env``) to stop.

    Either end sets ``wake`` (``VirtualTime.wake_sync_waits``): a thousand Map Run children each
    waiting for its RunJob execution cost nothing while they wait.
    """

    child: str
    env: Any
    wake: threading.Event = field(default_factory=threading.Event)


class VirtualTime:
    """The scheduling state and the waits of ``LocalStepFunctions`` (see the module docstring)."""

    # Provided by LocalStepFunctions.
    clock: VirtualClock
    internal_errors: list[BaseException]
    _lock: threading.Lock
    _done_event: Callable[[str], threading.Event]

    def _init_virtual_time(self) -> None:
        self.wait_records: list[WaitRecord] = []
        self.retry_sleeps: list[float] = []
        self._deadlines: dict[int, tuple[Any, float]] = {}  # id(env) -> (env, virtual deadline)
        # Callback tasks: wall seconds to wait for SendTaskSuccess before the virtual clock moves on, and by how much.
        self.callback_slice_seconds = 0.02
        self.callback_step_seconds = 30.0
        # .sync tasks: woken by their child's end or their own execution's (``SyncWait``); this is only
        # a backstop, in wall seconds, and the pause of a .sync task that waits for no child execution.
        self.sync_poll_seconds = 1.0
        # Concurrent executions: a Wait moves time only once every other Wait that ends sooner has
        # moved it, and no Wait began or ended for ``wait_settle_seconds`` of wall time (see _wait_state).
        self.cooperative_waits = False
        self.wait_settle_seconds = 0.05
        # 0: each Wait ends when it asks. Above 0, concurrent Waits end on multiples of it (at most that much
        # late): each clock step costs wait_settle_seconds and more of wall time, and a thousand executions
        # with jittered waits would step the clock once per Wait (bench.runjobs; the tests keep it 0).
        self.wait_quantum_seconds = 0.0
        self._sleepers: dict[object, tuple[float, threading.Event]] = {}
        # Executions at work in the interpreter (started, or woken from a wait, and not yet waiting again, in a
        # Lambda, or ended): time does not move for them, for up to busy_grace_seconds of wall time each.
        self._busy: dict[object, float] = {}
        self._parked_once: set[str] = set()
        self._execution_of_thread = threading.local()
        self.busy_grace_seconds = 5.0
        # Map iterations at work per execution (each worker thread of a Map counts while it is not parked).
        self._iterations: dict[str, int] = {}
        # Parents whose .sync task saw its child end, since when: see _observed.
        self._holds: dict[str, float] = {}
        self.observed_hold_seconds = 1.0
        self.time_steps = 0  # how often a cooperative sleeper moved the clock: each waited wait_settle_seconds first
        self.sleeper_idle_seconds = 1.0  # a sleeper not due looks again at least this often (wall s)
        self._sleepers_changed = threading.Condition()
        self._last_sleeper_change = 0.0
        # Children of .sync tasks, and those that ended before their parent's task saw it: time waits for it to.
        self._sync_children: set[str] = set()
        # The .sync task each thread runs: thread id -> what it waits for.
        self._sync_waits: dict[int, SyncWait] = {}
        self._unobserved: set[str] = set()

    @property
    def waits(self) -> list[float]:
        """Seconds each Wait state entry asked for, in order."""
        return [record.seconds for record in self.wait_records]

    def _advance(self, seconds: float, env: Any = None) -> float:
        """Move virtual time on by ``seconds``; returns how far it really moved.

        Stops early when ``env`` stops running (StopExecution from a clock
        callback) or when a running execution reaches its TimeoutSeconds, which
        then times out, as the service does on its own clock.
        """
        start = self.clock.now()
        target = start + max(0.0, seconds)
        while self.clock.now() < target:
            now = self.clock.now()
            pending = [deadline for _, deadline in list(self._deadlines.values()) if deadline > now]
            self.clock.advance_to(min([target, *pending]), stop=(lambda: not env.is_running()) if env else None)
            if self._fire_deadlines() or (env is not None and not env.is_running()):
                break
        if self._sleepers:
            self._wake_sleepers()
        return self.clock.now() - start

    def _fire_deadlines(self) -> bool:
        fired = False
        for env, deadline in list(self._deadlines.values()):
            if deadline <= self.clock.now() and env.is_running():
                env.set_timed_out()
                fired = True
        return fired

    def _wait_state(self, env: Any, seconds: float) -> None:
        context = env.states.context_object.context_object_data
        record = WaitRecord(context["Execution"]["Id"], context["State"]["Name"], seconds, self.clock.now())
        self.wait_records.append(record)
        if not self.cooperative_waits:
            record.waited = self._advance(seconds, env)
            return
        record.waited = self._cooperative_wait(env, seconds)

    def _cooperative_wait(self, env: Any, seconds: float) -> float:
        """A Wait among concurrent executions: time moves to the soonest Wait's end once all are waiting.

        One clock serves every execution. Moving it at once, as a lone execution's Wait
        does, would let one execution's Wait pass hours that another, still busy in a
        Lambda task, has not lived. Here each Wait records when it ends; the soonest moves
        the clock there, once no Wait has begun or ended for ``wait_settle_seconds`` of
        wall time (the others are waiting too, or in a .sync, callback or watch wait, which
        take part the same way: ``virtual_sleep``); those due by then end with it.

        With ``wait_quantum_seconds`` the end is rounded up to its next multiple, so that Waits
        ending within one quantum move the clock together (see its comment).
        """
        target = self.clock.now() + max(0.0, seconds)
        if self.wait_quantum_seconds > 0:
            target = math.ceil(target / self.wait_quantum_seconds) * self.wait_quantum_seconds
        return self._cooperative_sleep(target, env.is_running, env=env)

    def virtual_sleep(
        self,
        seconds: float,
        wake: threading.Event | None = None,
        stop: Callable[[], bool] | None = None,
        until: float | None = None,
    ) -> float:
        """Let ``seconds`` of virtual time pass for a caller that is not a Wait state (a watch, a task token wait).

        Alone (``cooperative_waits`` off) the clock moves at once. Among concurrent executions the
        caller waits its turn as a Wait does, its end rounded up to a multiple of ``seconds`` so
        that every caller with the same step (a thousand open watches) moves time together.
        ``wake`` is the event the caller's other news arrives on (a task token's answer) and
        ``stop()`` says whether it has: the sleep then ends early. ``until``, when given, caps the
        rounded end (a timeout's deadline). Returns how far the clock moved meanwhile.
        """
        if not self.cooperative_waits:
            return self._advance(seconds)
        now = self.clock.now()
        target = now + seconds if seconds <= 0 else (math.floor(now / seconds) + 1) * seconds
        if until is not None:
            target = min(target, until)
        return self._cooperative_sleep(target, lambda: True, wake=wake, stop=stop)

    def _cooperative_sleep(
        self,
        target: float,
        running: Callable[[], bool],
        wake: threading.Event | None = None,
        stop: Callable[[], bool] | None = None,
        env: Any = None,
    ) -> float:
        """Sleep among the others until the clock reaches ``target`` (see ``_cooperative_wait``).

        Only the soonest sleeper looks, every ``wait_settle_seconds``, whether all is quiet; the
        others sleep on their own event until the clock passes them or they become the soonest
        (``_wake_sleepers``), so a thousand sleepers cost no more than one.
        """
        start = self.clock.now()
        key = object()
        event = wake or threading.Event()
        cv = self._sleepers_changed
        arn = moto.execution_arn(env) if env is not None else self.current_execution()
        with cv:
            self._sleepers[key] = (target, event)
            self._last_sleeper_change = time.monotonic()
        if arn:
            self.parked(arn)
        try:
            while running() and self.clock.now() < target:
                if stop is not None and stop():
                    break
                event.clear()  # before looking: a wake from here on is not lost
                if stop is not None and stop():
                    break
                with cv:
                    soonest = min(t for t, _ in self._sleepers.values())
                    now = time.monotonic()
                    settled = now - self._last_sleeper_change >= self.wait_settle_seconds
                    settled = settled and not self._unobserved
                    settled = settled and all(now - since >= self.busy_grace_seconds for since in self._busy.values())
                    settled = settled and all(
                        now - since >= self.observed_hold_seconds for since in self._holds.values()
                    )
                if target <= soonest and settled:
                    self.time_steps += 1
                    self._advance(target - self.clock.now(), env)
                    continue
                event.wait(self.wait_settle_seconds if target <= soonest else self.sleeper_idle_seconds)
        finally:
            with cv:
                self._sleepers.pop(key, None)
                self._last_sleeper_change = time.monotonic()
            if arn and (env is None or env.is_running()):
                self.at_work(arn)
            self._wake_sleepers()
        return self.clock.now() - start

    def current_execution(self) -> str | None:
        """The execution whose thread this is (its worker thread), if any."""
        return getattr(self._execution_of_thread, "arn", None)

    def started(self, arn: str, this_thread: bool = False) -> None:
        """An execution started: at work until it first waits, calls a Lambda or ends."""
        if this_thread:
            self._execution_of_thread.arn = arn
        with self._sleepers_changed:
            if arn not in self._parked_once:  # its thread may have got there first
                self._busy.setdefault(arn, time.monotonic())
            self._last_sleeper_change = time.monotonic()

    def parked(self, arn: str) -> None:
        """The execution waits (a Wait, a task token, a .sync child), is in a Lambda, or ended.

        On one of its Map's worker threads only that iteration parks: the others may still be at work.
        """
        if getattr(self._execution_of_thread, "iteration", None) == arn:
            self.iteration_parked(arn)
            return
        with self._sleepers_changed:
            self._parked_once.add(arn)
            self._busy.pop(arn, None)
            self._holds.pop(arn, None)
            self._last_sleeper_change = time.monotonic()

    def at_work(self, arn: str) -> None:
        """The execution goes on in the interpreter (its wait ended, its Lambda answered)."""
        if getattr(self._execution_of_thread, "iteration", None) == arn:
            self.iteration_at_work(arn)
            return
        with self._sleepers_changed:
            self._parked_once.add(arn)
            self._busy[arn] = time.monotonic()
            self._last_sleeper_change = time.monotonic()

    def iteration_began(self, arn: str) -> None:
        """This thread runs iterations of a Map of ``arn``: at work until it parks or ends."""
        self._execution_of_thread.iteration = arn
        self.iteration_at_work(arn)

    def iteration_ended(self, arn: str) -> None:
        self.iteration_parked(arn)
        self._execution_of_thread.iteration = None

    def in_iterations(self, arn: str) -> bool:
        """Whether a Map of ``arn`` has an iteration at work (a .sync task's thread cannot tell its own)."""
        with self._sleepers_changed:
            return self._iterations.get(arn, 0) > 0

    def iteration_at_work(self, arn: str) -> None:
        """One of the Map's iterations goes on in the interpreter: time waits for it, as for an execution."""
        with self._sleepers_changed:
            self._iterations[arn] = self._iterations.get(arn, 0) + 1
            self._busy[("iterations", arn)] = time.monotonic()
            self._last_sleeper_change = time.monotonic()

    def iteration_parked(self, arn: str) -> None:
        with self._sleepers_changed:
            left = self._iterations.get(arn, 0) - 1
            if left > 0:
                self._iterations[arn] = left
            else:
                self._iterations.pop(arn, None)
                self._busy.pop(("iterations", arn), None)
            self._holds.pop(arn, None)
            self._last_sleeper_change = time.monotonic()

    def hold(self, key: object) -> None:
        """Work outside an execution's states goes on (a map run starting its children): time waits for it.

        As an execution at work does, for up to ``busy_grace_seconds`` of wall time; ``release`` ends it.
        """
        with self._sleepers_changed:
            self._busy[key] = time.monotonic()
            self._last_sleeper_change = time.monotonic()

    def release(self, key: object) -> None:
        with self._sleepers_changed:
            self._busy.pop(key, None)
            self._last_sleeper_change = time.monotonic()
        self._wake_sleepers()

    def _wake_sleepers(self) -> None:
        """Wake the sleepers the clock has reached, and the soonest of the rest (it looks next)."""
        with self._sleepers_changed:
            if not self._sleepers:
                return
            now = self.clock.now()
            soonest = min(self._sleepers.values(), key=lambda sleeper: sleeper[0])
            soonest[1].set()
            for target, event in self._sleepers.values():
                if target <= now:
                    event.set()

    def _sync_sleep(self, seconds: float) -> None:
        """A .sync task's pause between looks at its child: until the child ends or the task's execution stops.

        moto looks (DescribeExecution) every 0.5 s of wall time, ``seconds``: a thousand tasks would
        make two thousand calls a second, each a waking thread under the one GIL, and starve the
        children they wait for. The wait is woken instead (``SyncWait``), with ``sync_poll_seconds``
        as a backstop.
        """
        waiting = self._sync_waits.get(threading.get_ident())
        if waiting is None:
            time.sleep(min(seconds, self.sync_poll_seconds))
            return
        done = self._done_event(waiting.child)
        while True:
            waiting.wake.clear()  # before looking: a wake from here on is not lost
            if done.is_set() or not waiting.env.is_running():
                return
            waiting.wake.wait(self.sync_poll_seconds)

    def wake_sync_waits(self, child: str | None = None, env: Any = None) -> None:
        """``child`` ended, or ``env`` (an execution or one of its frames) stopped: the .sync tasks waiting look."""
        for waiting in list(self._sync_waits.values()):
            if waiting.child == child or (env is not None and waiting.env is env):
                waiting.wake.set()

    def _retry_sleep(self, seconds: float) -> None:
        self.retry_sleeps.append(seconds)
        self._advance(seconds)

    def activity(self) -> None:
        """Something happened (an execution started or ended, a Lambda ran): a cooperative Wait settles anew."""
        with self._sleepers_changed:
            self._last_sleeper_change = time.monotonic()

    def _observed(self, child_arn: str, parent_arn: str | None = None) -> None:
        """A .sync task has seen its child end: its parent moves on, and time stands still until it waits again.

        The parent's next step (a Map's next iteration starting the next child, say) runs on
        moto's threads, which may take longer than ``wait_settle_seconds`` on a loaded machine:
        until the parent parks again, or ``observed_hold_seconds`` pass, the clock does not move.
        """
        with self._sleepers_changed:
            self._unobserved.discard(child_arn)
            self._sync_children.discard(child_arn)
            if parent_arn is not None:
                self._holds[parent_arn] = time.monotonic()
            self._last_sleeper_change = time.monotonic()
            self._sleepers_changed.notify_all()
