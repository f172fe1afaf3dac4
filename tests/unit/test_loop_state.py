"""The loop state's timestamps are checked when the event is parsed, naming the field.

A bad one used to surface as "not an RFC 3339 timestamp: 'x'" (no field), and
for ``deadline`` only after the status Lambda had already read the job.
"""

from __future__ import annotations

import pytest

from jobsync.errors import InvalidInput
from jobsync.run.inputs import LoopState, parse
from jobsync.run.poll import poll
from jobsync.settings import Settings
from tests.support.cluster import RecordingCluster

SETTINGS = Settings()
NAME = "nightly-1ef088ca"
REF = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": NAME}


def loop_state(**overrides):
    state = {
        "job": dict(REF),
        "execution": "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:nightly",
        "submittedAt": "2026-11-29T10:00:00Z",
        "deadline": "2026-11-30T10:00:00Z",
        "phase": "RUNNING",
        "phaseSince": "2026-11-29T10:02:00Z",
    }
    return {**state, **overrides}


@pytest.mark.parametrize("field", ["submittedAt", "deadline", "phaseSince", "startedAt", "stuckSince"])
@pytest.mark.parametrize("value", ["yesterday", "2026-11-29 25:00:00Z", "2026-11-29T10:00:00"])
def test_a_bad_timestamp_is_refused_naming_its_field_before_any_request(field, value):
    cluster = RecordingCluster({NAME: {"metadata": {"name": NAME}, "status": {}}})
    with pytest.raises(InvalidInput, match=rf"{field}: not an RFC 3339 timestamp"):
        poll(parse(LoopState, loop_state(**{field: value})), cluster, SETTINGS)
    assert cluster.calls == []


def test_timestamps_with_an_offset_are_accepted():
    state = parse(LoopState, loop_state(submittedAt="2026-11-29T11:00:00+01:00", deadline="2026-11-30T10:00:00.5Z"))
    # Typed as aware datetimes, written back as they came: the payload is the JSON it was.
    assert state.payload()["submittedAt"].endswith("+01:00")
    assert (state.payload()["submittedAt"], state.payload()["deadline"]) == (
        "2026-11-29T11:00:00+01:00",
        "2026-11-30T10:00:00.5Z",
    )
