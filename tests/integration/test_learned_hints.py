"""Learned hints through the real state machine: a recurring job's runs teach the next one its duration."""

from __future__ import annotations

from harness.local import LocalJobsync
from tests.support.lambdas import QUIET, load_event


def submitted_states(local: LocalJobsync) -> list[dict]:
    assert local.sfn
    return [c.result for c in local.sfn.invocations if c.function_name == "jobsync-submit" and c.result]


def test_the_median_of_a_familys_successful_runs_becomes_the_next_runs_hint():
    job_input = load_event("run-job-input.json")  # no expectedDurationSeconds
    with LocalJobsync("success", {"pending_s": 60, "run_s": 3600}, env=QUIET) as local:
        first = local.run(job_input, name="nightly-1")
        local.timings = {"pending_s": 60, "run_s": 5400}
        second = local.run(job_input, name="nightly-2")
        third = local.run(job_input, name="nightly-3")
        states = submitted_states(local)
    assert [r.status for r in (first, second, third)] == ["SUCCEEDED"] * 3
    assert [s.get("hintSource") for s in states] == [None, None, "learned"]
    # The runs took 3600 s and 5400 s from start to end (as jobsync saw them, within a poll).
    assert 3600 <= states[2]["expectedDurationSeconds"] <= 4500 + 600
    assert states[2]["jobFamily"] == job_input["job"]["metadata"]["name"]


def test_an_explicit_hint_or_family_wins():
    job_input = {**load_event("run-job-input.json"), "jobFamily": "resnet50", "expectedDurationSeconds": 900}
    with LocalJobsync("success", {"pending_s": 60, "run_s": 600}, env=QUIET) as local:
        for n in range(3):
            assert local.run(job_input, name=f"explicit-{n}").status == "SUCCEEDED"
        states = submitted_states(local)
    assert {s["hintSource"] for s in states} == {"input"}
    assert {s["expectedDurationSeconds"] for s in states} == {job_input["expectedDurationSeconds"]}
    assert {s["jobFamily"] for s in states} == {"resnet50"}


def test_a_submit_whose_hint_cannot_be_read_runs_its_job_without_one():
    """The lookup runs after the job exists: a missing, throttled or unreachable table must not fail the Submit."""
    import boto3

    from harness.local import TABLE

    job_input = load_event("run-job-input.json")  # no expectedDurationSeconds: the table is asked
    with LocalJobsync("success", {"pending_s": 60, "run_s": 600}, env=QUIET) as local:
        boto3.client("dynamodb").delete_table(TableName=TABLE)
        result = local.run(job_input, name="no-table")
        submits = [c for c in local.sfn.invocations if c.function_name == "jobsync-submit"]
    assert result.status == "SUCCEEDED"
    assert len(submits) == 1 and submits[0].result is not None  # answered at once: no retry, no second look
    assert "hintSource" not in submits[0].result and "expectedDurationSeconds" not in submits[0].result
