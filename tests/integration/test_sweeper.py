"""The sweeper through the real state machine: one scheduled look per cluster instead of a safety poll per execution.

LocalJobsync plays template.yaml's sweep schedule on the run's virtual clock (harness.sweeper): the real sweep
handler, every JOBSYNC_SWEEP_SECONDS, against the emulated API over HTTP and moto's DynamoDB and Step Functions.
The Lambdas wait as a stack with the sweeper does: the Await's own timeout is the long backstop.
"""

from __future__ import annotations

import json
import time

from harness.local import LocalJobsync
from jobsync import clock
from jobsync.core import ours
from tests.support.lambdas import QUIET, load_event

SWEEP_SECONDS = 120
STEP = 30  # the run's clock moves in steps of at most this: a sweep runs up to one step after its moment
SWEEP = {**QUIET, "JOBSYNC_COMPLETION_MODE": "callback", "JOBSYNC_SWEEP_SECONDS": str(SWEEP_SECONDS)}
JOBS = ("kubeflow.org", "v1", "pytorchjobs", "ml-training")


def calls(local: LocalJobsync, function: str) -> list:
    assert local.sfn
    return [c for c in local.sfn.invocations if c.function_name == function]


def sweeper_looks(local: LocalJobsync) -> list[dict]:
    return [look for c in calls(local, "jobsync-sweep") if c.result for look in c.result["looks"]]


def seconds(stamp: str) -> float:
    value = clock.parse(stamp)
    assert value is not None, stamp
    return value


def entered(local: LocalJobsync, arn: str) -> list[str]:
    assert local.sfn
    return [e["stateEnteredEventDetails"]["name"] for e in local.sfn.history(arn) if e["type"].endswith("StateEntered")]


def test_with_the_notifier_dead_the_sweeper_resumes_the_execution_within_its_interval():
    with LocalJobsync("success", {"pending_s": 60, "run_s": 3 * 3600}, env=SWEEP, notifier=False) as local:
        result = local.run(load_event("run-job-input.json"), name="sweep-dead-notifier", timeout_s=300)
        assert result.status == "SUCCEEDED", result.cause
        assert result.output["timesFrom"]["finishedAt"] == "job"
        delay = seconds(result.output["noticedAt"]) - seconds(result.output["finishedAt"])
        # One sweep interval, plus one step of the run's clock; the target is 300 s.
        assert 0 <= delay <= SWEEP_SECONDS + STEP, delay
        resumed = [look for look in sweeper_looks(local) if look["resumed"]]
        assert [(look["execution"], look["phase"]) for look in resumed] == [(result.execution_arn, "SUCCEEDED")]
        # No Await timed out: the execution only waited, and the sweeper's look resumed it.
        assert calls(local, "jobsync-status") == []
        assert entered(local, result.execution_arn) == [
            "CheckInput",
            "Submit",
            "IsDone",
            "Await",
            "IsDone",
            "Cleanup",
            "Outcome",
            "Succeeded",
        ]
        # The job ran from 60 s, before its pods' first reading was due (121 s): the sweeper looked twice,
        # when the LIST showed it running (the stored state then needs no more checks) and at its end.
        mine = [look for look in sweeper_looks(local) if look["execution"] == result.execution_arn]
        assert [(look["why"], look["phase"]) for look in mine] == [
            ("the LIST shows it RUNNING, its last look PENDING", "RUNNING"),
            ("the LIST shows it SUCCEEDED and no event resumed the execution", "SUCCEEDED"),
        ]


