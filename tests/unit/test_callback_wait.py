"""Callback mode's waits while a job starts: a look only when something no event announces could be decided."""

from __future__ import annotations

import pytest

from jobsync import clock
from jobsync.core.wait import PollState, Starting, callback_wait, next_wait, with_next_wait
from jobsync.evaluation.phase import Phase
from jobsync.run import manifests
from jobsync.run.inputs import LoopState
from jobsync.run.poll import poll
from jobsync.settings import Settings
from tests.support.clock import FakeClock
from tests.support.cluster import RecordingCluster

CALLBACK = Settings.from_env({"JOBSYNC_COMPLETION_MODE": "callback"})
DAY = 86_400


def at(now: float, phase: Phase = Phase.PENDING, deadline: float = DAY, since: float = 0.0) -> PollState:
    """A poll ``now`` seconds after a submission at 0."""
    return PollState(phase, now, 0.0, since, deadline, polls=3)


def test_before_the_pods_are_read_the_first_look_is_the_first_that_reads_them():
    # Submit's wait: nothing is decided before diagnose_after_seconds (120 s), the operator timeout is later.
    assert callback_wait(at(0), CALLBACK, Starting(reconciled=False)) == 121
    assert callback_wait(at(0), Settings(completion_mode="callback", diagnose_after_seconds=300)) == 301


def test_no_stuck_pod_waits_the_shortest_grace():
    assert callback_wait(at(200), CALLBACK) == 120  # image_error_grace_seconds, the shortest
    # The poll policy's PENDING wait is shorter (60 s): what callback mode used to wait.
    assert next_wait(at(200), CALLBACK.wait_bounds) == 60
    longer = Settings(completion_mode="callback", image_error_grace_seconds=300)
    assert callback_wait(at(200), longer) == 300  # now the shortest: unschedulable_grace_seconds is 600
    assert callback_wait(at(200), Settings(completion_mode="callback", capacity_grace_seconds=90)) == 90


def test_a_stuck_pod_is_looked_at_a_second_after_its_grace_ends():
    assert callback_wait(at(200), CALLBACK, Starting(stuck_until=250.0)) == 51
    assert callback_wait(at(200), CALLBACK, Starting(stuck_until=249.5)) == 51  # whole seconds, never early


def test_no_look_comes_just_before_a_grace_ends():
    # The pace would look 10 s before the grace ends, and the next look could come only 30 s later: look at its end.
    assert callback_wait(at(200), CALLBACK, Starting(stuck_until=329.0)) == 130
    assert callback_wait(at(200), CALLBACK, Starting(stuck_until=359.0)) == 120  # 40 s before: the pace holds


def test_a_long_grace_does_not_stretch_the_pace():
    # Waiting 6 h for capacity: the pod can still turn NeverSchedulable, or fail its pull once placed.
    assert callback_wait(at(200), CALLBACK, Starting(stuck_until=200 + 6 * 3600.0)) == 120


def test_a_job_without_status_is_looked_at_when_the_operator_timeout_ends():
    assert callback_wait(at(241), CALLBACK, Starting(reconciled=False)) == 60  # 301 s after submission
    # A job the API does not show yet: the look that may end it NOT_FOUND, 60 s after submission.
    assert callback_wait(at(10), CALLBACK, Starting(visible=False, reconciled=False)) == 50


def test_the_bounds_hold():
    # Never below MinWaitSeconds, even when the grace ends sooner.
    assert callback_wait(at(200), CALLBACK, Starting(stuck_until=205.0)) == CALLBACK.min_wait_seconds
    # Never past the deadline.
    assert callback_wait(at(200, deadline=220), CALLBACK) == 20
    assert callback_wait(at(0, deadline=50), CALLBACK, Starting(reconciled=False)) == 50
    # Never more than SafetyPollSeconds.
    quick = Settings(completion_mode="callback", safety_poll_seconds=60)
    assert callback_wait(at(200), quick) == 60
    # Queued for hours: the policy's PENDING wait, once longer, keeps poll mode's pace.
    assert callback_wait(at(3 * 3600), CALLBACK) == next_wait(at(3 * 3600), CALLBACK.wait_bounds) == 420


def test_a_running_job_waits_the_safety_interval():
    assert callback_wait(at(200, Phase.RUNNING), CALLBACK) == 3600
    assert callback_wait(at(200, Phase.SUSPENDED), CALLBACK, Starting(stuck_until=250.0)) == 3600
    assert callback_wait(at(DAY - 100, Phase.RUNNING), CALLBACK) == 100


