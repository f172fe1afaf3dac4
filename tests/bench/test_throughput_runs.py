"""bench/throughput.py past one RunJobs run: its runs fit what RunJobs takes, and several runs add up.

The benchmark gives each run at most MAX_JOBS_PER_RUN jobs inline (what fits an execution's 256 KB input with
room), so it starts several runs together past that; RunJobs itself takes up to MAX_JOBS. The 41-job
measurement itself takes longer than a test should (about a minute and a half here); the split is checked
on ``batches`` (tests/bench/test_throughput_figures.py) and the adding up on two runs of one job each.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from bench.throughput import MAX_JOBS_PER_RUN, PAYLOAD_LIMIT, job_plan, measure, run_jobs_input
from harness.local import LocalJobsync
from jobsync.core.runs import MAX_JOBS
from tests.support.lambdas import QUIET

ROOT = Path(__file__).resolve().parents[2]
# A child that ends at once: what is measured here is RunJobs' own CheckInput, not the jobs.
DONE_CHILD = {
    "QueryLanguage": "JSONata",
    "StartAt": "Done",
    "States": {"Done": {"Type": "Succeed", "Output": {"phase": "SUCCEEDED"}}},
}


def test_the_benchmarks_runs_fit_what_run_jobs_takes():
    # Its largest run's input fits StartExecution's 256 KB; RunJobs takes that many, and refuses past MAX_JOBS.
    assert MAX_JOBS_PER_RUN <= MAX_JOBS
    assert len(json.dumps(run_jobs_input(MAX_JOBS_PER_RUN)).encode()) <= PAYLOAD_LIMIT
    with LocalJobsync(env=QUIET) as local:
        child = local.add_state_machine(json.dumps(DONE_CHILD), "done")
        definition = (ROOT / "statemachine" / "run_jobs.asl.json").read_text()
        parent = local.add_state_machine(
            definition, "run-jobs-done", {**local.substitutions(), "RunJobStateMachineArn": child}
        )
        with contextlib.redirect_stdout(io.StringIO()):
            most = local.run_nested(parent, {"jobs": [{"n": i} for i in range(MAX_JOBS_PER_RUN)]})
            one_more = local.run_nested(parent, {"jobs": [{"n": i} for i in range(MAX_JOBS + 1)]})
        assert most.status == "SUCCEEDED", (most.error, (most.cause or "")[:300])
        assert len(local.children(most.execution_arn)) == MAX_JOBS_PER_RUN
        assert (one_more.status, one_more.error) == ("FAILED", "InvalidInput")
        assert f"jobs: an array of 1 to {MAX_JOBS}" in (one_more.cause or "")
        assert local.children(one_more.execution_arn) == []


@pytest.fixture(scope="module")
def split() -> tuple[dict[str, Any], dict[str, Any]]:
    raw: dict[str, Any] = {}
    return measure("poll", 2, timeout_s=120, raw=raw, per_run=1), raw


def test_two_runs_started_together_are_counted_together(split):
    row, raw = split
    assert (row["runs"], row["status"], row["run_status"]) == (2, "SUCCEEDED", {"SUCCEEDED": 2})
    assert row["children"] == len(raw["children"]) == 2 and len(raw["parents"]) == 2
    assert row["child_status"] == {"SUCCEEDED": 2} and row["phases"] == {"SUCCEEDED": 2}
    # Each run ran its own job: one child each, under a name of its own.
    names = [
        json.loads(h[0]["executionStartedEventDetails"]["input"])["job"]["metadata"]["name"] for h in raw["children"]
    ]
    assert sorted(names) == ["throughput-0", "throughput-1"]
    entered = [sum("stateEnteredEventDetails" in e for e in h) for h in raw["parents"]]
    assert row["transitions"]["parent"] == sum(entered) and entered[0] == entered[1] > 0
    assert row["history_events"] == sum(len(h) for h in [*raw["parents"], *raw["children"]])
    assert row["lambda_by_function"]["submit"] == row["lambda_by_function"]["cleanup"] == 2


def test_the_runs_ran_side_by_side_and_their_bytes_are_the_largest_runs(split):
    row, raw = split
    starts = [h[0]["timestamp"].timestamp() - raw["origin"] for h in raw["parents"]]
    assert max(starts) < 1  # started together, not one after the other
    longest = max(t["pending_s"] + t["run_s"] for _, t in (job_plan(0), job_plan(1)))
    assert longest <= row["virtual_s"] <= longest + 600  # not the sum of the two jobs' times
    # One job a run: the largest run's input holds one job, not both.
    assert row["input_bytes"] == len(json.dumps(run_jobs_input(1, first=1)).encode())
    assert row["input_bytes"] < len(json.dumps(run_jobs_input(2)).encode()) and row["output_bytes"] > 0
