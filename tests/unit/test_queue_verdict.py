"""The queue-aware verdict, state by state, from the Kueue states the e2e tier recorded (tests/payloads/kueue/).

Each recording is a real job and its Workload from Kueue v0.19.2 on the real API server, with the
UnadmittedWorkloadsObservability gate off as released (the ``*_observability`` ones: on). The job is given the
labels Submit writes (its execution's), and a look is decided by the core (``jobsync.core.step``) with its reads
answered from the recording: the Workload under the names Kueue gives it, the LocalQueue naming the ClusterQueue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from jobsync import clock
from jobsync.core import queue
from jobsync.core.ours import job_labels
from jobsync.core.outcome import Phase
from jobsync.core.reads import Read, WorkloadRead
from jobsync.core.state import LoopState, seconds
from jobsync.core.step import Step, begin, decide, step
from jobsync.evaluation.kinds import lookup
from jobsync.settings import Settings
from tests.payloads import load_payload

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:queued"
KUEUE = Settings(namespace="ml-queued", allowed_kinds="PyTorchJob,batch/v1/Job", kueue_enabled=True)
WITHOUT_KUEUE = Settings(namespace="ml-queued", allowed_kinds="PyTorchJob,batch/v1/Job")
LOCAL_QUEUE = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "spec": {"clusterQueue": "e2e-cq"}}


def recorded(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The recording's job, labelled as this execution's own, and its Workload."""
    found = load_payload(f"kueue/{name}.yaml")
    job = found["job"]
    job["metadata"]["labels"] = {**job["metadata"].get("labels", {}), **job_labels(EXECUTION)}
    return job, found["workload"]


@dataclass
class Cluster:
    """Answers a look's reads from a recording; ``asked`` keeps them, in order."""

    workload: dict[str, Any] | None
    error: str | None = None
    local_queue: dict[str, Any] | None = field(default_factory=lambda: LOCAL_QUEUE)
    asked: list[str] = field(default_factory=list)

    def answer(self, read: Read) -> Any:
        self.asked.append(read.what)
        if read.what == "workload":
            found = self.workload
            named = found is not None and found["metadata"]["name"] in read.names
            owned = named and found["metadata"]["ownerReferences"][0]["uid"] == read.uid
            return WorkloadRead(found if owned else None, self.error)
        if read.what == "localqueue":
            return self.local_queue
        if read.what == "pods":
            from jobsync.core.diagnostics import JobPods

            return JobPods([])
        raise AssertionError(f"unexpected read {read}")


def first_state(job: dict[str, Any], **overrides: Any) -> LoopState:
    created = clock.parse(job["metadata"]["creationTimestamp"]) or 0.0
    base = {
        "job": {
            "apiVersion": job["apiVersion"],
            "kind": job["kind"],
            "namespace": "ml-queued",
            "name": job["metadata"]["name"],
            "uid": job["metadata"]["uid"],
        },
        "execution": EXECUTION,
        "submittedAt": clock.isoformat(created),
        "deadline": clock.isoformat(created + 86400),
        "phase": "PENDING",
        "phaseSince": clock.isoformat(created),
    }
    return LoopState.model_validate({**base, **overrides})


def look(
    job: dict[str, Any], cluster: Cluster, after: float, loop: LoopState | None = None, settings: Settings = KUEUE
) -> Step:
    created = clock.parse(job["metadata"]["creationTimestamp"]) or 0.0
    return decide(step(loop or first_state(job), job, created + after, settings), cluster.answer)