def loop_state(phase: str = "PENDING", **extra) -> LoopState:
    return LoopState.model_validate(
        {
            "job": {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "namespace": "ml-training",
                "name": "t",
                "uid": "uid-1",
            },
            "execution": EXECUTION,
            "submittedAt": clock.isoformat(T0),
            "deadline": clock.isoformat(T0 + DAY),
            "phase": phase,
            "phaseSince": clock.isoformat(T0),
            **extra,
        }
    )


EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:run-1"
T0 = clock.parse("2026-01-01T00:00:00Z") or 0.0


def test_the_pace_gets_the_jobs_jitter_and_a_grace_end_none():
    waits = {with_next_wait(loop_state(polls=p), T0 + 200, CALLBACK).waitSeconds for p in range(30)}
    assert len(waits) > 1 and min(waits) >= 120 and max(waits) <= 132
    assert with_next_wait(loop_state(), T0 + 200, CALLBACK, jitter=False).waitSeconds == 120
    # A later look at a grace's end only delays the verdict.
    due = Starting(stuck_until=T0 + 250)
    at_grace_end = {with_next_wait(loop_state(polls=p), T0 + 200, CALLBACK, starting=due).waitSeconds for p in range(9)}
    assert at_grace_end == {51}


def job(status: dict | None) -> dict:
    labels = {manifests.EXECUTION_LABEL: manifests.execution_label(EXECUTION)}
    obj = {"metadata": {"name": "t", "namespace": "ml-training", "uid": "uid-1", "labels": labels}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", **obj, **({"status": status} if status else {})}


CREATED = {"conditions": [{"type": "Created", "status": "True", "reason": "PyTorchJobCreated"}]}


def pod(waiting: dict | None = None, unschedulable: bool = False) -> dict:
    status: dict = {"startTime": clock.isoformat(T0 + 5)}
    if unschedulable:
        status = {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity",
                }
            ]
        }
    if waiting:
        status["containerStatuses"] = [{"name": "pytorch", "state": {"waiting": waiting}}]
    labels = {"training.kubeflow.org/job-name": "t", "training.kubeflow.org/replica-type": "master"}
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "t", "uid": "uid-1", "controller": True}
    meta = {"name": "t-master-0", "uid": "p1", "labels": labels, "ownerReferences": [owner]}  # the job's own
    return {"metadata": meta, "status": status}


@pytest.fixture
def now(monkeypatch):
    fake = FakeClock(T0)
    monkeypatch.setattr(clock, "now", fake)
    return fake


def test_an_image_that_can_never_be_pulled_is_looked_at_when_its_grace_ends(now):
    now.advance(121)
    # An image that can never be pulled, its pod started 5 s after the submission: failed at 125 s.
    bad = {"reason": "ErrImagePull", "message": 'failed to pull and unpack image "x:nope": not found'}
    cluster = RecordingCluster({"t": job(CREATED)}, pods=[pod(bad)])
    state = poll(loop_state(), cluster, CALLBACK)
    assert state.phase == "PENDING" and state.waitSeconds == 30  # at 126 s, but never below MinWaitSeconds
    now.advance(state.waitSeconds)
    assert poll(state, cluster, CALLBACK).phase == "FAILED"


def test_an_unschedulable_pod_is_looked_at_the_pace_then_at_its_graces_end(now):
    now.advance(121)
    # Unschedulable since this look (no autoscaler spoke): its 600 s grace is further than the pace.
    cluster = RecordingCluster({"t": job(CREATED)}, pods=[pod(unschedulable=True)])
    first = poll(loop_state(), cluster, CALLBACK)
    assert first.reason == "Unschedulable" and 120 <= first.waitSeconds <= 132
    # 550 s on: the next look lands a second after its grace ends, and fails it.
    now.advance(550)
    later = poll(first, cluster, CALLBACK)
    assert later.phase == "PENDING" and later.waitSeconds == 51
    now.advance(later.waitSeconds)
    assert poll(later, cluster, CALLBACK).phase == "FAILED"


def test_the_status_step_looks_again_when_the_operator_timeout_ends(now):
    now.advance(241)
    cluster = RecordingCluster({"t": job(None)})
    state = poll(loop_state(), cluster, CALLBACK)
    assert state.reason == "NoStatus" and state.waitSeconds == 60
    now.advance(state.waitSeconds)
    assert poll(state, cluster, CALLBACK).reason == "OperatorNotReconciling"
