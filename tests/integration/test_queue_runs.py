"""Kueue-managed jobs through the real state machine: queued is PENDING with why, in every completion mode.

The local run (``harness.local.LocalJobsync`` on virtual time) with the Kueue simulator (``harness.kueue_sim``,
held to the recordings of the real Kueue v0.19.2 by tests/harness/test_kueue_sim.py): the job carries the
LocalQueue label, the simulator's webhook creates it suspended, and its Workload queues, admits, preempts or
refuses it. Bounds are in seconds of the job's own virtual clock.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.local import LOCAL_QUEUE, LocalJobsync
from jobsync import clock
from jobsync.core.queue import QUEUE_LABEL
from tests.support.lambdas import QUIET, load_event

RUN = {"pending_s": 30, "run_s": 1200}
MODES = {
    "poll": QUIET,
    "watch": {**QUIET, "JOBSYNC_COMPLETION_MODE": "watch", "JOBSYNC_WATCH_SECONDS": "600"},
    "callback": {**QUIET, "JOBSYNC_COMPLETION_MODE": "callback"},
}


def queued_input(cpu: str | None = None, **fields: Any) -> dict[str, Any]:
    """The sample input, labelled for the LocalQueue; ``cpu``: what each pod asks for (default: 500m, as Kueue
    counts a container that asks for nothing here, so that the job's two pods fill the ClusterQueue's 1 CPU)."""
    execution_input = {**load_event("run-job-input.json"), **fields}
    execution_input["job"]["metadata"]["labels"][QUEUE_LABEL] = LOCAL_QUEUE
    if cpu is not None:
        for replica in execution_input["job"]["spec"]["pytorchReplicaSpecs"].values():
            for container in replica["template"]["spec"]["containers"]:
                container["resources"] = {"requests": {"cpu": cpu}}
    return execution_input


def seen(result: Any) -> list[tuple[str, str]]:
    return [(p.phase, p.reason) for p in result.polls]


def since_submission(result: Any, field: str) -> float:
    out = result.output if result.output else json.loads(result.cause)
    return clock.parse(out[field]) - clock.parse(out["submittedAt"])


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_queued_job_reads_as_queued_with_why_then_runs_to_success(mode):
    with LocalJobsync("success", RUN, env=MODES[mode], queue="queued", queue_timings={"queued_s": 600}) as local:
        result = local.run(queued_input(), name=f"queued-{mode}")

    assert result.status == "SUCCEEDED", result.cause
    assert ("PENDING", "WaitingForQuota") in seen(result)
    assert not any(phase == "SUSPENDED" for phase, _ in seen(result))
    waiting = next(p for p in result.polls if p.reason == "WaitingForQuota")
    assert waiting.at - result.started_at < 600
    out = result.output
    assert out["queuedSeconds"] == 600
    assert out["queue"] == {
        "localQueue": LOCAL_QUEUE,
        "clusterQueue": "e2e-cq",
        "workload": out["queue"]["workload"],
        "admittedAt": clock.isoformat(clock.parse(out["submittedAt"]) + 600),
        "evictions": [],
    }
    assert out["queue"]["workload"].startswith("pytorchjob-")
    # The run's own times leave the queue out: it started 30 s after its admission (the simulators move with the
    # clock, at most one 30 s step late) and ran 1200 s.
    assert 630 <= since_submission(result, "startedAt") <= 660 and out["durationSeconds"] == 1200


def test_a_request_that_can_never_fit_fails_fast_with_the_reason():
    with LocalJobsync("success", RUN, env=QUIET, queue="refused") as local:
        result = local.run(queued_input(cpu="1", cleanup="always"), name="refused")  # 2 CPUs of 1
        left = local.jobs_left()

    assert result.error == "JobFailed"
    cause = json.loads(result.cause)
    assert cause["reason"] == "ExceedsMaxQuota"
    assert "maximum capacity (1)" in cause["message"] and "ClusterQueue e2e-cq" in cause["message"]
    assert since_submission(result, "noticedAt") <= 60  # the first look, not the deadline a day later
    assert cause["queuedSeconds"] == since_submission(result, "noticedAt")
    assert cause["queue"]["localQueue"] == LOCAL_QUEUE and left == []


def test_a_preempted_job_is_readmitted_and_succeeds_with_the_eviction_counted():
    timings = {"preempt_at": 300, "requeue_s": 600}
    with LocalJobsync("success", RUN, env=QUIET, queue="preempted", queue_timings=timings) as local:
        result = local.run(queued_input(), name="preempted")

    assert result.status == "SUCCEEDED", result.cause
    phases = seen(result)
    assert ("PENDING", "Evicted") in phases and ("RUNNING", "PyTorchJobRunning") in phases
    assert phases.index(("PENDING", "Evicted")) > phases.index(("RUNNING", "PyTorchJobRunning"))
    assert not any(phase == "FAILED" for phase, _ in phases)
    out = result.output
    assert out["queue"]["evictions"] == [{"reason": "Preempted", "underlyingCause": "", "count": 1}]
    assert out["queuedSeconds"] == 600
    # The operator ran it again from its resume: 30 s to start, then its full 1200 s (one clock step late at most).
    assert 300 + 600 + 30 + 1200 <= since_submission(result, "finishedAt") <= 300 + 600 + 30 + 1200 + 30


def test_a_queue_budget_ends_the_wait_for_admission_as_timed_out():
    with LocalJobsync("success", RUN, env=QUIET, queue="queued", queue_timings={"queued_s": 3600}) as local:
        result = local.run(queued_input(queueTimeoutSeconds=600, cleanup="always"), name="queue-budget")

    assert result.error == "JobTimedOut"
    cause = json.loads(result.cause)
    assert cause["reason"] == "QueueTimeout" and "WaitingForQuota" not in cause["reason"]
    assert 600 <= since_submission(result, "noticedAt") <= 601
    assert cause["queuedSeconds"] == round(since_submission(result, "noticedAt"))


@pytest.mark.parametrize(("deadline_from", "status"), [("submission", "FAILED"), ("admission", "SUCCEEDED")])
def test_a_deadline_from_admission_leaves_the_queue_out_of_the_run_budget(deadline_from, status):
    # Queued 600 s, then 30 s to start and 1200 s to run: 1830 s from submission, 1230 s from admission.
    execution_input = queued_input(timeoutSeconds=1500, deadlineFrom=deadline_from)
    with LocalJobsync("success", RUN, env=QUIET, queue="queued", queue_timings={"queued_s": 600}) as local:
        result = local.run(execution_input, name=f"from-{deadline_from}")

    assert result.status == status, result.cause
    if status == "FAILED":
        assert result.error == "JobTimedOut"
        assert since_submission(result, "noticedAt") == 1500
    else:
        assert result.output["queuedSeconds"] == 600


@pytest.mark.parametrize(("timeout", "status"), [(1600, "SUCCEEDED"), (1400, "FAILED")])
def test_a_deadline_from_admission_waits_with_a_preempted_job_and_counts_only_its_admitted_time(timeout, status):
    # Admitted at once, preempted at 300 s (its pods deleted), requeued 3000 s, readmitted at 3300 s: then 30 s to
    # start and 1200 s to run again. Admitted 300 + 1230 = 1530 s in all: within 1600 s, past 1400 s. The requeued
    # wait is the queue's, never the run's: a 1600 s budget from the first admission would end it at 1600 s, queued.
    timings = {"preempt_at": 300, "requeue_s": 3000}
    execution_input = queued_input(timeoutSeconds=timeout, deadlineFrom="admission")
    with LocalJobsync("success", RUN, env=QUIET, queue="preempted", queue_timings=timings) as local:
        result = local.run(execution_input, name=f"preempted-from-admission-{timeout}")

    phases = seen(result)
    assert ("PENDING", "Evicted") in phases
    assert not any(phase in ("FAILED", "TIMED_OUT") for phase, _ in phases[: phases.index(("PENDING", "Evicted")) + 1])
    assert result.status == status, result.cause
    if status == "SUCCEEDED":
        assert result.output["queuedSeconds"] == 3000
        assert result.output["queue"]["evictions"] == [{"reason": "Preempted", "underlyingCause": "", "count": 1}]
    else:
        cause = json.loads(result.cause)
        assert result.error == "JobTimedOut" and cause["reason"] == "DeadlineExceeded"
        # Its readmission at 3300 s (one 30 s step late at most) with 1400 - 300 s of its budget left.
        assert 3300 + 1100 <= since_submission(result, "noticedAt") <= 3300 + 1100 + 30