# (recorded state, phase, reason, a piece of the message)
STATES = [
    ("queued_job", Phase.PENDING, "WaitingForQuota", "insufficient unused quota for cpu"),
    ("queued_pytorchjob", Phase.PENDING, "WaitingForQuota", "LocalQueue e2e, ClusterQueue e2e-cq"),
    ("queued_job_observability", Phase.PENDING, "WaitingForQuota", "queued for 1m00s"),
    ("no_matching_flavor_job", Phase.PENDING, "NoMatchingFlavor", "example.com/gpu unavailable in ClusterQueue"),
    ("pending_evaluation_job_observability", Phase.PENDING, "PendingEvaluation", "an equivalent workload recently"),
    ("waiting_for_preempted_job", Phase.PENDING, "WaitingForPreemptedWorkloads", "Pending the preemption of 1"),
    ("refused_job", Phase.FAILED, "ExceedsMaxQuota", "maximum capacity (1)"),
    ("refused_pytorchjob", Phase.FAILED, "ExceedsMaxQuota", "maximum capacity (1)"),
    ("refused_job_observability", Phase.FAILED, "ExceedsMaxQuota", "can never be admitted as it is"),
    ("inadmissible_job", Phase.FAILED, "Misconfigured", "LocalQueue no-such-queue doesn't exist"),
    ("misconfigured_job_observability", Phase.FAILED, "Misconfigured", "LocalQueue no-such-queue doesn't exist"),
    ("preempted_job", Phase.PENDING, "Evicted", "Preempted to accommodate a workload"),
    ("admitted_pytorchjob", Phase.PENDING, "Admitted", "waiting for the job to resume"),
    ("admitted_suspended_job", Phase.PENDING, "Admitted", "waiting for the job to resume"),
    ("unsatisfied_checks_job", Phase.PENDING, "UnsatisfiedAdmissionChecks", "manual-check: Pending"),
    ("rejected_check_job", Phase.FAILED, "AdmissionCheckRejected", 'AdmissionCheck in Rejected state: "manual-check"'),
    ("admitted_job", Phase.RUNNING, "Active", ""),
    ("preempting_job", Phase.RUNNING, "Active", ""),
    ("readmitted_job", Phase.RUNNING, "Active", ""),
    ("deactivated_job", Phase.SUSPENDED, "WorkloadDeactivated", "spec.active: false"),
    ("deactivated_queued_job", Phase.SUSPENDED, "WorkloadDeactivated", "once someone activates it"),
    ("max_execution_time_job", Phase.FAILED, "MaximumExecutionTimeExceeded", "maximum execution time"),
    ("requeuing_limit_job", Phase.FAILED, "RequeuingLimitExceeded", "maximum number of re-queuing retries"),
    ("finished_job", Phase.SUCCEEDED, "CompletionsReached", ""),
    ("finished_pytorchjob", Phase.SUCCEEDED, "PyTorchJobSucceeded", ""),
    ("finished_after_preemption_job", Phase.SUCCEEDED, "CompletionsReached", ""),
]


@pytest.mark.parametrize(("name", "phase", "reason", "said"), STATES, ids=[s[0] for s in STATES])
def test_each_recorded_queue_state_gives_its_verdict(name, phase, reason, said):
    job, workload = recorded(name)

    new = look(job, Cluster(workload), after=60).state

    assert (new.phase, new.reason) == (phase, reason), new.message
    assert said in new.message
    assert new.queue is not None and new.queue.workload == workload["metadata"]["name"]
    assert new.queue.localQueue == workload["spec"]["queueName"]
    assert new.queuedSeconds is not None


def test_every_recorded_state_has_its_verdict_here():
    from tests.payloads import kueue_state_names

    covered = {s[0] for s in STATES} | PENDING_ONLY_HERE
    assert covered == set(kueue_state_names())


# Recordings whose verdict is tested below, on their own (a grace, a queue that needs more than one look).
PENDING_ONLY_HERE: set[str] = set()


def test_kueue_names_the_workload_as_jobsync_looks_for_it():
    for name, *_ in STATES:
        job, workload = recorded(name)
        spec = lookup(job["apiVersion"], job["kind"])
        assert (
            queue.workload_names(spec, job["metadata"]["name"], job["metadata"]["uid"])[0]
            == (workload["metadata"]["name"])
        )


def test_a_queued_job_reads_its_local_queue_once_and_names_its_cluster_queue():
    job, workload = recorded("queued_job")
    cluster = Cluster(workload)
    first = look(job, cluster, after=60).state
    assert cluster.asked == ["workload", "localqueue"]
    assert first.queue is not None and first.queue.clusterQueue == "e2e-cq"

    cluster.asked.clear()
    again = look(job, cluster, after=120, loop=first).state
    assert cluster.asked == ["workload"]
    assert again.queuedSeconds == first.queuedSeconds + 60 and "queued for 2m00s" in again.message


