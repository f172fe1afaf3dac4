"""expectedDurationSeconds is bounded: an absurd hint is refused by name, before any job is created."""

from __future__ import annotations

import pytest

from jobsync.core.wait import with_next_wait
from jobsync.errors import InvalidInput
from jobsync.run.inputs import MAX_EXPECTED_DURATION_SECONDS, LoopState, SubmitRequest, parse
from jobsync.settings import Settings

ARN = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:x"
JOB = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"}, "spec": {}}


@pytest.mark.parametrize("value", [10**400, MAX_EXPECTED_DURATION_SECONDS + 1])
def test_an_absurd_expected_duration_is_refused_naming_the_field(value):
    with pytest.raises(InvalidInput, match="expectedDurationSeconds: Input should be less than or equal to"):
        parse(SubmitRequest, {"execution": ARN, "job": JOB, "expectedDurationSeconds": value})


def test_the_loop_state_bounds_it_too():
    state = {
        "job": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": "x"},
        "submittedAt": "2026-01-01T00:00:00Z",
        "deadline": "2026-01-02T00:00:00Z",
        "phaseSince": "2026-01-01T00:00:00Z",
        "phase": "RUNNING",
        "expectedDurationSeconds": 10**400,
    }
    with pytest.raises(InvalidInput, match="expectedDurationSeconds"):
        parse(LoopState, state)


def test_the_largest_expected_duration_allowed_gives_a_wait():
    state = LoopState(
        job={"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": "x"},
        execution="arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:run",
        submittedAt="2026-01-01T00:00:00Z",
        deadline="2026-01-31T00:00:00Z",
        phaseSince="2026-01-01T00:10:00Z",
        phase="RUNNING",
        expectedDurationSeconds=MAX_EXPECTED_DURATION_SECONDS,
    )
    now = 1767225600.0 + 3600  # 2026-01-01T01:00:00Z
    settings = Settings.from_env({"JOBSYNC_NAMESPACE": "ml-training"})
    assert 1 <= with_next_wait(state, now, settings).waitSeconds <= settings.wait_bounds.max_seconds
