"""The `make demo` scenarios, played by the real training-operator and kwok instead of the simulator.

Each test runs the real state machine (moto's interpreter, the wall clock) as
jobsync-lambda with only the Role the chart installs, and asserts the verdict, the Cause and what is
left in the cluster: the job kept or deleted as ``cleanup`` says, and after a delete its pods removed by the
real garbage collector. Every story
runs twice: with the handlers in-process, and with the functions of the ``sam build`` artifact in the Lambda
runtime (``sam local start-lambda``, lambda_runtime/), which skips without Docker.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
from kubernetes import client

from e2e.controlplane import JOB_NAMESPACE, OUTCOME_ANNOTATION, ControlPlane
from e2e.tests.jobs import condition, wait_for
from e2e.tests.runs import (
    apply_role,
    condition_types,
    custom_path,
    get_job,
    job_of,
    jobsync_run,
    pod_annotations,
    pods_of,
    pytorch_input,
    run,
    wait_gone,
)
from harness.local import LocalJobsync

PLURAL = "pytorchjobs"


@pytest.fixture(scope="module", params=["in-process", "containers"])
def local(request: pytest.FixtureRequest, control_plane: ControlPlane) -> Iterator[LocalJobsync]:
    containers = request.getfixturevalue("lambda_containers") if request.param == "containers" else None
    apply_role(control_plane, "PyTorchJob")
    # The two runs name their executions alike, so their jobs share names: the first run's go first.
    control_plane.request("DELETE", custom_path(PLURAL))
    left = lambda: control_plane.request("GET", custom_path(PLURAL)).body["items"]  # noqa: E731
    wait_for("the earlier runs' jobs deleted", lambda: not left(), 60)
    with jobsync_run(control_plane, containers=containers) as local:
        yield local


def test_success_keeps_the_job_with_the_operators_conditions(
    control_plane: ControlPlane, local: LocalJobsync, admin_api: client.ApiClient
) -> None:
    result = run(local, pytorch_input(), "success")
    assert result.status == "SUCCEEDED", result.cause
    out = result.output
    assert out["phase"] == "SUCCEEDED" and out["reason"] == "PyTorchJobSucceeded", out
    assert out["message"] == f"PyTorchJob {job_of(local, 'success')} is successfully completed."
    assert out["deleted"] is False and out["polls"] >= 1
    job = get_job(control_plane, PLURAL, job_of(local, "success"))
    assert ("Succeeded", "True", "PyTorchJobSucceeded") in condition_types(job)
    assert ("Running", "False", "PyTorchJobRunning") in condition_types(job)  # the real operator turns it False
    assert {p.status.phase for p in pods_of(admin_api, job_of(local, "success"))} == {"Succeeded"}


def test_success_with_cleanup_always_deletes_the_job_and_its_pods(
    control_plane: ControlPlane, local: LocalJobsync, admin_api: client.ApiClient
) -> None:
    result = run(local, pytorch_input(cleanup="always"), "success-always")
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["deleted"] is True
    wait_gone(control_plane, admin_api, PLURAL, job_of(local, "success-always"))


def test_failure_names_the_exit_code_and_the_log_and_deletes_the_job(
    control_plane: ControlPlane, local: LocalJobsync, admin_api: client.ApiClient
) -> None:
    control_plane.set_pod_log("epoch 1 loss=0.51\nRuntimeError: CUDA out of memory")
    body = pytorch_input(pod_annotations("fail", exit_code=3), worker=pod_annotations("run-forever"))
    result = run(local, body, "failure")
    assert result.status == "FAILED" and result.error == "JobFailed", result.cause
    cause = json.loads(result.cause or "{}")
    name = job_of(local, "failure")
    assert cause["reason"] == "PyTorchJobFailed"
    assert cause["message"] == f"PyTorchJob {name} is failed because 1 Master replica(s) failed."
    assert cause["diagnostics"] == [
        {"pod": f"{name}-master-0", "container": "pytorch", "reason": "Error", "exitCode": 3, "message": ""}
    ]
    assert "RuntimeError: CUDA out of memory" in cause["logTail"]
    assert cause["deleted"] is True
    wait_gone(control_plane, admin_api, PLURAL, name)


def test_failure_with_cleanup_never_keeps_the_failed_job(
    control_plane: ControlPlane, local: LocalJobsync, admin_api: client.ApiClient
) -> None:
    result = run(local, pytorch_input(pod_annotations("fail"), cleanup="never"), "failure-never")
    assert result.error == "JobFailed", result.cause
    assert json.loads(result.cause or "{}")["deleted"] is False
    job = get_job(control_plane, PLURAL, job_of(local, "failure-never"))
    assert condition(job, "Failed") is not None, job.get("status")
    assert {p.status.phase for p in pods_of(admin_api, job_of(local, "failure-never"))} >= {"Failed"}


def test_restarting_a_retryable_exit_code_then_success(
    control_plane: ControlPlane, local: LocalJobsync, admin_api: client.ApiClient
) -> None:
    """restartPolicy ExitCode: exit 137 is retryable, so the real operator deletes the pod and makes another.

    kwok has no memory between two pods of the same template, so the admin changes the Master's template to
    succeed once the operator has restarted it at least once (what a transient fault that went away looks like).
    """
    execution = "restarting"
    name = job_of(local, execution)
    body = pytorch_input(pod_annotations("fail", run_duration="2s", exit_code=137), restart_policy="ExitCode")
    done: list[bool] = []

    def heal() -> None:
        def jobsync_saw_the_restart() -> bool:
            return any("Restart" in poll.reason for poll in local.polls())

        # Until then every new pod fails again with 137 and the operator keeps restarting it.
        wait_for("a poll that reports the restart", jobsync_saw_the_restart, timeout=60, interval=0.2)
        patch = {
            "spec": {
                "pytorchReplicaSpecs": {
                    role: {"template": {"metadata": {"annotations": {OUTCOME_ANNOTATION: "succeed"}}}}
                    for role in ("Master", "Worker")
                }
            }
        }
        resp = control_plane.request(
            "PATCH",
            f"/apis/kubeflow.org/v1/namespaces/{JOB_NAMESPACE}/{PLURAL}/{name}",
            patch,
            content_type="application/merge-patch+json",
        )
        assert resp.status == 200, resp.body
        done.append(True)

    healer = threading.Thread(target=heal, daemon=True)
    healer.start()
    result = run(local, body, execution)
    healer.join(5)
    assert done, "the job never restarted"
    assert result.status == "SUCCEEDED", result.cause
    reasons = [p.reason for p in result.polls]
    assert any("Restart" in r for r in reasons), reasons  # jobsync saw the restart on the way
    job = get_job(control_plane, PLURAL, name)
    # The real operator drops the Restarting condition once the job runs again: only the polls saw it.
    assert "Restarting" not in [c[0] for c in condition_types(job)], condition_types(job)
    print("restarting polls:", [(p.phase, p.reason) for p in result.polls])


def test_image_pull_backoff_fails_after_the_stuck_grace(
    control_plane: ControlPlane, local: LocalJobsync, admin_api: client.ApiClient
) -> None:
    result = run(local, pytorch_input(pod_annotations("image-pull-backoff")), "image-pull-backoff")
    assert result.status == "FAILED" and result.error == "JobFailed", result.cause
    cause = json.loads(result.cause or "{}")
    assert cause["reason"] == "ImagePullBackOff", cause
    assert "ImagePullBackOff" in {d["reason"] for d in cause["diagnostics"]}
    assert "Back-off pulling image" in cause["message"]
    # The real operator never says anything but Created for such a job: the verdict is jobsync's, from the pods.
    assert all(p.phase == "PENDING" for p in result.polls[:-1]), result.polls
    assert cause["deleted"] is True
    wait_gone(control_plane, admin_api, PLURAL, job_of(local, "image-pull-backoff"))


def test_timeout_ends_a_job_that_runs_on(
    control_plane: ControlPlane, local: LocalJobsync, admin_api: client.ApiClient
) -> None:
    result = run(local, pytorch_input(pod_annotations("run-forever"), timeoutSeconds=8), "timeout")
    assert result.status == "FAILED" and result.error == "JobTimedOut", result.cause
    assert "RUNNING" in {p.phase for p in result.polls}
    assert json.loads(result.cause or "{}")["deleted"] is True
    wait_gone(control_plane, admin_api, PLURAL, job_of(local, "timeout"))


def test_operator_down_fails_the_job_it_never_reconciles(
    control_plane: ControlPlane, local: LocalJobsync, admin_api: client.ApiClient
) -> None:
    control_plane.stop_operator()
    try:
        result = run(local, pytorch_input(), "operator-down")
        name = job_of(local, "operator-down")
        assert result.status == "FAILED" and result.error == "JobFailed", result.cause
        cause = json.loads(result.cause or "{}")
        assert cause["reason"] == "OperatorNotReconciling" and cause["job"]["name"] == name, cause
        assert "is the PyTorchJob operator installed and running?" in cause["message"]
        assert cause["deleted"] is True
        # With no operator nothing made pods; the delete is the API server's and the garbage collector's alone.
        wait_gone(control_plane, admin_api, PLURAL, name)
    finally:
        control_plane.start_operator()
