"""The command line against the local run: ``python -m jobsync_cli`` as a subprocess, AWS over HTTP.

The server shares its backends with a LocalJobsync in this process, so an
execution that the subprocess starts over HTTP runs the real state machine with
the harness's in-process handlers, simulated cluster and virtual clock: hours of
Wait states pass at once, and the subprocess reads the history moto records.

The server is the harness's (``harness.aws_server.moto_server``): moto's server mode,
or without Flask the same dispatch under a plain werkzeug server.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from harness.aws_server import MOTO_CLOUDFORMATION, WerkzeugMotoServer, client_env, endpoint, moto_server
from harness.local import LocalJobsync
from tests.support.lambdas import EVENTS, QUIET, ROOT

INPUT = EVENTS / "run-job-input.json"
RUN_JOBS_INPUT = EVENTS / "run-jobs-input.json"


def cli_env(endpoint_url: str, **extra: str) -> dict[str, str]:
    """The environment a developer's shell gives the command: fake credentials, AWS at ``endpoint_url``."""
    return {**client_env(endpoint_url), "PYTHONPATH": "layers/jobsync:cli", **extra}


def jobsync(
    endpoint_url: str, *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m jobsync_cli ARGS`` as a developer runs it, against ``endpoint_url``, with fake credentials."""
    return subprocess.run(
        [sys.executable, "-m", "jobsync_cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env or cli_env(endpoint_url),
        timeout=timeout,
        check=False,
    )


@dataclass
class Terminal:
    """What a command wrote to a pseudo-terminal (escape codes and all), and its exit code."""

    raw: str
    code: int


def in_terminal(endpoint_url: str, *args: str, timeout: float = 120, columns: int = 140) -> Terminal:
    """``python -m jobsync_cli ARGS`` with a pseudo-terminal as its standard output, as a person runs it."""
    env = cli_env(endpoint_url, COLUMNS=str(columns), LINES="40", TERM="xterm-256color")
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, its output the terminal
        os.chdir(ROOT)
        os.execvpe(sys.executable, [sys.executable, "-m", "jobsync_cli", *args], env)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1)
            if not ready:
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:  # the child closed the terminal: it ended
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return Terminal(b"".join(chunks).decode(errors="replace"), os.waitstatus_to_exitcode(status))


def write_kubeconfig(path: Path, server: str, namespace: str | None = "ml-training") -> Path:
    """A person's kubeconfig for the local API (plain HTTP, no credentials), its context in ``namespace``."""
    context: dict[str, Any] = {"cluster": "local", "user": "me"}
    if namespace:
        context["namespace"] = namespace
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server}}],
        "users": [{"name": "me", "user": {}}],
        "contexts": [{"name": "local", "context": context}],
        "current-context": "local",
    }
    path.write_text(yaml.safe_dump(config))
    return path


class Service:
    """A LocalJobsync and the server for subprocesses; ``jobsync(...)`` runs the command line against it."""

    def __init__(self, local: LocalJobsync, server: Any) -> None:
        self.local = local
        self.server = server
        self.endpoint = endpoint(server)
        self.sfn = boto3.client("stepfunctions", region_name="us-east-1")  # in-process, through mock_aws
        machines = local.substitutions()
        self.state_machine_arn = machines["RunJobStateMachineArn"]
        self.run_jobs_arn = machines["RunJobsStateMachineArn"]

    def jobsync(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return jobsync(self.endpoint, *args, timeout=timeout)

    def outputs(self) -> dict[str, str]:
        """The outputs of the stack the local run stands for (template.yaml's, by the same keys)."""
        return {
            "StateMachineArn": self.state_machine_arn,
            "RunJobsStateMachineArn": self.run_jobs_arn,
            "TableName": os.environ.get("JOBSYNC_TABLE_NAME", ""),
        }

    def create_stack(
        self, name: str, outputs: dict[str, str] | None = None, parameters: dict[str, str] | None = None
    ) -> None:
        """A stack whose outputs are the local run's state machines and table (or ``outputs``), with ``parameters``."""
        outputs = self.outputs() if outputs is None else outputs
        parameters = parameters or {}
        if MOTO_CLOUDFORMATION:
            template = {
                "Parameters": {key: {"Type": "String", "Default": value} for key, value in parameters.items()},
                "Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
                "Outputs": {key: {"Value": value} for key, value in outputs.items()},
            }
            boto3.client("cloudformation", region_name="us-east-1").create_stack(
                StackName=name, TemplateBody=json.dumps(template)
            )
        elif isinstance(self.server, WerkzeugMotoServer):
            self.server.stacks[name] = {"Outputs": outputs, "Parameters": parameters}
        else:
            pytest.skip("moto's CloudFormation cannot be imported here (moto[cloudformation] extras missing)")

    def run(self, *args: str, input_path: Path = INPUT) -> subprocess.CompletedProcess[str]:
        return self.jobsync(
            "run", str(input_path), "--state-machine-arn", self.state_machine_arn, "--poll-interval", "0.1", *args
        )


@contextlib.contextmanager
def service(scenario: str, *, several: bool = False, **local: Any) -> Iterator[Service]:
    """The local run (``LocalJobsync(scenario, **local)``, quiet) with AWS served over HTTP for the command.

    ``several``: RunJobs will run, its children sharing the one virtual clock (as ``LocalJobsync.start_jobs``),
    and the ExecutionEnded rule cleaning up after the children failFast stops.
    """
    env = {**QUIET, **local.pop("env", {})}
    if several:
        local.setdefault("execution_events", True)
    with LocalJobsync(scenario, env=env, **local) as running, moto_server() as server:
        if several:
            assert running.sfn is not None
            running.sfn.cooperative_waits = True
        yield Service(running, server)
