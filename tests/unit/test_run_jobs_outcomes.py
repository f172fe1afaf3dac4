"""RunJobs' outcomes from its Map Run's records (jobsync.core.runs): each rule, on records as ResultWriter writes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobsync.core import runs
from jobsync.errors import InvalidInput

WHERE = {"bucket": "runs-bucket", "outcomes": "runs/r/outcomes.json", "manifest": "runs/r/m/manifest.json"}


def outcome(index: int, phase: str = "SUCCEEDED", **fields: Any) -> dict[str, Any]:
    """What RunJobs' item processor returns for a job (RunJob's Output, or its Catch's)."""
    return {
        "index": index,
        "executionArn": f"arn:aws:states:us-east-1:123456789012:execution:run-job:{index}",
        "status": "SUCCEEDED" if phase == "SUCCEEDED" else "FAILED",
        "job": {"name": f"j{index}-abcd1234"},
        "phase": phase,
        "reason": "PyTorchJobSucceeded" if phase == "SUCCEEDED" else "PyTorchJobFailed",
        "error": None if phase == "SUCCEEDED" else "JobFailed",
        "result": None,
        **fields,
    }


def record(index: int, status: str, stop: str = "2025-01-01T01:00:00.000Z", **fields: Any) -> dict[str, Any]:
    """A Map Run child's record, as the SUCCEEDED or FAILED file holds it."""
    entry: dict[str, Any] = {
        "ExecutionArn": f"arn:aws:states:us-east-1:123456789012:execution:run-jobs/Jobs:{index}",
        "Input": json.dumps({"index": index, "input": {"job": {}}, "failFast": False}),
        "Status": status,
        "StopDate": stop,
    }
    if status == "SUCCEEDED":
        entry["Output"] = json.dumps(fields.pop("output", outcome(index)))
    return {**entry, **fields}


@pytest.mark.parametrize(
    ("jobs", "named"),
    [
        ("a", 'jobs: an array of 1 to 1000 RunJob inputs is required, got string "a"'),
        ({}, "got dict"),
        ([], "got an array of 0"),
        ([{}] * 1001, "(more jobs: several runs), got an array of 1001"),
        ([{}, 3], "jobs: job 1 must be a JSON object (a RunJob input), got number 3"),
        ([{"x": "y" * runs.MAX_JOB_BYTES}], "jobs: job 0 is 261,128 bytes of JSON, over the 261,120"),
    ],
)
def test_a_list_of_jobs_a_run_cannot_take_is_refused_naming_what_is_wrong(jobs, named):
    with pytest.raises(InvalidInput) as refused:
        runs.check_jobs(jobs, "jobs")
    assert named in str(refused.value)
    assert len(str(refused.value)) < 300  # what was given is named, not echoed whole


def test_a_thousand_objects_are_a_run():
    assert len(runs.check_jobs([{"i": i} for i in range(1000)], "jobs")) == 1000


def test_outcomes_are_in_input_order_and_a_job_with_no_record_never_started():
    records = [record(2, "SUCCEEDED"), record(0, "SUCCEEDED")]
    jobs = runs.outcomes(records, 3)
    assert [j["index"] for j in jobs] == [0, 1, 2]
    assert jobs[0] == outcome(0) and jobs[2] == outcome(2)
    assert (jobs[1]["status"], jobs[1]["phase"], jobs[1]["executionArn"]) == ("NOT_STARTED", "ABORTED", None)


def test_a_child_that_failed_fast_is_read_from_its_error_and_its_jobs_cause():
    cause = json.dumps({"job": {"name": "j1-x"}, "reason": "PyTorchJobFailed", "result": {"loss": 9}})
    [failed] = runs.outcomes([record(0, "FAILED", Error="JobFailed", Cause=cause)], 1)
    assert (failed["phase"], failed["error"], failed["reason"]) == ("FAILED", "JobFailed", "PyTorchJobFailed")
    assert failed["job"] == {"name": "j1-x"} and failed["result"] == {"loss": 9}


@pytest.mark.parametrize(
    ("status", "error", "phase"),
    [
        ("ABORTED", None, "ABORTED"),  # stopped when the Map Run failed, or by hand
        ("TIMED_OUT", None, "TIMED_OUT"),
        ("FAILED", "ExecutionAborted", "ABORTED"),  # failFast on a RunJob execution stopped by hand
        ("FAILED", "ExecutionFailed", "ERROR"),
        ("FAILED", "JobTimedOut", "TIMED_OUT"),
    ],
)
def test_a_child_that_did_not_succeed_says_what_became_of_the_job(status, error, phase):
    fields = {"Error": error, "Cause": "not json"} if error else {}
    [job] = runs.outcomes([record(0, status, **fields)], 1)
    assert (job["status"], job["phase"], job["error"]) == (status, phase, error)


def test_records_that_name_no_job_of_the_run_are_ignored():
    stray = {"Input": json.dumps({"index": 7}), "Status": "SUCCEEDED", "Output": "{}"}
    garbled = {"Input": "{oops", "Status": "SUCCEEDED"}
    assert runs.outcomes([stray, garbled], 2) == [runs._not_started(0), runs._not_started(1)]


