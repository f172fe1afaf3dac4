"""`jobsync logs EXECUTION|JOB [-f]` against the local run: the job's own pods only, the leading replica first.

The command is a subprocess: AWS (for an execution's history) over HTTP from the local run's moto
backends, the cluster through a kubeconfig of the local Kubernetes API.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from harness.kubeapi import KubeAPI
from harness.operator_objects import CONTAINER, _training_log
from harness.operator_sim import OOM_TRACEBACK, OperatorSim
from jobsync_cli import follow
from tests.support.cli import INPUT, RUN_JOBS_INPUT, Service, jobsync, service, write_kubeconfig
from tests.support.kube import NAMESPACE, start_kube_api
from tests.support.lambdas import EVENTS


def kept_input(tmp_path: Path) -> Path:
    """The sample input with cleanup never: the job stays, to be read after its run ended."""
    execution_input = json.loads(INPUT.read_text())
    execution_input["cleanup"] = "never"
    path = tmp_path / "input.json"
    path.write_text(json.dumps(execution_input))
    return path


def ended_run(svc: Service, tmp_path: Path) -> tuple[str, str, Path]:
    """An execution run to its end; its ARN, its job's name, and a kubeconfig of the cluster."""
    proc = svc.run("--no-follow", input_path=kept_input(tmp_path))
    arn = proc.stdout.strip()
    svc.local.sfn.wait(arn, timeout_s=120)
    assert svc.local.api is not None
    job = next(job for job in svc.local.jobs_left() if job["name"].startswith("pytorch-simple-"))
    return arn, job["name"], write_kubeconfig(tmp_path / "config", svc.local.api.url)


def test_logs_of_an_execution_print_its_leading_replica_and_a_named_one(tmp_path):
    with service("failure") as svc:
        arn, name, kubeconfig = ended_run(svc, tmp_path)

        leading = svc.jobsync("logs", arn, "--kubeconfig", str(kubeconfig))
        worker = svc.jobsync("logs", arn, "--kubeconfig", str(kubeconfig), "--replica", "worker-0")
        missing = svc.jobsync("logs", arn, "--kubeconfig", str(kubeconfig), "--replica", "worker-5")

    assert leading.returncode == follow.EXIT_SUCCEEDED, leading.stderr
    assert leading.stdout == _training_log("Master", 0, done=False)  # PyTorchJob: the master leads
    assert f"==> pod {name}-master-0, container {CONTAINER}" in leading.stderr
    assert worker.returncode == 0, worker.stderr
    assert worker.stdout == _training_log("Worker", 0, done=False) + OOM_TRACEBACK
    assert missing.returncode == follow.EXIT_BAD_INPUT
    assert "has no replica worker-5 (master-0, worker-0)" in missing.stderr


def test_a_pod_that_only_carries_the_jobs_labels_is_never_read(tmp_path):
    with service("success") as svc:
        arn, name, kubeconfig = ended_run(svc, tmp_path)
        api = svc.local.api
        assert api is not None
        real = api.get(("", "v1", "pods", NAMESPACE, f"{name}-master-0"))
        assert real is not None
        impostor = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "impostor", "namespace": NAMESPACE, "labels": dict(real["metadata"]["labels"])},
            "spec": real["spec"],
            "status": real["status"],
        }
        api.put(("", "v1", "pods", NAMESPACE, "impostor"), impostor)
        api.set_pod_log(NAMESPACE, "impostor", CONTAINER, "a stranger's secrets\n")
        api.delete(("", "v1", "pods", NAMESPACE, f"{name}-master-0"))  # the master gone: only the impostor is one

        proc = svc.jobsync("logs", arn, "--kubeconfig", str(kubeconfig))

    assert proc.returncode == 0, proc.stderr
    assert "a stranger's secrets" not in proc.stdout
    assert f"==> pod {name}-worker-0" in proc.stderr  # the job's own next leader: worker 0
    assert proc.stdout == _training_log("Worker", 0, done=True)


def test_an_execution_that_created_no_job_says_so(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"job": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}}))
    with service("success") as svc:
        arn = svc.run("--no-follow", input_path=path).stdout.strip()
        svc.local.sfn.wait(arn, timeout_s=60)
        assert svc.local.api is not None
        kubeconfig = write_kubeconfig(tmp_path / "config", svc.local.api.url)

        proc = svc.jobsync("logs", arn, "--kubeconfig", str(kubeconfig))

    assert proc.returncode == follow.EXIT_BAD_INPUT
    assert f"{arn} created no job: its Submit did not answer" in proc.stderr


class WallCluster:
    """The local API with the simulator stepping on the wall clock: a job runs for seconds."""

    def __init__(self, tmp: Path) -> None:
        self.api: KubeAPI = start_kube_api(clock=time.time)
        self.sim = OperatorSim(self.api, time.time)
        self.sim.run_in_background(0.1)
        self.kubeconfig = write_kubeconfig(tmp / "config", self.api.url)
        config = k8s.Configuration()
        config.host = self.api.url
        self.custom = k8s.CustomObjectsApi(k8s.ApiClient(config))

    def create(self, name: str, scenario: str, **timings: float) -> dict[str, Any]:
        job = json.loads((EVENTS / "run-job-input.json").read_text())["job"]
        job["metadata"] = {"name": name, "namespace": NAMESPACE}
        self.sim.plan(NAMESPACE, name, scenario, **timings)
        created: dict[str, Any] = self.custom.create_namespaced_custom_object(
            "kubeflow.org", "v1", NAMESPACE, "pytorchjobs", job
        )
        return created


def test_follow_prints_each_line_once_until_the_job_ends(tmp_path):
    wall = WallCluster(tmp_path)
    try:
        wall.create("mnist", "success", pending_s=1, run_s=6)
        started = jobsync(
            "http://127.0.0.1:9", "logs", "-f", "pytorchjob/mnist", "--kubeconfig", str(wall.kubeconfig), timeout=120
        )
        failed_name = "oom"
        wall.create(failed_name, "failure", pending_s=1, run_s=3)
        failed = jobsync(
            "http://127.0.0.1:9",
            "logs",
            "-f",
            failed_name,
            "--replica",
            "worker-0",
            "--kubeconfig",
            str(wall.kubeconfig),
            timeout=120,
        )
    finally:
        wall.sim.stop()
        wall.api.stop()

    assert started.returncode == follow.EXIT_SUCCEEDED, started.stderr
    # The running log, then what the master wrote by its end: each line once, in order.
    assert started.stdout == _training_log("Master", 0, done=True)
    assert started.stderr.splitlines()[-1] == "==> PyTorchJob mnist ended SUCCEEDED"
    assert failed.returncode == follow.EXIT_JOB_FAILED, failed.stderr
    assert failed.stdout == _training_log("Worker", 0, done=False) + OOM_TRACEBACK
    assert failed.stderr.splitlines()[-1] == "==> PyTorchJob oom ended FAILED"


def test_a_run_of_several_jobs_names_what_to_give_instead(tmp_path):
    with service("success", several=True) as svc:
        svc.create_stack("jobsync")
        arn = svc.local.sfn.start(svc.run_jobs_arn, json.loads(RUN_JOBS_INPUT.read_text()))
        svc.local.sfn.wait(arn, timeout_s=120)
        assert svc.local.api is not None
        kubeconfig = write_kubeconfig(tmp_path / "config", svc.local.api.url)

        proc = svc.jobsync("logs", arn, "--kubeconfig", str(kubeconfig))

    assert proc.returncode == follow.EXIT_BAD_INPUT
    assert f"{arn} runs several jobs (RunJobs): give one job's execution" in proc.stderr
