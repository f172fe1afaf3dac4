"""The verdict of one look: the phase, and everything that can make a job FAILED, in one place.

The evaluator (``jobsync.evaluation``) reads the job's own status. Around it,
only a look with the run's state and the time can decide:

* the job is not the execution's (its label or uid): NotOurJob, nothing more read;
* the API does not show it: PENDING (NotVisibleYet) for ``not_found_grace_seconds``
  after submission, then NOT_FOUND, after a second look (one wrong 404 must
  not end a run);
* no status ``operator_timeout_seconds`` after submission: FAILED,
  OperatorNotReconciling (the operator is missing or down);
* a pending job's pods stuck past their grace (``jobsync.core.stuck``): FAILED;
* a Kueue-managed job's queue (``jobsync.core.queue``): queued is PENDING with
  why, a request that can never be admitted FAILED, a person's deactivation
  SUSPENDED; its wait past the input's queue budget (``queueDeadline``):
  TIMED_OUT, QueueTimeout;
* the deadline passed with the job not ended: TIMED_OUT;
* and what the pods say of it: findings, the failed container's log tail, the
  ``result`` of a job that ended (``jobsync.core.result``).

Nothing here reads the cluster. The verdict is a generator, one pass: given
the job as a look read it, it yields each further ``Read`` it needs (a second
GET of a missing job, the job's own pods, a stuck pod's events, a failed
container's log) and is sent what was read, then returns the ``Verdict``. The
reads are the ones the verdict needs and no more, in the order it needs them;
``jobsync.run.poll`` answers them from the cluster, the tests from a table.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from jobsync.bodies import meta
from jobsync.core import diagnostics, queue, result, stuck
from jobsync.core.diagnostics import JobPods
from jobsync.core.ours import allowed_spec, ensure_ours, not_ours
from jobsync.core.outcome import Phase
from jobsync.core.reads import Answer, Read
from jobsync.core.state import LoopState, QueueRecord, rfc3339, seconds
from jobsync.evaluation import evaluate
from jobsync.evaluation.kinds import KindSpec
from jobsync.evaluation.phase import Evaluation
from jobsync.evaluation.times import JobTimes, job_times
from jobsync.settings import Settings

__all__ = ["Claim", "Deciding", "Read", "Verdict", "ended", "judge"]

# ``Deciding`` is the verdict's generator: it yields reads (``jobsync.core.reads``), is sent their answers.
Deciding = Generator[Read, Answer, "Verdict"]


@dataclass(frozen=True)
class Verdict:
    """The verdict of one look, and what the pods said of it.

    ``stuck_checked``: the pods of a pending job were checked, so ``stuck_since``
    (epoch seconds, None when none is stuck) replaces the state's;
    ``stuck_until``: when a look could first fail the stuck pod found;
    ``visible`` and ``reconciled``: whether the API showed the job, and with a status;
    ``queue``, ``queued_seconds``, ``waiting``, ``unqueued``, ``admitted_at``,
    ``resumed_at``, ``ran_seconds``: what its queue said (``jobsync.core.queue.QueueSeen``);
    ``progress``: what its controller reports of its advance (``Evaluation.progress``), None when nothing.
    """

    phase: Phase
    reason: str
    message: str = ""
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    log_tail: str | None = None
    result: Any = None
    times: JobTimes = field(default_factory=JobTimes)
    stuck_checked: bool = False
    stuck_since: float | None = None
    stuck_until: float | None = None
    visible: bool = True
    reconciled: bool = True
    queue: QueueRecord | None = None
    queued_seconds: int | None = None
    waiting: bool = False
    unqueued: bool = False
    admitted_at: float | None = None
    resumed_at: float | None = None
    ran_seconds: int = 0
    progress: dict[str, Any] | None = None


def judge(
    state: LoopState,
    obj: Mapping[str, Any] | None,
    now: float,
    settings: Settings,
    looked_again: bool = False,
    adopted: bool = False,
) -> Deciding:
    """The verdict on ``state``'s job as a look saw it (``obj``, None: not shown) at ``now``; yields its reads.

    ``adopted``: a job named to wait for, not created by the execution (``jobsync.core.ours``).
    """
    spec = allowed_spec(state.job, settings)
    starts = settings.starts
    since_submit = now - seconds(state.submittedAt)
    if obj is None and since_submit >= starts.not_found_grace_seconds and not looked_again:
        # A disappearance ends the run: one answer must not decide it. A job that is really gone is
        # gone on the second look too.
        obj = yield Read("again")
    if obj is None and since_submit < starts.not_found_grace_seconds:
        message = "the API does not show the job yet"
        found = Verdict(Phase.PENDING, "NotVisibleYet", message, visible=False, reconciled=False)
    elif obj is None:
        # Deleted by hand, or by a TTL after it ended between two looks.
        message = f"the job no longer exists (last seen {state.phase}); deleted by hand or by ttlSecondsAfterFinished"
        found = Verdict(Phase.NOT_FOUND, "JobDeleted", message, visible=False, reconciled=False)
    else:
        ensure_ours(obj, state.job, state.execution, adopted)  # another's job: its pods and logs are never read
        found = yield from _explain(evaluate(obj), obj, spec, state, now, since_submit, settings)
    budget = state.queueDeadline
    if not found.phase.terminal and found.waiting and budget is not None and now >= seconds(budget):
        message = f"the job still waited for admission at its queue deadline {rfc3339(budget)}: {found.message}"
        return _replace(found, phase=Phase.TIMED_OUT, reason="QueueTimeout", message=message)
    if not found.phase.terminal and now >= seconds(state.deadline) and not _run_budget_waits(state, found):
        message = f"the job was still {found.phase} at its deadline {rfc3339(state.deadline)}"
        return _replace(found, phase=Phase.TIMED_OUT, reason="DeadlineExceeded", message=message)
    return found


@dataclass(frozen=True)
class Claim:
    """An event's claim that a job ended, checked against the job: whether it holds, and what was seen."""

    ended: bool
    seen: str


