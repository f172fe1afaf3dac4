"""RunJobs refuses a bad input in its first state: InvalidInput naming the field and what was given, no child started.

One local run (a module-scoped harness) for every case, through the real parent state machine.
"""

from __future__ import annotations

import pytest

from harness.local import LocalJobsync
from tests.integration.test_run_jobs_limits import MAX_JOBS, job
from tests.support.lambdas import QUIET

VALID_JOB = job(0)

BAD_INPUTS = [
    pytest.param({"job": VALID_JOB}, ["jobs:", "got nothing", "unknown field(s): job"], id="job-not-jobs"),
    pytest.param({"jobs": "a-job"}, ["jobs:", "got string"], id="jobs-a-string"),
    pytest.param({"jobs": VALID_JOB}, ["jobs:", "got object"], id="jobs-an-object"),
    pytest.param([VALID_JOB], ["must be a JSON object, got array"], id="input-an-array"),
    pytest.param({"jobs": []}, ["jobs:", "got an array of 0"], id="jobs-empty"),
    pytest.param({"jobs": [VALID_JOB] * (MAX_JOBS + 1)}, ["jobs:", f"got an array of {MAX_JOBS + 1}"], id="too-many"),
    pytest.param({"jobs": [VALID_JOB], "failFast": "true"}, ["failFast:", 'got string "true"'], id="failfast-text"),
    pytest.param({"jobs": [VALID_JOB], "maxConcurrency": -1}, ["maxConcurrency:", "got number -1"], id="mc-negative"),
    pytest.param({"jobs": [VALID_JOB], "maxConcurrency": 1.5}, ["maxConcurrency:", "got number 1.5"], id="mc-fraction"),
    pytest.param({"jobs": [VALID_JOB], "maxConcurrency": "2"}, ["maxConcurrency:", 'got string "2"'], id="mc-text"),
]


@pytest.fixture(scope="module")
def local():
    with LocalJobsync(env=QUIET, execution_events=True) as harness:
        yield harness


@pytest.mark.parametrize(("execution_input", "named"), BAD_INPUTS)
def test_a_bad_input_is_refused_by_name_and_starts_nothing(local, execution_input, named):
    assert local.sfn
    submits = sum(call.function_name == "jobsync-submit" for call in local.sfn.invocations)
    arn = local.start_jobs(execution_input)
    description = local.sfn.wait(arn, timeout_s=60)
    assert (description["status"], description.get("error")) == ("FAILED", "InvalidInput")
    cause = description["cause"]
    assert cause.startswith("invalid input: ") and all(part in cause for part in named), cause
    assert len(cause) < 1000  # what was given is named, not echoed whole
    assert local.children(arn) == []
    assert sum(call.function_name == "jobsync-submit" for call in local.sfn.invocations) == submits
