"""RunJobs refuses a bad input before any child starts: InvalidInput naming the field and what was given.

The fields, in its first state; a job list given by ``jobsFrom``, once read (the jobs function's prepare
step). One local run (a module-scoped harness) for every case, through the real parent state machine.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from harness.local import RUNS_BUCKET, TEMPLATE_BUCKET, TEMPLATE_PREFIX, LocalJobsync
from tests.integration.test_run_jobs_limits import MAX_JOBS, job
from tests.support.lambdas import QUIET

VALID_JOB = job(0)
# A RunJob input of a few bytes (a template), so that more than MAX_JOBS of them fit an execution's input.
SMALL_JOB = {"jobTemplate": f"s3://{TEMPLATE_BUCKET}/{TEMPLATE_PREFIX}pytorch-mnist.yaml"}
INPUTS = f"s3://{RUNS_BUCKET}/inputs"

BAD_INPUTS = [
    pytest.param({"job": VALID_JOB}, ["jobs:", "got nothing", "unknown field(s): job"], id="job-not-jobs"),
    pytest.param({"jobs": "a-job"}, ["jobs:", "got string"], id="jobs-a-string"),
    pytest.param({"jobs": VALID_JOB}, ["jobs:", "got object"], id="jobs-an-object"),
    pytest.param([VALID_JOB], ["must be a JSON object, got array"], id="input-an-array"),
    pytest.param({"jobs": []}, ["jobs:", "got an array of 0"], id="jobs-empty"),
    pytest.param({"jobs": [SMALL_JOB] * (MAX_JOBS + 1)}, ["jobs:", f"got an array of {MAX_JOBS + 1}"], id="too-many"),
    pytest.param({"jobs": [VALID_JOB], "failFast": "true"}, ["failFast:", 'got string "true"'], id="failfast-text"),
    pytest.param({"jobs": [VALID_JOB], "maxConcurrency": -1}, ["maxConcurrency:", "got number -1"], id="mc-negative"),
    pytest.param({"jobs": [VALID_JOB], "maxConcurrency": 1.5}, ["maxConcurrency:", "got number 1.5"], id="mc-fraction"),
    pytest.param({"jobs": [VALID_JOB], "maxConcurrency": "2"}, ["maxConcurrency:", 'got string "2"'], id="mc-text"),
    pytest.param(
        {"jobs": [VALID_JOB], "maxConcurrency": 10_001}, ["maxConcurrency:", "got number 10001"], id="mc-over-10000"
    ),
    pytest.param(
        {"jobs": [VALID_JOB], "jobsFrom": f"{INPUTS}/jobs.json"}, ["jobs, jobsFrom: give one of them"], id="both"
    ),
    pytest.param({"jobsFrom": 3}, ["jobsFrom: an s3:// URI", "got number 3"], id="jobsfrom-a-number"),
    pytest.param({"jobsFrom": "jobs.json"}, ["jobsFrom: an s3:// URI", 'got string "jobs.json"'], id="jobsfrom-no-uri"),
]

# (what the caller put under inputs/, or None for nothing; the jobsFrom it names; what the refusal names)
BAD_LISTS = [
    pytest.param(
        None, "s3://elsewhere/inputs/jobs.json", ["jobsFrom:", f"under s3://{RUNS_BUCKET}/inputs/"], id="bucket"
    ),
    pytest.param(None, f"s3://{RUNS_BUCKET}/runs/jobs.json", ["jobsFrom:", "inputs/", "runs/jobs.json"], id="prefix"),
    pytest.param(None, f"{INPUTS}/missing.json", ["jobsFrom:", "missing.json does not exist"], id="missing"),
    pytest.param(b"{oops", f"{INPUTS}/oops.json", ["jobsFrom:", "oops.json is not JSON"], id="not-json"),
    pytest.param({"jobs": [VALID_JOB]}, f"{INPUTS}/object.json", ["object.json: an array", "got dict"], id="object"),
    pytest.param([], f"{INPUTS}/empty.json", ["empty.json: an array", "got an array of 0"], id="empty"),
    pytest.param(
        [SMALL_JOB] * (MAX_JOBS + 1), f"{INPUTS}/many.json", [f"got an array of {MAX_JOBS + 1}"], id="too-many"
    ),
    pytest.param([VALID_JOB, "a-job"], f"{INPUTS}/mixed.json", ["job 1 must be a JSON object", "string"], id="item"),
]


@pytest.fixture(scope="module")
def local():
    with LocalJobsync(env=QUIET, execution_events=True) as harness:
        yield harness


def refused(local: LocalJobsync, execution_input: Any, named: list[str]) -> None:
    """The run fails with InvalidInput naming each of ``named``, and nothing was started or submitted."""
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


@pytest.mark.parametrize(("execution_input", "named"), BAD_INPUTS)
def test_a_bad_input_is_refused_by_name_and_starts_nothing(local, execution_input, named):
    refused(local, execution_input, named)


@pytest.mark.parametrize(("content", "jobs_from", "named"), BAD_LISTS)
def test_a_job_list_a_run_cannot_take_is_refused_by_name_and_starts_nothing(local, content, jobs_from, named):
    if content is not None:
        body = content if isinstance(content, bytes) else json.dumps(content).encode()
        key = jobs_from.removeprefix(f"s3://{RUNS_BUCKET}/")
        boto3.client("s3").put_object(Bucket=RUNS_BUCKET, Key=key, Body=body)
    refused(local, {"jobsFrom": jobs_from}, named)
