"""RunJobs past what fits an execution's payload: many jobs through the real parent and child state machines.

The jobs come from S3 (``jobsFrom``) and go back there: every outcome in ``runs/<run>/outcomes.json``, the
output a summary that points at them. failFast stops the rest of a large run, each stopped child's job
cleaned up by its own ExecutionEnded rule; a child stopped by hand, a RunJob one or a Map Run one, is an
ABORTED outcome. RunJobs at MAX_JOBS (1,000) takes minutes here: a benchmark figure (``make bench-runjobs``).
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from harness.local import RUNS_BUCKET, TEMPLATE_BUCKET, TEMPLATE_PREFIX, LocalJobsync, RunResult
from tests.integration.test_run_jobs_limits import PAYLOAD_LIMIT, aws_size, job, padded, payloads
from tests.support.lambdas import QUIET


def s3_json(key: str) -> Any:
    return json.loads(boto3.client("s3").get_object(Bucket=RUNS_BUCKET, Key=key)["Body"].read())


@dataclass
class Run:
    """What a RunJobs run did, read before its harness closed."""

    result: RunResult
    children: list[dict[str, Any]]  # its RunJob executions, described
    outcomes: list[dict[str, Any]]  # what it wrote to runs/<name>/outcomes.json
    cleanups: list[Any]  # the cleanup function's invocations
    seconds: float  # virtual, from its start to its end
    histories: list[list[dict[str, Any]]]  # its own history, then its Map Run children's


def run_from_s3(
    jobs: list[dict[str, Any]],
    fail_fast: bool = False,
    max_concurrency: int = 0,
    template_dir: Path | None = None,
    timeout_s: float = 900,
    **hooks: Callable[[LocalJobsync, Any], Any],
) -> Run:
    """RunJobs over ``jobs`` put under the runs bucket's inputs/ (``jobsFrom``), each of ``hooks`` wrapping the
    handler it names."""
    dirs = (template_dir,) if template_dir else ()
    with LocalJobsync(env=QUIET, execution_events=True, template_dirs=dirs) as local:
        assert local.sfn
        for name, wrap in hooks.items():
            local.sfn.handlers[name] = wrap(local, local.sfn.handlers[name])
        boto3.client("s3").put_object(Bucket=RUNS_BUCKET, Key="inputs/sweep.json", Body=json.dumps(jobs).encode())
        execution_input = {
            "jobsFrom": f"s3://{RUNS_BUCKET}/inputs/sweep.json",
            "failFast": fail_fast,
            "maxConcurrency": max_concurrency,
        }
        with contextlib.redirect_stdout(io.StringIO()):
            result = local.run_jobs(execution_input, timeout_s=timeout_s)
        arn = result.execution_arn
        description = local.sfn.wait(arn)
        [map_run] = local.sfn._sfn.list_map_runs(executionArn=arn)["mapRuns"]
        return Run(
            result=result,
            children=[local.sfn.wait(child) for child in local.children(arn)],
            outcomes=s3_json(f"runs/{arn.rsplit(':', 1)[1]}/outcomes.json"),
            cleanups=[c for c in local.sfn.invocations if c.function_name == "jobsync-cleanup"],
            seconds=(description["stopDate"] - description["startDate"]).total_seconds(),
            histories=[local.sfn.history(a) for a in [arn, *local.map_run_children(map_run["mapRunArn"])]],
        )


def ended_by_events(run: Run) -> list[dict[str, Any]]:
    """What the cleanups the ExecutionEnded rule invoked returned."""
    return [c.result for c in run.cleanups if isinstance(c.event, dict) and "detail" in c.event]


def test_a_hundred_jobs_with_4kb_results_and_contexts_run_in_one_run_and_the_output_points_at_their_outcomes(
    tmp_path,
):
    message = padded({"accuracy": 0.9, "modelUri": "s3://models/run/000/model.pt"}, "notes", 4096)
    text = json.dumps(message, separators=(",", ":"))
    manifest = job(0)["job"]
    manifest["metadata"]["name"] = "j${INDEX}"
    manifest["metadata"]["annotations"]["jobsync.local/termination-message"] = text.replace("/000/", "/${INDEX}/")
    (tmp_path / "max-result.yaml").write_text(json.dumps(manifest, ensure_ascii=False))
    jobs = [
        {
            "jobTemplate": f"s3://{TEMPLATE_BUCKET}/{TEMPLATE_PREFIX}max-result.yaml",
            "parameters": {"INDEX": f"{i:03d}"},
            "context": padded({"pipelineRun": f"sweep-{i}"}, "commit", 4096),
        }
        for i in range(100)
    ]
    run = run_from_s3(jobs, template_dir=tmp_path)
    result, children, outcomes = run.result, run.children, run.outcomes

    assert result.status == "SUCCEEDED", (result.error, (result.cause or "")[:300])
    assert aws_size(result.output) <= PAYLOAD_LIMIT and "jobs" not in result.output  # 100 x 4 KB do not fit
    assert result.output["summary"]["total"] == result.output["summary"]["succeeded"] == 100
    name = result.execution_arn.rsplit(":", 1)[1]
    assert result.output["results"]["bucket"] == RUNS_BUCKET
    assert result.output["results"]["outcomes"] == f"runs/{name}/outcomes.json"
    assert [o["index"] for o in outcomes] == list(range(100)) and {o["phase"] for o in outcomes} == {"SUCCEEDED"}
    assert [o["result"] for o in outcomes] == [json.loads(text.replace("/000/", f"/{i:03d}/")) for i in range(100)]
    assert sorted(o["executionArn"] for o in outcomes) == sorted(c["executionArn"] for c in children)
    assert len(children) == 100 and {c["status"] for c in children} == {"SUCCEEDED"}
    assert run.seconds < 600  # side by side: one job takes a few minutes, a hundred in a row hours
    assert len(run.histories) == 101  # the run's own, and each Map Run child's
    largest = max((size for history in run.histories for size in payloads(history)), key=lambda sized: sized[1])
    assert largest[1] <= PAYLOAD_LIMIT, largest


def test_fail_fast_stops_the_other_children_of_a_large_run_and_their_jobs_are_cleaned_up():
    # Job 17 fails after its minute; the others run an hour.
    hour = json.dumps({"pending_s": 10, "run_s": 3600})
    jobs = [
        job(17, scenario="failure") if i == 17 else job(i, annotations={"jobsync.local/timings": hour})
        for i in range(60)
    ]
    run = run_from_s3(jobs, fail_fast=True, max_concurrency=25)
    result, children, outcomes = run.result, run.children, run.outcomes

    assert (result.status, result.error) == ("FAILED", "JobFailed")
    cause = json.loads(result.cause)
    assert cause["reason"] == "PyTorchJobFailed" and cause["deleted"] is True
    assert run.seconds < 600  # the failure's time, not the others' hour
    # Twenty-five started, the failure stopped the rest of them, and the other thirty-five never started.
    assert sorted(c["status"] for c in children) == ["ABORTED"] * 24 + ["FAILED"]
    assert [o["phase"] for o in outcomes] == ["ABORTED"] * 17 + ["FAILED"] + ["ABORTED"] * 42
    assert [o["status"] for o in outcomes[25:]] == ["NOT_STARTED"] * 35
    assert outcomes[17]["error"] == "JobFailed" and outcomes[17]["reason"] == "PyTorchJobFailed"
    stopped = {c["executionArn"] for c in children if c["status"] == "ABORTED"}
    aborted = {r["execution"]: r for r in ended_by_events(run) if r.get("status") == "ABORTED"}
    assert set(aborted) == stopped and all(r["deleted"] for r in aborted.values())
    assert result.jobs_left == []


def stop_run_job_by_hand(index: int) -> Callable[[LocalJobsync, Any], Any]:
    """Wrap the status handler: on job ``index``'s first poll, stop its RunJob execution as a person would."""

    def wrap(local: LocalJobsync, handler: Any) -> Any:
        def status(event: Any, context: Any) -> Any:
            if isinstance(event, dict) and event.get("job", {}).get("name", "").startswith(f"j{index}-"):
                assert local.sfn
                local.sfn.stop_if_running(event["execution"])
            return handler(event, context)

        return status

    return wrap