def test_the_time_queued_counts_every_wait_for_admission():
    # Created 20:05:21, admitted at once, preempted at :22 after 1 s of running, readmitted at :27: 5 s queued.
    job, workload = recorded("finished_after_preemption_job")
    ended = look(job, Cluster(workload), after=600).state
    assert ended.queuedSeconds == 5
    assert [e.model_dump() for e in ended.queue.evictions] == [
        {"reason": "Preempted", "underlyingCause": "", "count": 1}
    ]
    assert ended.queue.clusterQueue == "e2e-cq"


def test_a_preemption_is_counted_and_is_no_failure():
    job, workload = recorded("preempted_job")
    evicted = look(job, Cluster(workload), after=60).state
    assert evicted.phase == Phase.PENDING and not evicted.terminal
    assert "1 eviction(s) so far" in evicted.message
    assert evicted.queue.evictions[0].reason == "Preempted"


def test_admitted_and_evicted_at_once_is_an_eviction_not_an_admission():
    # kueue#14811: Admitted, QuotaReserved and Evicted all True at once (the readmitted recording, its Evicted
    # condition turned True as Kueue leaves it in the moment of an eviction): never trust one condition alone.
    job, workload = recorded("preempted_job")
    _, readmitted = recorded("readmitted_job")
    for found in readmitted["status"]["conditions"]:
        if found["type"] == "Evicted":
            found.update(status="True", reason="Preempted", message="Preempted to accommodate a workload")
    workload["status"] = readmitted["status"]
    new = look(job, Cluster(workload), after=60).state
    assert (new.phase, new.reason) == (Phase.PENDING, "Evicted")


@pytest.mark.parametrize("name", ["admitted_suspended_job", "admitted_pytorchjob"])
def test_admitted_but_suspended_past_the_grace_is_a_stuck_start(name):
    # A policy refused Kueue's resume (kueue#11931), or the operator has not resumed the job yet.
    job, workload = recorded(name)
    admitted_at = clock.parse(
        next(c for c in workload["status"]["conditions"] if c["type"] == "Admitted")["lastTransitionTime"]
    )
    created = clock.parse(job["metadata"]["creationTimestamp"])
    grace = KUEUE.stuck_grace_seconds
    starting = look(job, Cluster(workload), after=admitted_at - created + grace - 1)
    assert (starting.state.phase, starting.state.reason) == (Phase.PENDING, "Admitted")
    stuck = look(job, Cluster(workload), after=admitted_at - created + grace).state
    assert (stuck.phase, stuck.reason) == (Phase.FAILED, "AdmittedButSuspended")
    assert f"({grace}s allowed)" in stuck.message


def test_a_healthy_running_job_costs_one_get_once_its_admission_is_known():
    job, workload = recorded("admitted_job")
    cluster = Cluster(workload)
    first = look(job, cluster, after=30).state
    assert cluster.asked == ["workload"]  # its admission time, once; its ClusterQueue from the admission
    assert first.queue.admittedAt is not None and first.queue.clusterQueue == "e2e-cq"
    cluster.asked.clear()
    for after in (60, 300, 3600):
        assert look(job, cluster, after=after, loop=first).state.phase == Phase.RUNNING
    assert cluster.asked == []


def test_a_labelled_job_with_no_workload_is_queued_until_kueue_can_be_presumed_absent():
    job, _ = recorded("queued_job")
    waiting = look(job, Cluster(None), after=60).state
    assert (waiting.phase, waiting.reason) == (Phase.PENDING, "Queued")
    assert "has not made its Workload yet" in waiting.message
    gone = look(job, Cluster(None), after=KUEUE.operator_timeout_seconds + 1).state
    assert (gone.phase, gone.reason) == (Phase.FAILED, "NoWorkload")


def test_a_workload_that_cannot_be_read_leaves_the_job_queued_with_the_reason():
    job, _ = recorded("queued_job")
    new = look(job, Cluster(None, error="ClusterAccessDenied: 403"), after=3600).state
    assert (new.phase, new.reason) == (Phase.PENDING, "Queued")
    assert "could not be read: ClusterAccessDenied: 403" in new.message