def ended(state: LoopState, obj: Mapping[str, Any] | None) -> Claim:
    """Whether the execution's job (as ``obj`` shows it, None: gone) has ended: worth a look that ends the run.

    Only the object's own status counts here; the look that follows gives the
    verdict (``judge``), with the pods, as every look does. An object that is not
    the execution's own has not ended for it.
    """
    if obj is None:
        return Claim(True, "the job is gone")
    why = not_ours(obj, state.execution, state.job.uid)
    if why is not None:
        return Claim(False, f"the object is {why}")
    seen = evaluate(obj)
    return Claim(seen.terminal, f"the job is {seen.phase}")


def _explain(
    verdict: Evaluation,
    obj: Mapping[str, Any],
    spec: KindSpec,
    state: LoopState,
    now: float,
    since_submit: float,
    settings: Settings,
) -> Deciding:
    """The evaluator's verdict with what the job's queue and pods say of it; a start that can never succeed ends
    as FAILED."""
    seen = yield from queue.look(state, obj, spec, verdict, now, settings)
    progress = verdict.progress.to_dict() if verdict.progress is not None else None
    said: dict[str, Any] = {
        "queue": seen.record,
        "queued_seconds": seen.queued_seconds,
        "waiting": seen.waiting,
        "unqueued": seen.unqueued,
        "admitted_at": seen.admitted_at,
        "resumed_at": seen.resumed_at,
        "ran_seconds": seen.ran_seconds,
        "progress": progress or None,
    }
    if seen.phase is not None:  # the queue decides: no pods run while a job waits in it
        decided = Evaluation(seen.phase, seen.reason, seen.message, kind=spec.kind)
        found = Verdict(seen.phase, seen.reason, seen.message, times=job_times(obj, decided))
        return _replace(found, stuck_until=seen.stuck_until, **said)
    found = yield from _explain_job(verdict, obj, spec, state, now, since_submit, settings)
    return _replace(found, **said)


