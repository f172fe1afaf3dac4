"""`jobsync wait`, `jobsync.wait` and `jobsync logs` on the real control plane: no AWS, a person's kubeconfig.

The jobs are created as a person creates them (``kubectl apply`` as the admin: no jobsync label), run by the
real training-operator, their pods played by kwok; the commands are subprocesses, as a shell runs them. The
waits are a deployment's, lowered through the environment (``FAST``), as the other e2e tests lower them.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

import jobsync
from e2e.controlplane import JOB_NAMESPACE, ControlPlane
from e2e.tests.jobs import REPO, wait_for
from e2e.tests.runs import FAST, apply_role, get_job, jobsync_run, pod_annotations, pytorch_input, with_pods
from harness.aws_server import client_env, endpoint, moto_server
from jobsync.core.outcome import Phase

PLURAL = "pytorchjobs"
LOG = "epoch 1 loss=0.51\nepoch 2 loss=0.32\naccuracy=0.97"


def person(*args: str, timeout: float = 180, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m jobsync_cli ARGS`` from a shell with no AWS and no jobsync deployment settings."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "JOBSYNC_", "KUBECONFIG"))}
    return subprocess.run(
        [sys.executable, "-m", "jobsync_cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**base, **FAST, "PYTHONPATH": "layers/jobsync:cli", **(env or {})},
        timeout=timeout,
        check=False,
    )


def create(admin_api: client.ApiClient, name: str, annotations: dict[str, str]) -> dict[str, Any]:
    job = with_pods(pytorch_input()["job"], annotations, "Never")
    job["metadata"] = {"name": name, "namespace": JOB_NAMESPACE}
    created: dict[str, Any] = client.CustomObjectsApi(admin_api).create_namespaced_custom_object(
        "kubeflow.org", "v1", JOB_NAMESPACE, PLURAL, job
    )
    return created


@pytest.fixture(scope="module")
def kubeconfig(control_plane: ControlPlane) -> Path:
    return control_plane.write_kubeconfig("admin")


def test_wait_succeeds_with_the_jobs_own_times_and_exit_0(
    control_plane: ControlPlane, admin_api: client.ApiClient, kubeconfig: Path
) -> None:
    create(admin_api, "cli-wait-ok", pod_annotations(run_duration="3s"))

    proc = person("wait", "pytorchjob/cli-wait-ok", "-n", JOB_NAMESPACE, "--kubeconfig", str(kubeconfig))

    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"waiting for PyTorchJob {JOB_NAMESPACE}/cli-wait-ok"
    end = lines.index("result: SUCCEEDED")
    assert lines[end - 1].split()[1:] == ["SUCCEEDED", "PyTorchJobSucceeded", "done"]
    output = json.loads("\n".join(lines[end + 1 :]))
    assert output["timesFrom"] == {"startedAt": "job", "finishedAt": "job"}
    job = get_job(control_plane, PLURAL, "cli-wait-ok")
    assert job is not None  # only read
    # The job's own run, as the operator wrote it (its Running condition to its completionTime, whole seconds),
    # not a wall-clock figure: on a loaded machine the operator sees the pods running a second or more late.
    running = next(c for c in job["status"]["conditions"] if c["type"] == "Running")
    started = datetime.fromisoformat(running["lastTransitionTime"])
    finished = datetime.fromisoformat(job["status"]["completionTime"])
    assert output["durationSeconds"] == (finished - started).total_seconds() > 0


def test_wait_of_a_failed_job_exits_3_with_the_containers_log_tail(
    control_plane: ControlPlane, admin_api: client.ApiClient, kubeconfig: Path
) -> None:
    control_plane.set_pod_log(LOG + "\nRuntimeError: CUDA out of memory")
    create(admin_api, "cli-wait-fail", pod_annotations("fail", run_duration="2s", exit_code=1))

    proc = person("wait", "cli-wait-fail", "-n", JOB_NAMESPACE, "--kubeconfig", str(kubeconfig), "--poll")

    assert proc.returncode == Phase.FAILED.exit_code == 3, proc.stdout + proc.stderr
    assert "result: FAILED  error: JobFailed" in proc.stdout
    assert proc.stdout.count("RuntimeError: CUDA out of memory") == 1
    cause = proc.stdout.split("cause:\n", 1)[1].split("\nlog tail:", 1)[0]
    assert json.loads(cause)["reason"] == "PyTorchJobFailed"


def test_the_library_call_gives_the_stuck_start_verdict_a_run_gives(
    control_plane: ControlPlane, admin_api: client.ApiClient, kubeconfig: Path
) -> None:
    """image-pull-backoff: FAILED once the stuck grace passed (FAST: seconds), as the scenario test's run."""
    create(admin_api, "cli-wait-stuck", pod_annotations("image-pull-backoff"))
    looks: list[Any] = []
    with _environment(FAST):
        result = jobsync.wait(
            "cli-wait-stuck", JOB_NAMESPACE, "pytorchjob", kubeconfig=str(kubeconfig), on_look=looks.append
        )

    assert (result.phase, result.state.reason) == (Phase.FAILED, "ImagePullBackOff")
    assert "ImagePullBackOff" in {d["reason"] for d in result.output()["diagnostics"]}
    assert result.exit_code == 3 and looks[-1].terminal
    assert get_job(control_plane, PLURAL, "cli-wait-stuck") is not None  # a wait deletes nothing


