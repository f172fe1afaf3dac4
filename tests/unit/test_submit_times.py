"""A job is submitted when jobsync asks for it, not when the API's answer and the learned hint come back.

Its creation (and, under Kueue, its Workload's) must not predate ``submittedAt``: a queue's wait is counted
from the Workload's creation and read against the submission, and the run's deadline counts from it too.
"""

from __future__ import annotations

import json
from typing import Any

from jobsync import clock
from jobsync.aws.hints import HintStore
from jobsync.core.state import instant
from jobsync.run.inputs import SubmitRequest
from jobsync.run.submit import submit
from jobsync.settings import Settings
from tests.support.cluster import RecordingCluster
from tests.support.lambdas import load_event

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:slow-answers"


class SlowAPIServer(RecordingCluster):
    """Stamps the job's creation a second after the request, and answers a second after that."""

    def __init__(self, fake_clock: Any) -> None:
        super().__init__()
        self.clock = fake_clock

    def create(self, spec, obj):
        self.clock.advance(1)
        obj = {**obj, "metadata": {**obj["metadata"], "creationTimestamp": clock.isoformat(self.clock.now)}}
        created = super().create(spec, obj)
        self.clock.advance(1)
        return created


class SlowTable:
    """A hint table that answers after 5 s with a family that has run three times."""

    def __init__(self, fake_clock: Any) -> None:
        self.clock = fake_clock

    def get_item(self, Key: dict[str, str]) -> dict[str, Any]:
        self.clock.advance(5)
        return {"Item": {"durations": [600, 700, 800]}}


def test_submitted_at_is_when_the_job_was_asked_for(fake_clock):
    asked = fake_clock.now
    job = json.loads(json.dumps(load_event("run-job-input.json")["job"]))
    cluster = SlowAPIServer(fake_clock)

    state = submit(
        SubmitRequest(execution=EXECUTION, job=job, timeoutSeconds=3600),
        cluster,
        Settings(),
        lambda uri: "",
        HintStore(SlowTable(fake_clock)),
    )

    (created,) = cluster.objects.values()
    assert state.hintSource == "learned"  # the slow lookup was made: 7 s passed after the request
    assert state.submittedAt == instant(asked)
    assert state.submittedAt.timestamp() <= clock.parse(created["metadata"]["creationTimestamp"])
    assert state.deadline == instant(asked + 3600)