def test_a_stuck_start_is_failed_by_the_sweeper_within_an_interval_of_its_grace():
    # The image does not exist: the pod may be failed 120 s (ImageErrorGraceSeconds) after it started.
    with LocalJobsync("bad-image", {}, env=SWEEP) as local:
        result = local.run(load_event("run-job-input.json"), name="sweep-bad-image", timeout_s=300)
        assert (result.status, result.error) == ("FAILED", "JobFailed")
        cause = json.loads(result.cause)
        assert cause["reason"] in {"ErrImagePull", "ImagePullBackOff"} and "(120s allowed)" in cause["message"]
        assert cause["diagnostics"], cause
        # "stuck for N s (120 s allowed)": failed N - 120 s after its grace ended, within one sweep interval.
        stuck_for = int(cause["message"].split("stuck for ")[1].split("s ")[0])
        assert 120 <= stuck_for <= 120 + SWEEP_SECONDS + STEP + 1, cause["message"]
        noticed = seconds(cause["noticedAt"]) - seconds(cause["submittedAt"])
        assert noticed <= 300  # as poll mode: failed within five minutes, naming the pull error
        failed = [look for look in sweeper_looks(local) if look["resumed"]]
        assert [look["phase"] for look in failed] == ["FAILED"]
        assert calls(local, "jobsync-status") == []  # no Await's timeout was needed for it
        swept = [c.result for c in calls(local, "jobsync-sweep") if c.result and c.result["resumed"]]
        assert [s["failed_starts"] for s in swept] == [1]
        assert result.jobs_left == []  # cleanup onFailure


def test_an_operator_that_never_reconciles_is_failed_by_the_sweeper():
    with LocalJobsync("operator-down", {}, env=SWEEP) as local:
        result = local.run(load_event("run-job-input.json"), name="sweep-operator-down", timeout_s=300)
        assert (result.status, result.error) == ("FAILED", "JobFailed")
        cause = json.loads(result.cause)
        assert cause["reason"] == "OperatorNotReconciling"
        # OperatorTimeoutSeconds (300 s) after submission, then at most one sweep interval.
        noticed = seconds(cause["noticedAt"]) - seconds(cause["submittedAt"])
        assert 300 < noticed <= 300 + SWEEP_SECONDS + STEP + 1, noticed
        assert calls(local, "jobsync-status") == []


def test_a_job_that_is_not_ours_is_never_touched():
    """Jobs labelled as jobsync's but not a waiting execution's are listed, never read, never acted on."""
    with LocalJobsync("success", {"pending_s": 60, "run_s": 5 * 3600}, env=SWEEP, notifier=False) as local:
        assert local.api and local.sfn and local.sim
        other = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:someone-else"
        stranger = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "strangers-job", "labels": ours.job_labels(other)},
            "spec": {"pytorchReplicaSpecs": {}},
            "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "PyTorchJobFailed"}]},
        }
        local.sim.plan("ml-training", "strangers-job", "operator-down")  # the simulator leaves its status alone
        before = local.api.put((*JOBS, "strangers-job"), stranger)
        execution_input = load_event("run-job-input.json")
        arn = local.start(execution_input, name="sweep-not-ours")
        name = local.job_name(arn, execution_input)
        wait_for(lambda: (local.api.get((*JOBS, name)) or {}).get("status"), "the operator's first status")
        # While the execution waits, its job is replaced by another object of the same name that has ended.
        mine = local.api.get((*JOBS, name))
        local.sim.plan("ml-training", name, "operator-down")
        local.api.delete((*JOBS, name))
        impostor = {**mine, "metadata": {"name": name, "labels": mine["metadata"]["labels"]}}
        impostor["status"] = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded"}]}
        local.api.put((*JOBS, name), impostor)
        local.api.clear_requests()
        swapped = local.clock.now()

        def sweeps() -> list[dict]:
            return [c.result for c in calls(local, "jobsync-sweep") if c.result and c.at > swapped]

        wait_for(lambda: len(sweeps()) >= 5, "five sweeps after the swap")
        assert all(s["resumed"] == 0 and s["looked"] == 0 and s["not_ours"] == 1 for s in sweeps()), sweeps()
        assert local.sfn.stop_if_running(arn)  # the impostor's end resumed nothing: the execution still waited
        named = [r for r in local.api.requests if r.name in (name, "strangers-job")]
        assert named == []  # no GET, no DELETE, no status write of either
        assert [r for r in local.api.requests if r.resource == "pods"] == []  # nobody's pods read
        assert {(r.verb, r.resource) for r in local.api.requests} == {("list", "pytorchjobs")}
        kept = local.api.get((*JOBS, "strangers-job"))
        assert kept["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        assert local.api.get((*JOBS, name))["metadata"]["uid"] != mine["metadata"]["uid"]


def wait_for(condition, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