def _explain_job(
    verdict: Evaluation,
    obj: Mapping[str, Any],
    spec: KindSpec,
    state: LoopState,
    now: float,
    since_submit: float,
    settings: Settings,
) -> Deciding:
    """The evaluator's verdict with what the pods say of it."""
    starts = settings.starts
    times = job_times(obj, verdict)
    reconciled = bool(obj.get("status"))
    if verdict.phase == Phase.PENDING and not reconciled and since_submit > starts.operator_timeout_seconds:
        message = f"no status after {int(since_submit)}s: is the {spec.kind} operator installed and running?"
        failed = Evaluation(Phase.FAILED, "OperatorNotReconciling", message, kind=spec.kind)
        return Verdict(failed.phase, failed.reason, failed.message, times=job_times(obj, failed), reconciled=False)
    base = Verdict(verdict.phase, verdict.reason, verdict.message, times=times, reconciled=reconciled)
    ends = verdict.phase in (Phase.SUCCEEDED, Phase.FAILED)
    if spec.pod_selector(state.job.name) is None:
        # No pods in the cluster (SageMaker): the result is what the status carries.
        return _replace(base, result=result.from_status(obj) if ends else None)
    if verdict.phase == Phase.PENDING and since_submit > starts.diagnose_after_seconds:
        return (yield from _stuck(base, obj, spec, state, now, settings))
    if verdict.phase == Phase.FAILED:
        found: JobPods = yield Read("pods", uid=meta(obj).uid, status=_status(obj))
        failed_container = diagnostics.failed_container(found.pods)
        log_tail = None
        if failed_container:
            log = yield Read("log", pod=failed_container[0], container=failed_container[1])
            log_tail = diagnostics.tail(log, starts.log_tail_bytes) or None
        reported = diagnostics.pod_findings(found.pods) + found.notes()
        return _replace(base, diagnostics=reported, log_tail=log_tail, result=result.from_pods(spec, found.pods))
    if verdict.phase == Phase.SUCCEEDED:
        read: JobPods | None = yield Read("pods", tolerant=True, uid=meta(obj).uid, status=_status(obj))
        if read is None:  # not read (logged): the verdict stands, without a result
            return base
        return _replace(base, diagnostics=read.notes(), result=result.from_pods(spec, read.pods))
    return base


def _stuck(
    base: Verdict, obj: Mapping[str, Any], spec: KindSpec, state: LoopState, now: float, settings: Settings
) -> Deciding:
    """A pending job's pods: stuck past the grace of its kind of stuck (``jobsync.core.stuck``) is FAILED."""
    found: JobPods = yield Read("pods", uid=meta(obj).uid, status=_status(obj))
    findings = diagnostics.pod_findings(found.pods)
    stuck_found = diagnostics.stuck_reason(findings)
    reported = findings + found.notes()
    if stuck_found is None:
        return _replace(base, diagnostics=reported, stuck_checked=True)
    judging = stuck.judging(stuck_found, found.pods, state, now, settings)
    try:
        pod = next(judging)
        while True:
            pod = judging.send((yield Read("events", pod=pod)))
    except StopIteration as done:
        judged: stuck.Judgement = done.value
    if judged.expired(now):
        message = (
            f"pod {judged.stuck.pod} stuck for {int(now - judged.since)}s "
            f"({judged.grace_seconds}s allowed): {judged.stuck.message}"
        )
        failed = Evaluation(Phase.FAILED, judged.stuck.reason, message, kind=spec.kind)
        return _replace(
            base,
            phase=failed.phase,
            reason=failed.reason,
            message=failed.message,
            times=job_times(obj, failed),
            diagnostics=reported,
            stuck_checked=True,
            stuck_since=judged.since,
        )
    return _replace(
        base,
        reason=judged.stuck.reason,
        message=judged.stuck.message,
        diagnostics=reported,
        stuck_checked=True,
        stuck_since=judged.since,
        stuck_until=judged.ends_at(),
    )


def _replace(verdict: Verdict, **changes: Any) -> Verdict:
    return replace(verdict, **changes)


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else None


def _run_budget_waits(state: LoopState, found: Verdict) -> bool:
    """A deadline that counts from admission does not run while the job waits in its queue (first, or requeued
    after an eviction) with budget left: the queue's own budget bounds that wait."""
    if state.deadlineFrom != "admission" or not found.waiting:
        return False
    return state.timeoutSeconds is None or found.ran_seconds < state.timeoutSeconds
