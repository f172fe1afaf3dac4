"""One look at a job, decided: (state, what was observed, now, settings) -> (next state, wait, outcome).

``step`` is the whole decision of a look, in every completion mode and for
every caller (the Status and Await Lambdas, through ``jobsync.run.poll``):
the verdict (``jobsync.core.verdict``), the times the state keeps, and the
wait until the next look (``jobsync.core.wait``), in one pass. It reads
nothing: it is a generator that starts from the job as the look read it,
yields each further ``Read`` the verdict needs (the pods, a stuck pod's
events, a log) and is sent what was read; it returns the ``Step``. ``decide``
runs it with a function that answers the reads. ``begin`` is the same for
the state Submit returns.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

from jobsync.core.outcome import Outcome, Phase
from jobsync.core.state import CleanupMode, DeadlineFrom, JobRef, LoopState, instant, seconds, text_instant
from jobsync.core.verdict import Read, Verdict, judge
from jobsync.core.wait import Starting, with_next_wait
from jobsync.evaluation import evaluate
from jobsync.settings import Settings

__all__ = ["Looking", "Read", "Step", "begin", "decide", "step"]


@dataclass(frozen=True)
class Step:
    """The next loop state (its ``waitSeconds`` is the wait), and how the run goes on or ends."""

    state: LoopState

    @property
    def wait(self) -> int:
        return self.state.waitSeconds

    @property
    def outcome(self) -> Outcome:
        return self.state.phase.outcome


Looking = Generator[Read, Any, Step]


def step(
    state: LoopState,
    obj: Mapping[str, Any] | None,
    now: float,
    settings: Settings,
    watched: float = 0.0,
    adopted: bool = False,
) -> Looking:
    """The next state after a look that saw ``obj`` (None: the API did not show it) at ``now``.

    ``watched``: the seconds a watch held the look (watch mode). Yields the reads the verdict needs.
    ``adopted``: the job was named to wait for, not created by the execution (``jobsync.core.ours``).
    """
    verdict = yield from judge(state, obj, now, settings, adopted=adopted)
    phase = verdict.phase
    update: dict[str, Any] = {
        "polls": state.polls + 1,
        "phase": phase,
        "reason": verdict.reason,
        "message": verdict.message,
        "terminal": phase.terminal,
        "phaseSince": instant(now) if phase != state.phase or _admitted(state, verdict) else state.phaseSince,
        "diagnostics": verdict.diagnostics,
        "logTail": verdict.log_tail,
        "result": verdict.result,
    }
    if verdict.stuck_checked:
        update["stuckSince"] = instant(verdict.stuck_since) if verdict.stuck_since is not None else None
    update |= _times(state, phase, verdict, now)
    update |= _queue(state, verdict, now)
    starting = Starting(visible=verdict.visible, reconciled=verdict.reconciled, stuck_until=verdict.stuck_until)
    return Step(with_next_wait(state.model_copy(update=update), now, settings, watched, starting=starting))


def decide(looking: Looking, answer: Callable[[Read], Any]) -> Step:
    """Run a look's decision to its end, each read answered by ``answer``."""
    try:
        read = next(looking)
        while True:
            read = looking.send(answer(read))
    except StopIteration as done:
        decided: Step = done.value
        return decided


