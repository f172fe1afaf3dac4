"""SAM CLI on the ``sam build`` artifact: ``sam local invoke`` and ``sam local start-lambda``.

SAM gives a function only the environment variables its template declares (values from the
template, then ``--env-vars``). The local runs need a few the deployed stack never sets: the
cluster as a URL (``JOBSYNC_KUBE_URL``), AWS as an endpoint (``AWS_ENDPOINT_URL``: the moto server)
and the test tunings of the e2e tier. ``local_template`` writes a copy of the built template beside
it (``.aws-sam/build/template.<pid>.yaml``, so every code and layer path is the build's own) whose
Globals declare those names too, empty; ``env_file`` gives their values. Handler paths, runtime,
memory, timeouts, layer and the template's own variables are the build's, untouched.

Invocations read the runtime's answer from the body: neither SAM nor the emulator sets
``X-Amz-Function-Error``, and ``sam local invoke`` exits 0 when the function failed.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lambda_runtime.daemon import Daemon

ROOT = Path(__file__).resolve().parent.parent
SAM = ROOT / ".venv-sam" / "bin" / "sam"
BUILD = ROOT / ".aws-sam" / "build"
#: template.yaml's functions by the name the state machine and the events use.
FUNCTIONS = {
    "submit": "SubmitFunction",
    "status": "StatusFunction",
    "cleanup": "CleanupFunction",
    "await": "AwaitFunction",
    "resume": "ResumeFunction",
    "evaluate": "EvaluateFunction",
}
#: ClusterName has no default; the stack name the built ARNs use (samconfig.toml's).
PARAMETERS = {"ClusterName": "local"}


_copies = itertools.count()


class SamError(RuntimeError):
    """SAM CLI failed; the message has what it printed."""


def sam_env(daemon: Daemon) -> dict[str, str]:
    """SAM CLI's environment: this daemon, no telemetry, its own venv first on PATH (sam build's python)."""
    path = f"{SAM.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**daemon.env(), "SAM_CLI_TELEMETRY": "0", "PATH": path}


def require_sam() -> Path:
    if not SAM.exists():
        raise SamError(f"SAM CLI missing at {SAM.relative_to(ROOT)}: run make build")
    return SAM


def sam_build(daemon: Daemon) -> float:
    """``sam build`` of template.yaml into .aws-sam/build (samconfig.toml: cached, parallel); seconds taken."""
    began = time.monotonic()
    done = subprocess.run(
        [str(require_sam()), "build", "--template", "template.yaml"],
        cwd=ROOT,
        env=sam_env(daemon),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SamError(f"sam build failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.monotonic() - began


def built() -> bool:
    return (BUILD / "template.yaml").exists()


def parameter_overrides(parameters: Mapping[str, str] | None = None) -> list[str]:
    merged = {**PARAMETERS, **(parameters or {})}
    return ["--parameter-overrides", " ".join(f"{key}={value}" for key, value in merged.items())]


@contextlib.contextmanager
def local_template(
    variables: Mapping[str, str], functions: Mapping[str, Mapping[str, Any]] | None = None
) -> Iterator[Path]:
    """A copy of the built template whose Globals also declare ``variables`` (empty); removed afterwards.

    ``functions`` changes properties of functions by logical id, for the error-name checks only (a
    Timeout of seconds, a MemorySize the runtime cannot start in).
    """
    template = yaml.safe_load((BUILD / "template.yaml").read_text())  # sam build writes the long form
    declared = template["Globals"]["Function"]["Environment"]["Variables"]
    for name in variables:
        declared.setdefault(name, "")
    for logical_id, properties in (functions or {}).items():
        template["Resources"][logical_id]["Properties"].update(properties)
    path = BUILD / f"template.{os.getpid()}.{next(_copies)}.yaml"
    path.write_text(yaml.safe_dump(template, sort_keys=False))
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def env_file(values: Mapping[str, str], per_function: Mapping[str, Mapping[str, str]] | None = None) -> Iterator[Path]:
    """SAM's --env-vars file: ``values`` for every function, ``per_function`` by logical id on top."""
    content: dict[str, Any] = {"Parameters": dict(values)}
    content.update({name: dict(extra) for name, extra in (per_function or {}).items()})
    with tempfile.NamedTemporaryFile("w", prefix="sam-env-", suffix=".json", delete=False) as handle:
        json.dump(content, handle)
    try:
        yield Path(handle.name)
    finally:
        Path(handle.name).unlink(missing_ok=True)