def test_a_person_suspending_a_job_no_queue_manages_is_suspended():
    job, _ = recorded("queued_job")
    del job["metadata"]["labels"][queue.QUEUE_LABEL]
    cluster = Cluster(None)
    new = look(job, cluster, after=60).state
    assert (new.phase, new.reason) == (Phase.SUSPENDED, "JobSuspended")
    assert cluster.asked == ["workload"]  # Kueue may manage a job without the label: its Workload is looked for


def test_without_kueue_enabled_nothing_is_read_and_a_labelled_suspended_job_is_queued():
    job, workload = recorded("refused_job")
    cluster = Cluster(workload)
    new = look(job, cluster, after=60, settings=WITHOUT_KUEUE).state
    assert (new.phase, new.reason) == (Phase.PENDING, "Queued")
    assert "KueueEnabled" in new.message and cluster.asked == []


def test_a_queue_budget_ends_a_wait_for_admission_as_timed_out():
    job, workload = recorded("queued_job")
    created = clock.parse(job["metadata"]["creationTimestamp"])
    loop = first_state(job, queueDeadline=clock.isoformat(created + 600))
    waiting = look(job, Cluster(workload), after=599, loop=loop).state
    assert waiting.phase == Phase.PENDING and waiting.waitSeconds <= 1
    over = look(job, Cluster(workload), after=600, loop=loop).state
    assert (over.phase, over.reason) == (Phase.TIMED_OUT, "QueueTimeout")
    assert "insufficient unused quota" in over.message


def test_a_deadline_that_counts_from_admission_is_settled_by_the_admission():
    job, workload = recorded("admitted_job")
    created = clock.parse(job["metadata"]["creationTimestamp"]) or 0.0
    first = begin(
        job=first_state(job).job,
        execution=EXECUTION,
        cleanup="onFailure",
        created=job,
        timeout=3600,
        now=created,
        settings=KUEUE,
        queue_timeout=600,
        deadline_from="admission",
    ).state
    assert seconds(first.queueDeadline) == created + 600 and seconds(first.deadline) == created + 4200
    admitted = look(job, Cluster(workload), after=30, loop=first).state
    assert admitted.queueDeadline is None
    assert seconds(admitted.deadline) == seconds(admitted.queue.admittedAt) + 3600


def test_the_queue_budget_of_a_job_no_queue_holds_ends_at_its_first_look():
    job, _ = recorded("admitted_job")
    del job["metadata"]["labels"][queue.QUEUE_LABEL]
    created = clock.parse(job["metadata"]["creationTimestamp"]) or 0.0
    loop = first_state(job, queueDeadline=clock.isoformat(created + 600), deadlineFrom="admission", timeoutSeconds=60)
    new = look(job, Cluster(None), after=30, loop=loop).state
    assert new.queueDeadline is None and seconds(new.deadline) == created + 60
    assert new.queue is None and new.queuedSeconds is None


@pytest.mark.parametrize(("deadline_from", "phase"), [("admission", Phase.PENDING), ("submission", Phase.TIMED_OUT)])
def test_a_requeued_job_waits_outside_a_deadline_that_counts_from_admission(deadline_from, phase):
    # Admitted, then preempted after 1 s of running (Kueue's accumulatedPastExecutionTimeSeconds: 1), now requeued
    # past the 60 s its first admission left it: the wait is the queue's, within what is left of its budget.
    job, workload = recorded("preempted_job")
    created = clock.parse(job["metadata"]["creationTimestamp"]) or 0.0
    loop = first_state(
        job,
        deadlineFrom=deadline_from,
        timeoutSeconds=60,
        deadline=clock.isoformat(created + 60),
        queueTimeoutSeconds=3600,
        queue={"localQueue": "e2e", "workload": workload["metadata"]["name"], "admittedAt": clock.isoformat(created)},
    )
    new = look(job, Cluster(workload), after=600, loop=loop).state
    assert new.phase == phase
    if phase == Phase.PENDING:
        assert new.reason == "Evicted"
        assert seconds(new.deadline) == created + 600 + 60 - 1
        assert seconds(new.queueDeadline) == created + 600 + 3600 - new.queuedSeconds
    else:
        assert new.reason == "DeadlineExceeded"
