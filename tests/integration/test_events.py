"""Every sample event in events/ is a valid input: each runs through its handler here.

These tests give each file to the same handler in-process, against the local
Kubernetes API (and moto), so the samples cannot rot without Docker; `make
sam-local` gives every one of them to its function through `sam local` in the
Lambda runtime and holds the answer to the in-process one
(lambda_runtime/tests/test_sample_events.py). The evaluate-* samples run in tests/unit/test_evaluate_handler.py and
run-job-input.json through the whole state machine in test_run_job.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from harness.local import LocalJobsync
from harness.local_stack import RUNS_BUCKET
from jobsync import runtime
from jobsync.errors import InvalidInput
from jobsync.run.callback import TokenStore
from jobsync.run.manifests import job_labels, job_name
from tests.support.kube import PYTORCHJOBS
from tests.support.lambdas import EVENTS, QUIET, invoke, load_event

# Execution inputs: test_run_job.py, test_demo.py and test_run_jobs.py run them through the state machines.
TESTED_ELSEWHERE = {"run-job-input.json", "run-job-template-input.json"}
TESTED_ELSEWHERE |= {"run-jobs-input.json", "run-jobs-failfast-input.json"}


@pytest.fixture
def kube_env():
    return {
        "JOBSYNC_TEMPLATE_BUCKET": "jobsync-templates-123456789012",
        "JOBSYNC_TEMPLATE_PREFIX": "jobsync/templates/",
    }


def test_submit_inline(kube_api, lambda_context):
    out = invoke("submit", load_event("submit-inline.json"), lambda_context)
    assert out["phase"] == "PENDING" and out["polls"] == 0 and out["waitSeconds"] > 0
    (job,) = kube_api.objects(*PYTORCHJOBS)
    assert job["metadata"]["name"] == out["job"]["name"] and out["job"]["uid"] == job["metadata"]["uid"]


def test_submit_template_from_s3(kube_api, lambda_context):
    template = (EVENTS / "templates" / "pytorch-mnist.yaml").read_text()
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="jobsync-templates-123456789012")
        s3.put_object(
            Bucket="jobsync-templates-123456789012", Key="jobsync/templates/pytorch-mnist.yaml", Body=template
        )
        runtime.reset()
        out = invoke("submit", load_event("submit-template.json"), lambda_context)
    (job,) = kube_api.objects(*PYTORCHJOBS)
    assert out["cleanup"] == "always"
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2  # ${WORKERS} became the number 2, not the string "2"
    assert worker["template"]["spec"]["containers"][0]["command"][-1] == "--epochs=3"


def _job_for(event: dict) -> dict:
    ref = event["job"]
    return {
        "apiVersion": ref["apiVersion"],
        "kind": ref["kind"],
        "metadata": {
            "name": ref["name"],
            "namespace": ref["namespace"],
            "labels": job_labels(event["execution"]) if "execution" in event else {},  # as submit labelled it
        },
        "spec": {"pytorchReplicaSpecs": {}},
        "status": {
            "conditions": [
                {"type": "Created", "status": "True", "reason": "PyTorchJobCreated"},
                {"type": "Running", "status": "True", "reason": "PyTorchJobRunning"},
            ]
        },
    }


def test_status_running(kube_api, lambda_context, pinned_clock):
    event = load_event("status-running.json")
    pinned_clock("2026-11-29T11:00:00Z")  # an hour into the run the event describes
    stored = kube_api.put((*PYTORCHJOBS, "ml-training", event["job"]["name"]), _job_for(event))
    event["job"]["uid"] = stored["metadata"]["uid"]  # status reads only the object the loop created
    kube_api.clear_requests()
    out = invoke("status", event, lambda_context)
    assert out["phase"] == "RUNNING" and out["polls"] == event["polls"] + 1
    assert [(r.method, r.status) for r in kube_api.requests] == [("GET", 200)]  # one GET, nothing else


def test_cleanup_failed(kube_api, lambda_context):
    event = load_event("cleanup-failed.json")
    stored = kube_api.put((*PYTORCHJOBS, "ml-training", event["job"]["name"]), _job_for(event))
    event["job"]["uid"] = stored["metadata"]["uid"]  # cleanup deletes only the object the loop created
    out = invoke("cleanup", event, lambda_context)
    assert out["deleted"] is True
    assert kube_api.objects(*PYTORCHJOBS) == []


def test_cleanup_execution_aborted(lambda_context):
    # The sample's execution, run for real and stopped mid-run: cleanup checks with Step Functions that it was
    # aborted, and reads the uid of its job from its Submit's answer in the execution's history.
    event = load_event("cleanup-execution-aborted.json")
    detail = event["detail"]
    with LocalJobsync("success", {"pending_s": 30, "run_s": 6 * 3600}, env=QUIET) as local:
        assert local.sfn is not None and local._state_machine_arn == detail["stateMachineArn"]
        t0 = local.clock.now()
        local.clock.on_advance(lambda now: now - t0 >= 900 and local.sfn.stop_if_running(detail["executionArn"]))
        arn = local.start(json.loads(detail["input"]), name=detail["name"])
        assert arn == detail["executionArn"] and local.sfn.wait(arn)["status"] == "ABORTED"
        (job,) = local.api.objects(*PYTORCHJOBS)
        out = invoke("cleanup", event, lambda_context)
        assert out["deleted"] is True and out["job"]["name"] == job_name(arn, "pytorch-simple")
        assert out["job"]["uid"] == job["metadata"]["uid"]
        assert local.api.objects(*PYTORCHJOBS) == []


def test_await_running(lambda_context):
    # Callback mode's Await with the loop state of status-running.json: it stores the task token, looks once,
    # and the job runs, so the execution goes on waiting for the notifier's event.
    event = load_event("await-running.json")
    state = event["state"]
    with LocalJobsync(env=QUIET) as local:
        assert local.api is not None
        stored = local.api.put((*PYTORCHJOBS, "ml-training", state["job"]["name"]), _job_for(state))
        state["job"]["uid"] = stored["metadata"]["uid"]
        out = invoke("await", event, lambda_context)
        waiting = TokenStore(runtime.table()).get(state["execution"])
    assert out == {"phase": "RUNNING", "reason": "PyTorchJobRunning", "terminal": False}
    assert waiting is not None and waiting.token == event["taskToken"]


def test_resume_job_ended_for_an_execution_that_waits_for_nothing(lambda_context):
    # The notifier's event for a job's end, when no execution waits on it (already resumed): a no-op.
    with LocalJobsync(env=QUIET):
        out = invoke("resume", load_event("resume-job-ended.json"), lambda_context)
    assert out == {"resumed": False, "why": "no execution waits for this job (already resumed, or polled to its end)"}


def test_sweep_schedule_with_nothing_waiting(lambda_context):
    # The sweeper's schedule (callback mode) when no execution waits: one look at the store, nothing else.
    with LocalJobsync(env=QUIET):
        out = invoke("sweep", load_event("sweep-schedule.json"), lambda_context)
    assert out["waiting"] == 0 and out["looked"] == out["resumed"] == out["failed_starts"] == out["errors"] == 0


@pytest.mark.parametrize("event", [{}, {"sweep": "now"}, {"warmUp": True}])
def test_the_sweeper_refuses_any_event_but_its_schedules(event, lambda_context):
    with LocalJobsync(env=QUIET), pytest.raises(InvalidInput, match=r'\{"sweep": "scheduled"\} is required'):
        invoke("sweep", event, lambda_context)


def test_jobs_prepare_writes_the_runs_jobs_where_its_map_reads_them(lambda_context):
    event = load_event("jobs-prepare.json")
    with LocalJobsync(env=QUIET):
        out = invoke("jobs", event, lambda_context)
        body = boto3.client("s3").get_object(Bucket=out["bucket"], Key=out["key"])["Body"].read()
    assert out == {"bucket": RUNS_BUCKET, "key": f"runs/{event['run']}/jobs.json", "count": len(event["jobs"])}
    assert [job["job"]["metadata"]["name"] for job in json.loads(body)] == [
        job["job"]["metadata"]["name"] for job in event["jobs"]
    ]


def test_every_sample_event_has_a_test():
    tested = {
        "submit-inline.json",
        "submit-template.json",
        "status-running.json",
        "cleanup-failed.json",
        "cleanup-execution-aborted.json",
        "await-running.json",
        "resume-job-ended.json",
    }
    handled_by_prefix = ("evaluate-",)
    here = Path(__file__).read_text()
    for path in sorted(EVENTS.glob("*.json")):
        name = path.name
        if name in TESTED_ELSEWHERE or name.startswith(handled_by_prefix):
            continue
        assert name in tested or name in here, f"events/{name} is run by no test"