@dataclass
class Answer:
    """What the runtime answered: the payload, and the error it reports (``errorType``) if the function failed."""

    payload: Any  # the body as JSON, or its text when it is not JSON
    seconds: float
    log: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def error_type(self) -> str | None:
        if isinstance(self.payload, dict) and set(self.payload) >= {"errorType", "errorMessage"}:
            return str(self.payload["errorType"])
        return None


def invoke(
    daemon: Daemon,
    function: str,
    event: Path,
    template: Path,
    env_vars: Path,
    parameters: Mapping[str, str] | None = None,
) -> Answer:
    """``sam local invoke <Function> -e <event>``: a container of its own, started and removed for this call."""
    began = time.monotonic()
    command = [str(require_sam()), "local", "invoke", FUNCTIONS.get(function, function), "-t", str(template)]
    command += ["-e", str(event), "--env-vars", str(env_vars), "--skip-pull-image", *parameter_overrides(parameters)]
    done = subprocess.run(command, cwd=ROOT, env=sam_env(daemon), capture_output=True, text=True, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise SamError(f"sam local invoke {function} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return Answer(json.loads(done.stdout), time.monotonic() - began, done.stderr)


def _body(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class StartLambda:
    """``sam local start-lambda`` (a context manager): the Lambda Invoke API on 127.0.0.1, one warm container
    per function, started on its first invocation (``--warm-containers LAZY``) and reused after."""

    def __init__(
        self,
        daemon: Daemon,
        template: Path,
        env_vars: Path,
        parameters: Mapping[str, str] | None = None,
        log: Path | None = None,
        warm: str = "LAZY",
    ) -> None:
        self.daemon = daemon
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log or Path(tempfile.mkstemp(prefix="sam-local-", suffix=".log")[1])
        self.command = [str(require_sam()), "local", "start-lambda", "-t", str(template), "--env-vars", str(env_vars)]
        self.command += ["--skip-pull-image", "--host", "127.0.0.1", "--port", str(self.port)]
        self.command += ["--warm-containers", warm, *parameter_overrides(parameters)]
        self.process: subprocess.Popen[bytes] | None = None
        self.started_seconds = 0.0

    def __enter__(self) -> StartLambda:
        began = time.monotonic()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, env=sam_env(self.daemon), stdout=log, stderr=subprocess.STDOUT
            )
        while True:
            if self.process.poll() is not None:
                raise SamError(f"sam local start-lambda exited ({self.process.returncode}):\n{self.log()[-3000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                break
            if time.monotonic() - began > 120:
                self.__exit__(None, None, None)
                raise SamError(f"sam local start-lambda did not listen within 120s:\n{self.log()[-3000:]}")
            time.sleep(0.2)
        self.started_seconds = time.monotonic() - began
        return self

    def invoke(self, function: str, event: Any, timeout: float = 960) -> Answer:
        """Lambda's Invoke API (RequestResponse) on this server; ``function`` as in FUNCTIONS or a logical id."""
        name = FUNCTIONS.get(function, function)
        body = json.dumps(event).encode()
        request = urllib.request.Request(
            f"{self.url}/2015-03-31/functions/{name}/invocations", data=body, method="POST"
        )
        began = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw, status, headers = response.read(), response.status, dict(response.headers)
        except urllib.error.HTTPError as exc:
            raw, status, headers = exc.read(), exc.code, dict(exc.headers)
        return Answer(_body(raw), time.monotonic() - began, status=status, headers=headers)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def containers(self) -> list[str]:
        """The containers SAM said it created (its SAM_CONTAINER_ID lines)."""
        return re.findall(r"SAM_CONTAINER_ID: ([0-9a-f]{64})", self.log())

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # SAM stops and removes its warm containers
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        left = self.containers()
        if left:  # whatever SAM did not remove (it was killed): this run's containers only
            subprocess.run(["docker", "rm", "-f", *left], env=self.daemon.env(), capture_output=True, check=False)
