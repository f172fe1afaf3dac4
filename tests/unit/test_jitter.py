"""Jobs submitted together do not poll in lockstep: each job's waits get a reproducible jitter."""

from __future__ import annotations

import math

from jobsync.core.wait import JITTER_FRACTION, with_next_wait
from jobsync.run.inputs import LoopState
from jobsync.settings import Settings

SETTINGS = Settings.from_env({"JOBSYNC_NAMESPACE": "ml-training"})
SUBMITTED = 1767225600.0  # 2026-01-01T00:00:00Z


def state(name: str, uid: str | None = None, deadline: str = "2026-01-02T00:00:00Z", polls: int = 3) -> LoopState:
    return LoopState(
        job={
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "namespace": "ml-training",
            "name": name,
            "uid": uid,
        },
        execution="arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:run",
        submittedAt="2026-01-01T00:00:00Z",
        deadline=deadline,
        phaseSince="2026-01-01T00:01:00Z",
        phase="RUNNING",
        polls=polls,
    )


def unjittered(s: LoopState, now: float) -> int:
    return with_next_wait(s, now, SETTINGS, jitter=False).waitSeconds


def test_fifty_jobs_in_the_same_state_do_not_all_wait_the_same():
    now = SUBMITTED + 3600
    waits = [with_next_wait(state(f"job-{i}", f"uid-{i}"), now, SETTINGS).waitSeconds for i in range(50)]
    assert len(set(waits)) > 1
    base = unjittered(state("job-0"), now)
    assert all(base <= w <= base + math.ceil(JITTER_FRACTION * base) for w in waits)


def test_the_same_job_gets_the_same_wait_twice_and_another_at_its_next_poll():
    now = SUBMITTED + 3600
    first = with_next_wait(state("job-1", "uid-1"), now, SETTINGS).waitSeconds
    assert with_next_wait(state("job-1", "uid-1"), now, SETTINGS).waitSeconds == first
    later = {with_next_wait(state("job-1", "uid-1", polls=p), now, SETTINGS).waitSeconds for p in range(20)}
    assert len(later) > 1  # the poll number is in the hash: a job does not keep one offset


def test_jitter_never_waits_past_the_deadline_nor_below_one_second():
    for i in range(50):
        near = state(f"job-{i}", f"uid-{i}", deadline="2026-01-01T01:00:10Z")
        now = SUBMITTED + 3600
        wait = with_next_wait(near, now, SETTINGS).waitSeconds
        assert 1 <= wait <= max(unjittered(near, now), 10)
    ended = state("job-x", "uid-x", deadline="2026-01-01T01:00:00Z")
    assert with_next_wait(ended, SUBMITTED + 3600, SETTINGS).waitSeconds == unjittered(ended, SUBMITTED + 3600)
