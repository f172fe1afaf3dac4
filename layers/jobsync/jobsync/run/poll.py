"""The status step: one look at the job, its verdict, why it is stuck or failed, and the next wait."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from jobsync import clock
from jobsync.errors import WatchExpired
from jobsync.evaluation import evaluate
from jobsync.evaluation.kinds import KindSpec
from jobsync.evaluation.phase import Evaluation, LoopPhase, Phase
from jobsync.evaluation.times import JobTimes, job_times
from jobsync.run import diagnostics, pods, results, stuck
from jobsync.run.inputs import LoopState
from jobsync.run.loop import Cluster, Starting, allowed_spec, ensure_ours, epoch, with_next_wait
from jobsync.settings import Settings


@dataclass(frozen=True)
class Explanation:
    """The verdict, and what the pods say of it: findings, the failed container's log, (when the
    pods of a pending job were checked, ``stuck_checked``) since when they are stuck, None if they are not,
    and when a look could first fail them (``stuck_until``); and the ``result`` of a job that ended
    (jobsync.run.results)."""

    verdict: Evaluation
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    log_tail: str | None = None
    stuck_checked: bool = False
    stuck_since: str | None = None
    result: Any = None
    stuck_until: float | None = None


def poll(state: LoopState, cluster: Cluster, settings: Settings) -> LoopState:
    """One GET of the job, its verdict, why it is stuck or failed, and the next wait.

    In watch mode (``settings.watch_seconds``) the GET is followed by a watch
    on the job that returns as soon as its phase changes; the Wait state then
    has (almost) nothing left to wait.

    A job found missing after the not-found grace is looked up once more
    before the run ends as NOT_FOUND: one wrong 404 cannot end a run. A 404
    that is not this job's (the resource type's, while a CRD is being
    re-established) is TransientClusterError, retried (``KubeJobs.get``).
    """
    spec = allowed_spec(state.job, settings)
    obj = cluster.get(spec, state.job.namespace, state.job.name)
    watched = 0.0
    if obj is not None and settings.watch_seconds:
        obj, watched = _watch_for_change(cluster, spec, state, obj, settings)
    if obj is None and clock.now() - epoch(state.submittedAt) >= settings.not_found_grace_seconds:
        # A disappearance ends the run: one answer must not decide it. Look again; a job
        # that is really gone is gone on the second look too.
        obj = cluster.get(spec, state.job.namespace, state.job.name)
    now = clock.now()
    since_submit = now - epoch(state.submittedAt)
    explained = Explanation(Evaluation(Phase.PENDING, ""))
    times = JobTimes()
    if obj is None and since_submit < settings.not_found_grace_seconds:
        phase, reason, message = LoopPhase.PENDING, "NotVisibleYet", "the API does not show the job yet"
    elif obj is None:
        # Deleted by hand, or by a TTL after it ended between two polls.
        phase, reason = LoopPhase.NOT_FOUND, "JobDeleted"
        message = f"the job no longer exists (last seen {state.phase}); deleted by hand or by ttlSecondsAfterFinished"
    else:
        ensure_ours(obj, state.job, state.execution)  # another's job: its pods and logs are never read
        explained = _explain(evaluate(obj), obj, spec, state, now, since_submit, cluster, settings)
        verdict = explained.verdict
        phase, reason, message = LoopPhase.of(verdict.phase), verdict.reason, verdict.message
        times = job_times(obj, verdict)

    if not phase.terminal and now >= epoch(state.deadline):
        reason, message = "DeadlineExceeded", f"the job was still {phase} at its deadline {state.deadline}"
        phase = LoopPhase.TIMED_OUT
    update: dict[str, Any] = {
        "polls": state.polls + 1,
        "phase": str(phase),
        "reason": reason,
        "message": message,
        "terminal": phase.terminal,
        "phaseSince": clock.isoformat(now) if phase != state.phase else state.phaseSince,
        "diagnostics": explained.diagnostics,
        "logTail": explained.log_tail,
        "result": explained.result,
    }
    if explained.stuck_checked:
        update["stuckSince"] = explained.stuck_since
    update |= _times(state, phase, times, clock.isoformat(now))
    seen = Starting(
        visible=obj is not None,
        reconciled=obj is not None and bool(obj.get("status")),
        stuck_until=explained.stuck_until,
    )
    return with_next_wait(state.model_copy(update=update), now, settings, watched, starting=seen)


def _times(state: LoopState, phase: LoopPhase, times: JobTimes, now: str) -> dict[str, Any]:
    """startedAt, finishedAt (and noticedAt, at the end): the job's own, else the polls', and which.

    The job's start, once its status gives one, is kept (a restart re-dates the
    Running condition); a poll time stands in only while the status says nothing.
    """
    source = dict(state.timesFrom)
    update: dict[str, Any] = {}
    if times.started and (not state.startedAt or source.get("startedAt") != "job"):
        update["startedAt"], source["startedAt"] = times.started, "job"
    elif phase == LoopPhase.RUNNING and not state.startedAt:
        update["startedAt"], source["startedAt"] = now, "polls"
    if phase.terminal:
        update["noticedAt"] = now
        update["finishedAt"], source["finishedAt"] = (times.finished, "job") if times.finished else (now, "polls")
    update["timesFrom"] = source
    return update


def _watch_for_change(
    cluster: Cluster, spec: KindSpec, state: LoopState, obj: dict[str, Any], settings: Settings
) -> tuple[dict[str, Any] | None, float]:
    """(the job as last seen, or None if it was deleted; seconds spent) after watching for a phase change.

    A pending job is watched no longer than the pending wait, so the pod
    diagnostics keep their pace; nothing is watched past the deadline.
    """
    started = clock.now()
    seen = evaluate(obj)
    before = (seen.phase, seen.reason)
    if seen.phase.terminal:
        return obj, 0.0
    hold = float(settings.watch_seconds)
    if seen.phase in (Phase.PENDING, Phase.UNKNOWN):
        hold = min(hold, settings.wait_bounds.pending_max_seconds)
    hold = min(hold, epoch(state.deadline) - started)
    if hold < 1:
        return obj, 0.0
    meta = obj.get("metadata") or {}
    current: dict[str, Any] | None = obj
    # From the GET's version, so no change after the GET is missed. A version that has left the
    # API's window (410, after enough unrelated writes) is expected: the GET's verdict stands and
    # the watch starts again from now (the API then sends the job as it is first), never again
    # from the expired version.
    version = str(meta.get("resourceVersion", ""))
    while True:
        try:
            changed = _watch(cluster, spec, state, version, before, hold - (clock.now() - started))
        except WatchExpired:
            if not version:
                break
            version = ""
            continue
        if changed is not _NO_CHANGE:
            current = changed
        break
    return current, clock.now() - started


_NO_CHANGE: dict[str, Any] = {}  # a marker, compared by identity


def _watch(
    cluster: Cluster, spec: KindSpec, state: LoopState, version: str, before: tuple[Phase, str], hold: float
) -> dict[str, Any] | None:
    """The job once its phase or reason differs from ``before`` (None once deleted), or its last state when
    the watch ends. A new reason in the same phase (a restart: RUNNING, PyTorchJobRestarting) is news too.

    ``_NO_CHANGE`` when the watch saw no event at all (or had no time left).
    """
    if hold < 1:
        return _NO_CHANGE
    current: dict[str, Any] | None = _NO_CHANGE
    events = cluster.watch(spec, state.job.namespace, state.job.name, version, int(hold))
    with contextlib.closing(events):  # stop watching as soon as we know
        for event_type, changed in events:
            if event_type == "DELETED":
                return None
            current = changed
            now_seen = evaluate(changed)
            if (now_seen.phase, now_seen.reason) != before:
                break
    return current


def _explain(
    verdict: Evaluation,
    obj: dict[str, Any],
    spec: KindSpec,
    state: LoopState,
    now: float,
    since_submit: float,
    cluster: Cluster,
    settings: Settings,
) -> Explanation:
    """Why a job is stuck or failed; a start that can never succeed ends as FAILED."""
    if verdict.phase == Phase.PENDING and not obj.get("status") and since_submit > settings.operator_timeout_seconds:
        return Explanation(
            Evaluation(
                Phase.FAILED,
                "OperatorNotReconciling",
                f"no status after {int(since_submit)}s: is the {spec.kind} operator installed and running?",
                kind=spec.kind,
            )
        )
    ends = verdict.phase in (Phase.SUCCEEDED, Phase.FAILED)
    if spec.pod_selector(state.job.name) is None:
        # No pods in the cluster (SageMaker): the result is what the status carries.
        return Explanation(verdict, result=_result(spec, obj, state, cluster) if ends else None)
    if verdict.phase == Phase.PENDING and since_submit > settings.diagnose_after_seconds:
        found = _job_pods(spec, state, obj, cluster)
        findings = diagnostics.pod_findings(found.pods)
        stuck_found = diagnostics.stuck_reason(findings)
        reported = findings + found.notes()
        if stuck_found is None:
            return Explanation(verdict, reported, stuck_checked=True)
        judged = stuck.judge(stuck_found, found.pods, state, now, cluster, settings)
        stuck_since = judged.since
        if judged.expired(now):
            verdict = Evaluation(
                Phase.FAILED,
                judged.stuck.reason,
                f"pod {judged.stuck.pod} stuck for {int(now - stuck_since)}s "
                f"({judged.grace_seconds}s allowed): {judged.stuck.message}",
                kind=spec.kind,
            )
            until = None
        else:
            verdict = Evaluation(verdict.phase, judged.stuck.reason, judged.stuck.message, verdict.since, spec.kind)
            until = judged.ends_at()
        since = clock.isoformat(stuck_since)
        return Explanation(verdict, reported, stuck_checked=True, stuck_since=since, stuck_until=until)
    if verdict.phase == Phase.FAILED:
        found = _job_pods(spec, state, obj, cluster)
        failed = diagnostics.failed_container(found.pods)
        log_tail = None
        if failed:
            log = cluster.read_log(state.job.namespace, failed[0], failed[1], settings.log_tail_bytes)
            log_tail = diagnostics.tail(log, settings.log_tail_bytes) or None
        result = _result(spec, obj, state, cluster, found.pods)  # the same pods: no second LIST
        reported = diagnostics.pod_findings(found.pods) + found.notes()
        return Explanation(verdict, reported, log_tail=log_tail, result=result)
    if verdict.phase == Phase.SUCCEEDED:
        read = results.owned_pods(spec, obj, state.job.namespace, state.job.name, cluster)
        if read is None:  # not read (logged): the verdict stands, without a result
            return Explanation(verdict)
        return Explanation(verdict, read.notes(), result=results.from_pods(spec, read.pods))
    return Explanation(verdict)


def _job_pods(spec: KindSpec, state: LoopState, obj: dict[str, Any], cluster: Cluster) -> pods.JobPods:
    """The job's own pods (jobsync.run.pods): the pods with its label that its controller reference leads to."""
    status = obj.get("status")
    status = status if isinstance(status, dict) else None
    found = pods.job_pods(spec, state.job.namespace, state.job.name, pods.uid_of(obj), cluster, status)
    return found if found is not None else pods.JobPods([])


def _result(
    spec: KindSpec,
    obj: dict[str, Any],
    state: LoopState,
    cluster: Cluster,
    job_pods: list[dict[str, Any]] | None = None,
) -> Any:
    return results.job_result(spec, obj, state.job.namespace, state.job.name, cluster, job_pods)
