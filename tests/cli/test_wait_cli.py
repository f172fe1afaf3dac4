"""`jobsync wait JOB --kubeconfig ...`: a subprocess against the local Kubernetes API, on the wall clock, no AWS.

The operator simulator moves the job in real time here (seconds), as a cluster would; the command
reads it through a kubeconfig, as a person's shell runs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from harness.kubeapi import KubeAPI
from harness.operator_sim import OperatorSim
from jobsync_cli import follow
from tests.support.cli import write_kubeconfig
from tests.support.kube import NAMESPACE, start_kube_api
from tests.support.lambdas import EVENTS, ROOT

LOOK = re.compile(r"^\+\d{2}:\d{2}:\d{2}  [A-Z_]+ +\S* +(next wait \d+s|done)$")


def jobsync(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "JOBSYNC_", "KUBECONFIG"))}
    return subprocess.run(
        [sys.executable, "-m", "jobsync_cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env, "PYTHONPATH": "layers/jobsync:cli", "AWS_CONFIG_FILE": os.devnull},
        timeout=timeout,
        check=False,
    )


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

    def stop(self) -> None:
        self.sim.stop()
        self.api.stop()


@pytest.fixture
def wall(tmp_path: Path) -> Iterator[WallCluster]:
    cluster = WallCluster(tmp_path)
    try:
        yield cluster
    finally:
        cluster.stop()


def test_wait_prints_a_line_per_look_then_the_result_and_exits_0(wall):
    wall.create("mnist", "success", pending_s=1, run_s=3)

    proc = jobsync("wait", "pytorchjob/mnist", "--kubeconfig", str(wall.kubeconfig))

    assert proc.returncode == follow.EXIT_SUCCEEDED, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"waiting for PyTorchJob {NAMESPACE}/mnist"  # the namespace is the context's
    end = lines.index("result: SUCCEEDED")
    looks = lines[1:end]
    assert looks and all(LOOK.match(line) for line in looks), looks
    assert looks[-1].split()[1:] == ["SUCCEEDED", "PyTorchJobSucceeded", "done"]
    output = json.loads("\n".join(lines[end + 1 :]))
    assert output["phase"] == "SUCCEEDED" and output["job"]["name"] == "mnist"
    assert output["timesFrom"] == {"startedAt": "job", "finishedAt": "job"}
    assert proc.stderr == ""


def test_a_failed_job_exits_3_with_its_cause_and_its_log_tail_once(wall):
    wall.create("oom", "failure", pending_s=1, run_s=2)

    proc = jobsync("wait", "oom", "-n", NAMESPACE, "--kubeconfig", str(wall.kubeconfig), "--poll")

    assert proc.returncode == follow.EXIT_JOB_FAILED, proc.stdout + proc.stderr
    assert "result: FAILED  error: JobFailed" in proc.stdout
    assert proc.stdout.count("CUDA error: out of memory") == 1
    assert wall.custom.get_namespaced_custom_object("kubeflow.org", "v1", NAMESPACE, "pytorchjobs", "oom")  # kept


def test_no_such_job_and_an_unknown_kind_are_one_line_and_exit_2(wall):
    missing = jobsync("wait", "absent", "--kubeconfig", str(wall.kubeconfig))
    unknown = jobsync("wait", "sparkjob/x", "--kubeconfig", str(wall.kubeconfig))

    for proc, message in ((missing, f"PyTorchJob {NAMESPACE}/absent: no such job"), (unknown, "unknown kind")):
        assert proc.returncode == follow.EXIT_BAD_INPUT, proc.stdout + proc.stderr
        assert message in proc.stderr and len(proc.stderr.splitlines()) == 1
        assert "Traceback" not in proc.stderr


def test_a_kubeconfig_whose_server_does_not_answer_fails_at_once_naming_it(tmp_path):
    kubeconfig = write_kubeconfig(tmp_path / "config", "https://127.0.0.1:9")

    proc = jobsync("wait", "mnist", "--kubeconfig", str(kubeconfig), timeout=60)

    assert proc.returncode == follow.EXIT_BAD_INPUT
    (line,) = proc.stderr.splitlines()
    assert "the API server does not answer" in line and str(kubeconfig) in line
    assert "127.0.0.1:9" not in line  # the endpoint stays out of messages
    assert proc.stdout == ""


def test_a_missing_kubeconfig_says_where_it_looked(tmp_path):
    proc = jobsync("wait", "mnist", "--kubeconfig", str(tmp_path / "nope"))

    assert proc.returncode == follow.EXIT_BAD_INPUT
    assert f"no kubeconfig at {tmp_path / 'nope'}" in proc.stderr