def stop_map_run_child_by_hand(index: int) -> Callable[[LocalJobsync, Any], Any]:
    """Wrap the status handler: on job ``index``'s first poll, stop the Map Run child that started its RunJob."""

    def wrap(local: LocalJobsync, handler: Any) -> Any:
        def status(event: Any, context: Any) -> Any:
            if isinstance(event, dict) and event.get("job", {}).get("name", "").startswith(f"j{index}-"):
                assert local.sfn
                [parent] = [
                    e["executionArn"]
                    for e in local.sfn._sfn.list_executions(
                        stateMachineArn=local.substitutions()["RunJobsStateMachineArn"]
                    )["executions"]
                ]
                [map_run] = local.sfn._sfn.list_map_runs(executionArn=parent)["mapRuns"]
                for child in local.map_run_children(map_run["mapRunArn"]):
                    if event["execution"] in local.sfn.started_by(child):
                        local.sfn.stop_if_running(child)
            return handler(event, context)

        return status

    return wrap


@pytest.mark.parametrize(
    ("hook", "run_job_status"),
    [(stop_run_job_by_hand(3), "ABORTED"), (stop_map_run_child_by_hand(3), "ABORTED")],
    ids=["its-run-job-execution", "its-map-run-child"],
)
def test_a_child_stopped_by_hand_is_an_aborted_outcome_and_the_others_run_on(hook, run_job_status):
    run = run_from_s3([job(i) for i in range(30)], **{"jobsync-status": hook})
    result, children, outcomes = run.result, run.children, run.outcomes
    assert (result.status, result.error) == ("FAILED", "JobsFailed")
    assert json.loads(result.cause)["summary"]["stopped"] == 1
    assert [o["phase"] for o in outcomes] == ["SUCCEEDED"] * 3 + ["ABORTED"] + ["SUCCEEDED"] * 26
    [stopped] = [c for c in children if c["status"] != "SUCCEEDED"]
    assert stopped["status"] == run_job_status
    assert [r["execution"] for r in ended_by_events(run) if r.get("status") == "ABORTED"] == [stopped["executionArn"]]
    assert [j["phase"] for j in result.jobs_left] == ["SUCCEEDED"] * 29  # onFailure: the stopped job deleted
