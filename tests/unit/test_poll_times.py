"""The status step's times: the job's own from its status, the poll's only when the status says nothing."""

from __future__ import annotations

from typing import Any

from jobsync.evaluation import evaluate
from jobsync.evaluation.times import job_times
from jobsync.run import manifests
from jobsync.run.inputs import LoopState
from jobsync.run.poll import poll
from jobsync.settings import Settings
from tests.support.cluster import RecordingCluster

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:nightly"
NAME = manifests.job_name(EXECUTION, None)
REF = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": NAME}


def condition(ctype: str, status: str = "True", at: str | None = None) -> dict[str, Any]:
    found = {"type": ctype, "status": status, "reason": f"PyTorchJob{ctype}"}
    return {**found, "lastTransitionTime": at} if at else found


def pytorchjob(status: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": NAME, "namespace": "ml-training", "uid": "uid-1", "labels": manifests.job_labels(EXECUTION)}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta, "status": status}


def state(**overrides: Any) -> LoopState:
    base = {
        "job": {**REF, "uid": "uid-1"},
        "execution": EXECUTION,
        "submittedAt": "2026-11-29T10:00:00Z",
        "deadline": "2026-11-30T10:00:00Z",
        "phase": "PENDING",
        "phaseSince": "2026-11-29T10:00:00Z",
    }
    return LoopState.model_validate({**base, **overrides})


def test_kubeflow_start_is_the_running_condition_not_the_operators_acknowledgement():
    job = pytorchjob(
        {
            "startTime": "2026-11-29T10:00:05Z",  # acknowledged: the pods were still pending
            "conditions": [
                condition("Created", at="2026-11-29T10:00:05Z"),
                condition("Running", "False", at="2026-11-29T10:01:30Z"),  # flipped at the end, time kept
                condition("Succeeded", at="2026-11-29T11:01:30Z"),
            ],
            "completionTime": "2026-11-29T11:01:30Z",
        }
    )
    times = job_times(job, evaluate(job))
    assert (times.started, times.finished) == ("2026-11-29T10:01:30Z", "2026-11-29T11:01:30Z")


def test_a_false_running_condition_is_no_start_while_the_job_has_not_ended():
    job = pytorchjob({"conditions": [condition("Created"), condition("Running", "False", at="2026-11-29T10:01:30Z")]})
    assert job_times(job, evaluate(job)).started is None


def test_a_status_without_times_falls_back_to_the_polls_and_says_so(pinned_clock):
    pinned_clock("2026-11-29T10:05:00Z")
    running = pytorchjob({"conditions": [condition("Created"), condition("Running")]})
    first = poll(state(), RecordingCluster({NAME: running}), Settings())
    assert (first.payload()["startedAt"], first.timesFrom) == ("2026-11-29T10:05:00Z", {"startedAt": "polls"})

    pinned_clock("2026-11-29T11:00:00Z")
    done = pytorchjob({"conditions": [condition("Created"), condition("Running", "False"), condition("Succeeded")]})
    last = poll(first, RecordingCluster({NAME: done}), Settings()).payload()
    assert last["finishedAt"] == last["noticedAt"] == "2026-11-29T11:00:00Z"
    assert last["startedAt"] == "2026-11-29T10:05:00Z"
    assert last["timesFrom"] == {"startedAt": "polls", "finishedAt": "polls"}


def test_the_jobs_start_replaces_a_poll_time_and_is_kept_through_a_restart(pinned_clock):
    pinned_clock("2026-11-29T10:05:00Z")
    earlier = state(phase="RUNNING", startedAt="2026-11-29T10:04:00Z", timesFrom={"startedAt": "polls"})
    job = pytorchjob({"conditions": [condition("Created"), condition("Running", at="2026-11-29T10:01:30Z")]})
    seen = poll(earlier, RecordingCluster({NAME: job}), Settings())
    assert (seen.payload()["startedAt"], seen.timesFrom) == ("2026-11-29T10:01:30Z", {"startedAt": "job"})

    pinned_clock("2026-11-29T10:50:00Z")  # restarted: the operator re-dates its Running condition
    again = pytorchjob({"conditions": [condition("Created"), condition("Running", at="2026-11-29T10:40:00Z")]})
    assert poll(seen, RecordingCluster({NAME: again}), Settings()).payload()["startedAt"] == "2026-11-29T10:01:30Z"