def test_every_job_succeeded_the_output_holds_them_the_summary_and_where_they_are():
    jobs = [outcome(i) for i in range(3)]
    ended = runs.verdict(jobs, [record(i, "SUCCEEDED") for i in range(3)], False, WHERE)
    assert ended["failure"] is None
    assert ended["output"] == {"jobs": jobs, "summary": runs.summary(jobs), "results": WHERE}
    assert ended["output"]["summary"] == {
        "total": 3,
        "succeeded": 3,
        "failed": 0,
        "stopped": 0,
        "timedOut": 0,
        "notFound": 0,
        "error": 0,
    }


def test_outcomes_past_the_output_limit_stay_in_s3_and_the_output_fits():
    big = {"notes": "x" * 4000}
    jobs = [outcome(i, result=big) for i in range(100)]
    ended = runs.verdict(jobs, [record(i, "SUCCEEDED") for i in range(100)], False, WHERE)
    assert ended["failure"] is None and "jobs" not in ended["output"]
    assert ended["output"]["summary"]["succeeded"] == 100 and ended["output"]["results"] == WHERE
    assert len(runs.compact(ended["output"]).encode()) < 1000


def test_fail_fast_fails_with_the_first_childs_error_and_cause_by_its_stop_date():
    records = [
        record(0, "FAILED", stop="2025-01-01T02:00:00.000Z", Error="JobStopped", Cause='{"reason":"later"}'),
        record(1, "FAILED", stop="2025-01-01T01:00:00.000Z", Error="JobFailed", Cause='{"reason":"first"}'),
        record(2, "ABORTED"),
    ]
    jobs = runs.outcomes(records, 4)
    ended = runs.verdict(jobs, records, True, WHERE, {"Error": "States.ExceedToleratedFailureThreshold"})
    assert ended["failure"] == {"Error": "JobFailed", "Cause": '{"reason":"first"}'}
    assert [j["phase"] for j in ended["output"]["jobs"]] == ["STOPPED", "FAILED", "ABORTED", "ABORTED"]


def test_fail_fast_without_a_failed_child_fails_with_what_became_of_the_first_job():
    records = [record(0, "SUCCEEDED"), record(1, "ABORTED")]  # a Map Run child stopped by hand
    ended = runs.verdict(runs.outcomes(records, 2), records, True, WHERE)
    assert ended["failure"]["Error"] == "ExecutionAborted" and "job 1 ended ABORTED" in ended["failure"]["Cause"]


def test_a_states_error_from_a_child_is_execution_failed_with_it_leading_the_cause():
    records = [record(0, "FAILED", Error="States.Runtime", Cause="boom")]
    ended = runs.verdict(runs.outcomes(records, 1), records, True, WHERE)
    assert ended["failure"] == {"Error": "ExecutionFailed", "Cause": "States.Runtime: boom"}


def test_a_map_that_failed_before_any_child_is_run_jobs_failed_naming_its_error():
    error = {"Error": "States.ItemReaderFailed", "Cause": "the items could not be read"}
    ended = runs.verdict(runs.outcomes([], 2), [], False, WHERE, error)
    cause = "States.ItemReaderFailed: the items could not be read"
    assert ended["failure"] == {"Error": "RunJobsFailed", "Cause": cause}


def test_jobs_failed_names_every_job_in_full_when_it_fits():
    jobs = [outcome(0), outcome(1, "FAILED")]
    ended = runs.verdict(jobs, [record(0, "SUCCEEDED"), record(1, "SUCCEEDED")], False, WHERE)
    assert ended["failure"]["Error"] == "JobsFailed"
    cause = json.loads(ended["failure"]["Cause"])
    assert cause["summary"]["failed"] == 1
    assert cause["jobs"][1] == {
        "index": 1,
        "executionArn": outcome(1)["executionArn"],
        "job": "j1-abcd1234",
        "phase": "FAILED",
        "reason": "PyTorchJobFailed",
        "error": "JobFailed",
    }


@pytest.mark.parametrize(("total", "listed"), [(300, "every job, briefly"), (1000, "the failures")])
def test_the_jobs_failed_cause_stays_within_32768_characters_however_many_jobs(total, listed):
    jobs = [outcome(i, "FAILED" if i % 3 == 0 else "SUCCEEDED") for i in range(total)]
    cause_text = runs.jobs_failed_cause(jobs, runs.summary(jobs), WHERE)
    assert len(cause_text) <= runs.CAUSE_LIMIT
    cause = json.loads(cause_text)
    assert cause["summary"]["total"] == total and cause["summary"]["failed"] == len(range(0, total, 3))
    if listed == "every job, briefly":
        assert [j["index"] for j in cause["jobs"]] == list(range(total))
        assert set(cause["jobs"][0]) == {"index", "phase", "error"}
    else:
        failed = [j["index"] for j in cause["jobs"]]
        assert failed == list(range(0, 3 * len(failed), 3)) and all(j["phase"] == "FAILED" for j in cause["jobs"])
        assert "s3://runs-bucket/runs/r/outcomes.json" in cause["more"]
        assert f"({len(range(0, total, 3)) - len(failed)} more not listed)" in cause["more"]