def test_logs_print_the_leading_replicas_log_and_follow_to_the_end(
    control_plane: ControlPlane, admin_api: client.ApiClient, kubeconfig: Path
) -> None:
    control_plane.set_pod_log(LOG)
    create(admin_api, "cli-logs", pod_annotations(run_duration="4s"))
    wait_for("the master's pod", lambda: _pod(admin_api, "cli-logs-master-0"), 60)

    followed = person("logs", "-f", "pytorchjob/cli-logs", "-n", JOB_NAMESPACE, "--kubeconfig", str(kubeconfig))
    once = person("logs", "cli-logs", "-n", JOB_NAMESPACE, "--kubeconfig", str(kubeconfig), "--replica", "worker-0")

    assert followed.returncode == 0, followed.stdout + followed.stderr
    assert followed.stdout.splitlines() == LOG.splitlines()  # each line once, however often it was read again
    assert "==> pod cli-logs-master-0, container pytorch" in followed.stderr
    assert followed.stderr.splitlines()[-1] == "==> PyTorchJob cli-logs ended SUCCEEDED"
    assert once.returncode == 0 and once.stdout.splitlines() == LOG.splitlines()
    assert "==> pod cli-logs-worker-0" in once.stderr


def test_logs_of_an_execution_read_the_job_its_submit_created(control_plane: ControlPlane, kubeconfig: Path) -> None:
    """The execution's history (over HTTP from the local run's AWS) names the job; the admin's kubeconfig reads it."""
    apply_role(control_plane, "PyTorchJob")
    control_plane.set_pod_log(LOG)
    with jobsync_run(control_plane) as local, moto_server() as server:
        result = local.run(pytorch_input(pod_annotations(run_duration="2s"), cleanup="never"), name="cli-logs-run")
        assert result.status == "SUCCEEDED", result.cause
        env = {**client_env(endpoint(server), base={}), "PATH": os.environ.get("PATH", "")}
        proc = person("logs", result.execution_arn, "--kubeconfig", str(kubeconfig), env=env)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == LOG.splitlines()
    assert f"==> pod {result.output['job']['name']}-master-0" in proc.stderr


def test_an_unreachable_kubeconfig_fails_at_once(control_plane: ControlPlane, tmp_path: Path) -> None:
    dead = control_plane.write_kubeconfig("admin", path=tmp_path / "dead", server="https://127.0.0.1:9")

    proc = person("wait", "anything", "--kubeconfig", str(dead), timeout=60)

    assert proc.returncode == 2 and "the API server does not answer" in proc.stderr, proc.stderr


def _pod(admin_api: client.ApiClient, name: str) -> Any:
    try:
        return client.CoreV1Api(admin_api).read_namespaced_pod(name, JOB_NAMESPACE)
    except client.ApiException:
        return None


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
