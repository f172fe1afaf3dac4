"""RunJobs end to end: the real parent and child state machines, handlers, Kubernetes API and simulator.

Each job of events/run-jobs-input.json names its scenario with the test-only
jobsync.local/scenario annotation the operator simulator reads.
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

from harness import demo
from harness.local import LocalJobsync
from tests.support.lambdas import QUIET, load_event


def run(execution_input: dict[str, Any]) -> tuple[Any, list[dict[str, Any]], list[Any]]:
    """Run RunJobs; returns its result, its children's descriptions, and the cleanup function's invocations."""
    with LocalJobsync(env=QUIET, execution_events=True) as local:
        with contextlib.redirect_stdout(io.StringIO()):
            result = local.run_jobs(execution_input)
        children = [local.sfn.wait(arn) for arn in local.children(result.execution_arn)]
        cleanups = [call for call in local.sfn.invocations if call.function_name == "jobsync-cleanup"]
        return result, children, cleanups


def test_without_fail_fast_every_job_ends_and_the_run_fails_with_every_outcome_in_input_order():
    result, children, _ = run(load_event("run-jobs-input.json"))
    assert (result.status, result.error) == ("FAILED", "JobsFailed")
    cause = json.loads(result.cause)
    assert [job["phase"] for job in cause["jobs"]] == ["SUCCEEDED", "FAILED", "SUCCEEDED"]
    assert [job["index"] for job in cause["jobs"]] == [0, 1, 2]
    assert cause["jobs"][1]["error"] == "JobFailed" and cause["jobs"][1]["reason"] == "PyTorchJobFailed"
    assert cause["summary"] == {
        "total": 3,
        "succeeded": 2,
        "failed": 1,
        "stopped": 0,
        "timedOut": 0,
        "notFound": 0,
        "error": 0,
    }
    assert sorted(c["status"] for c in children) == ["FAILED", "SUCCEEDED", "SUCCEEDED"]
    # cleanup onFailure: the failed job is deleted, the succeeded ones are kept
    assert sorted(j["phase"] for j in result.jobs_left) == ["SUCCEEDED", "SUCCEEDED"]


def test_all_succeeded_returns_each_jobs_output_and_the_summary():
    execution_input = load_event("run-jobs-input.json")
    failing = execution_input["jobs"][1]["job"]["metadata"]["annotations"]
    failing["jobsync.local/scenario"] = "success"
    result, children, _ = run(execution_input)
    assert result.status == "SUCCEEDED"
    assert [job["phase"] for job in result.output["jobs"]] == ["SUCCEEDED"] * 3
    assert result.output["summary"]["succeeded"] == 3
    first = result.output["jobs"][0]
    assert set(first) == {"index", "executionArn", "status", "job", "phase", "reason", "error", "result"}
    assert first["status"] == "SUCCEEDED" and first["error"] is None and first["job"]["kind"] == "PyTorchJob"
    # The rest is in the child's own execution: the job's own start and end, the run time alone.
    [child] = [c for c in children if c["executionArn"] == first["executionArn"]]
    assert json.loads(child["output"])["durationSeconds"] == 3600


def test_with_fail_fast_the_first_failure_stops_the_others_and_their_jobs_are_cleaned_up():
    result, children, calls = run(load_event("run-jobs-failfast-input.json"))
    assert (result.status, result.error) == ("FAILED", "JobFailed")
    cause = json.loads(result.cause)
    assert cause["reason"] == "PyTorchJobFailed" and cause["deleted"] is True
    assert sorted(c["status"] for c in children) == ["ABORTED", "ABORTED", "FAILED"]
    stopped = [c["executionArn"] for c in children if c["status"] == "ABORTED"]
    cleanups = [call.result for call in calls if isinstance(call.event, dict) and "detail" in call.event]
    aborted = {r["execution"]: r for r in cleanups if r.get("status") == "ABORTED"}
    assert set(aborted) == set(stopped) and all(r["deleted"] for r in aborted.values())
    assert result.jobs_left == []


def test_the_demo_runs_the_parent_and_prints_each_jobs_phase_and_the_summary(capfd):
    assert demo.main(["--input", "events/run-jobs-input.json"]) == 3  # the worst job's: JobFailed
    line = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    assert line["error"] == "JobsFailed"
    assert line["jobs"]["phases"] == ["SUCCEEDED", "FAILED", "SUCCEEDED"]
    assert line["jobs"]["summary"]["failed"] == 1
    assert sorted(j["phase"] for j in line["jobsLeft"]) == ["SUCCEEDED", "SUCCEEDED"]


def test_the_demo_with_fail_fast_fails_with_the_failing_jobs_error_and_leaves_nothing(capfd):
    assert demo.main(["--input", "events/run-jobs-failfast-input.json"]) == 3
    line = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    assert line["error"] == "JobFailed" and line["jobsLeft"] == []
    assert sorted(c["status"] for c in line["jobs"]["children"]) == ["ABORTED", "ABORTED", "FAILED"]