def begin(
    *,
    job: JobRef,
    execution: str,
    cleanup: CleanupMode,
    created: Mapping[str, Any],
    timeout: int,
    now: float,
    settings: Settings,
    hint: int | None = None,
    family: str | None = None,
    hint_source: str | None = None,
    queue_timeout: int | None = None,
    deadline_from: DeadlineFrom = "submission",
) -> Step:
    """The first loop state of a job just created (``created``, as the API answered), and its first wait.

    ``timeout`` is the run's budget: from now, or (``deadline_from`` admission) from the job's admission by its
    queue, which must come within ``queue_timeout`` (default: the deployment's default timeout); until a look
    learns it, the deadline is the latest the run could end. ``queue_timeout`` alone bounds the queue's wait
    within a deadline that counts from now.
    """
    verdict = evaluate(created)
    if deadline_from == "admission":
        queue_timeout = queue_timeout or settings.default_timeout_seconds
    queue_deadline = now + queue_timeout if queue_timeout else None
    deadline = (queue_deadline if deadline_from == "admission" and queue_deadline else now) + timeout
    state = LoopState.model_validate(
        {
            "job": job,
            "execution": execution,
            "cleanup": cleanup,
            "submittedAt": instant(now),
            "deadline": instant(deadline),
            "deadlineFrom": deadline_from,
            "timeoutSeconds": timeout,
            "queueDeadline": instant(queue_deadline) if queue_deadline is not None else None,
            "queueTimeoutSeconds": queue_timeout,
            "expectedDurationSeconds": hint,
            "jobFamily": family,
            "hintSource": hint_source,
            "phase": verdict.phase,
            "reason": verdict.reason,
            "message": verdict.message,
            "terminal": verdict.terminal,
            "phaseSince": instant(now),
        }
    )
    # The job was just created: the operator has not written a status yet, as a rule.
    return Step(with_next_wait(state, now, settings, starting=Starting(reconciled=bool(created.get("status")))))


def _times(state: LoopState, phase: Phase, verdict: Verdict, now: float) -> dict[str, Any]:
    """startedAt, finishedAt (and noticedAt, at the end): the job's own, else the looks', and which.

    The job's start, once its status gives one, is kept (a restart re-dates the
    Running condition); a look's time stands in only while the status says nothing.
    """
    source = dict(state.timesFrom)
    update: dict[str, Any] = {}
    started, finished = text_instant(verdict.times.started), text_instant(verdict.times.finished)
    if started is not None and (not state.startedAt or source.get("startedAt") != "job"):
        update["startedAt"], source["startedAt"] = started, "job"
    elif phase == Phase.RUNNING and not state.startedAt:
        update["startedAt"], source["startedAt"] = instant(now), "polls"
    if phase.terminal:
        update["noticedAt"] = instant(now)
        update["finishedAt"], source["finishedAt"] = (finished, "job") if finished else (instant(now), "polls")
    update["timesFrom"] = source
    return update


def _queue(state: LoopState, verdict: Verdict, now: float) -> dict[str, Any]:
    """What the look learned of the job's queue and advance; once the job has left its queue (admitted, or
    no queue held it), its queue budget ends and a deadline that counts from admission is settled. Evicted and
    requeued, the job waits again within what is left of its queue budget, and a deadline that counts from
    admission keeps the time it was admitted (Kueue's count) and no more: it resumes with the readmission."""
    update: dict[str, Any] = {}
    if verdict.queue is not None:
        update["queue"] = verdict.queue
    if verdict.queued_seconds is not None:
        update["queuedSeconds"] = verdict.queued_seconds
    if verdict.progress is not None:  # kept from the last look that had one: an ended TrainJob may drop it
        update["progress"] = verdict.progress
    requeued = verdict.waiting and verdict.admitted_at is not None
    left_queue = not verdict.waiting and (verdict.admitted_at is not None or verdict.unqueued)
    if state.queueDeadline is not None and left_queue:
        update["queueDeadline"] = None
        if state.deadlineFrom == "admission" and state.timeoutSeconds:
            admitted = verdict.admitted_at if verdict.admitted_at is not None else seconds(state.submittedAt)
            update["deadline"] = instant(admitted + state.timeoutSeconds)
    if requeued and state.queueDeadline is None and state.queueTimeoutSeconds and verdict.queued_seconds is not None:
        update["queueDeadline"] = instant(now + max(0, state.queueTimeoutSeconds - verdict.queued_seconds))
    if state.deadlineFrom == "admission" and state.timeoutSeconds:
        left = state.timeoutSeconds - verdict.ran_seconds
        if verdict.resumed_at is not None and not verdict.waiting:
            update["deadline"] = instant(verdict.resumed_at + left)
        elif requeued:
            update["deadline"] = instant(max(seconds(state.deadline), now + max(left, 0)))
    return update


def _admitted(state: LoopState, verdict: Verdict) -> bool:
    """The look saw the job's first admission: its start begins now (the wait's pace is a start's, not a queue's)."""
    before, after = state.queue, verdict.queue
    return before is not None and before.admittedAt is None and after is not None and after.admittedAt is not None
