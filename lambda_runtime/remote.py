"""The state machine's Lambda tasks answered in the Lambda runtime: ``sam local start-lambda`` behind the harness.

The harness runs the real ASL in moto's interpreter and, by default, the handlers in-process
(harness.sfn.lambdas). ``containerised`` swaps each of LocalJobsync's functions for a handler that
invokes the same function of the ``sam build`` artifact through SAM's Invoke API, and reports what the
runtime answered as AWS's Lambda service would (``service.service_error``), so every Retry and Catch
sees the names it sees in AWS. The containers reach the cluster at ``kube_url`` (url mode: the local
API through a relay, or the e2e tier's API server through ``relay.KubeProxy``) and AWS (moto, the run's
own backends over HTTP) through a relay on the bridge's gateway, with this process's JOBSYNC_* and
POWERTOOLS_* settings.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from lambda_runtime import sam
from lambda_runtime.daemon import Daemon
from lambda_runtime.relay import relayed
from lambda_runtime.service import service_error


class FunctionError(Exception):
    """A function error from the runtime in the container; ``lambda_error`` is the payload Lambda returns."""

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__(str(payload.get("errorMessage", "")))
        self.lambda_error = payload


def ready() -> tuple[Daemon | None, str]:
    """A daemon that answers and has the Lambda image, with sam build's output beside; or None and what is missing."""
    from lambda_runtime.daemon import answering
    from lambda_runtime.image import IMAGE

    daemon = answering()
    if daemon is None:
        return None, "no Docker daemon answers (DOCKER_HOST or the default socket)"
    image = subprocess.run(["docker", "image", "inspect", IMAGE], env=daemon.env(), capture_output=True, check=False)
    if image.returncode != 0:
        return None, f"the daemon at {daemon.host} has no {IMAGE}"
    if not sam.built() or not sam.SAM.exists():
        return None, "no sam build output in .aws-sam/build"
    return daemon, ""


def local_settings(kube_url: str, aws_url: str) -> dict[str, str]:
    """This process's jobsync and Powertools settings, the cluster at ``kube_url`` (url mode), AWS at ``aws_url``."""
    env = {key: value for key, value in os.environ.items() if key.startswith(("JOBSYNC_", "POWERTOOLS_"))}
    for key in ("KUBECONFIG", "JOBSYNC_KUBE_CONTEXT"):
        env.pop(key, None)
    env.update(JOBSYNC_CLUSTER_MODE="url", JOBSYNC_KUBE_URL=kube_url, AWS_ENDPOINT_URL=aws_url)
    return env


class RemoteHandler:
    """A handler (event, context) that invokes ``function`` on ``server``; raises FunctionError for an error.

    ``calls`` counts the invocations it sent to SAM's Invoke API.
    """

    def __init__(self, server: sam.StartLambda, function: str) -> None:
        self.server = server
        self.function = function
        self.calls = 0

    def __call__(self, event: Any, context: Any) -> Any:
        self.calls += 1
        answer = self.server.invoke(self.function, event)
        died = answer.payload is None or answer.payload == ""
        log = self.server.log() if died else ""
        error = service_error(answer.payload, getattr(context, "aws_request_id", "local"), log)
        if error is not None:
            raise FunctionError(error)
        return answer.payload


def warm_up(server: sam.StartLambda, functions: tuple[str, ...]) -> None:
    """One call each, in turn, with an event every function refuses (InvalidInput): SAM builds its image,
    starts its container and the runtime imports the handler, as after a deployed function's first call.

    A run's timing then is the functions' own, not SAM's first-call work (10 to 20 s a function here, when
    the machine is loaded): a callback-mode Await that times out in seconds (the tests' lowered graces) would
    otherwise poll before a cold Resume answers. The cold start itself is measured by bench/container.py.
    """
    for name in functions:  # at once, SAM answered one of six first calls with an empty body
        answer = server.invoke(name, {"warmUp": True})
        if not (isinstance(answer.payload, dict) and answer.payload.get("errorType") == "InvalidInput"):
            raise sam.SamError(f"{name} did not start in its container: {answer.payload!r}")


@contextlib.contextmanager
def containerised(
    local: Any,
    daemon: Daemon,
    gateway: str,
    kube_url: str,
    log: Path | None = None,
    warm: str = "LAZY",
) -> Iterator[sam.StartLambda]:
    """LocalJobsync ``local``'s functions served from containers while in the block; in-process again after."""
    from harness.local import FUNCTIONS

    assert local.sfn is not None
    mode = os.environ.get("JOBSYNC_COMPLETION_MODE", "poll")
    parameters: Mapping[str, str] = {"CompletionMode": mode}
    with contextlib.ExitStack() as exits:
        aws_url = exits.enter_context(relayed(gateway, local._aws_endpoint()))
        values = local_settings(kube_url, aws_url)
        template = exits.enter_context(sam.local_template(values))
        env_vars = exits.enter_context(sam.env_file(values))
        server = exits.enter_context(sam.StartLambda(daemon, template, env_vars, parameters, log=log, warm=warm))
        warm_up(server, FUNCTIONS)
        saved = dict(local.sfn.handlers)
        local.sfn.handlers.update({f"jobsync-{name}": RemoteHandler(server, name) for name in FUNCTIONS})
        try:
            yield server
        finally:
            local.sfn.handlers.clear()
            local.sfn.handlers.update(saved)
