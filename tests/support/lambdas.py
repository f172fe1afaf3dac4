"""The Lambda side of a test: a context, the sample events, a quiet environment, a handler call.

Imports nothing heavy (no pytest, no harness at import time): ``bench.probe``
measures a handler's memory with this module loaded.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"

# Powertools without the noise: warnings and errors only, no EMF metric lines on stdout.
QUIET = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}


@dataclass
class FakeLambdaContext:
    """The attributes Powertools reads from a real LambdaContext; the ARN and log group follow the name."""

    function_name: str = "jobsync-test"
    function_version: str = "$LATEST"
    invoked_function_arn: str = ""
    memory_limit_in_mb: int = 256
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    log_group_name: str = ""
    log_stream_name: str = "test"

    def __post_init__(self) -> None:
        if not self.invoked_function_arn:
            self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"
        if not self.log_group_name:
            self.log_group_name = f"/aws/lambda/{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def load_event(name: str) -> Any:
    """A sample event from events/, the same file `sam local invoke -e` takes."""
    return json.loads((EVENTS / name).read_text())


def invoke(function: str, event: Any, context: FakeLambdaContext | None = None) -> Any:
    """functions/<function>/app.py's handler, called in-process as Lambda calls it."""
    from harness.local import load_handler  # pulls in moto: only when a handler is called

    return load_handler(function).lambda_handler(event, context or FakeLambdaContext())


# A sampled trace, as the Lambda runtime sets _X_AMZN_TRACE_ID for an invocation under Tracing: Active.
TRACE_ID = "Root=1-67a1b2c3-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1"


def lambda_like_env(
    function: str, tracing: bool, settings: dict[str, str] | None = None, memory_mb: int = 256
) -> dict[str, str]:
    """The environment the AWS Lambda Python 3.11 runtime gives functions/<function>/app.py, and nothing else.

    What Lambda sets (docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html,
    "Defined runtime environment variables"), with the function's directory as
    LAMBDA_TASK_ROOT (/var/task) and PYTHONPATH as the layer puts it: the
    function's directory, then the layer's (/opt/python; its pinned dependencies
    come from this interpreter's site-packages). Then template.yaml's Globals
    (Powertools) and ``settings`` (JOBSYNC_*). ``tracing``: X-Ray as deployed
    (``Tracing: Active``): a sampled _X_AMZN_TRACE_ID and the daemon's address,
    here loopback (Lambda's is 169.254.79.129:2000), so segments reach no one;
    otherwise POWERTOOLS_TRACE_DISABLED=true. Credentials are fake: nothing may
    reach AWS.
    """
    task_root = ROOT / "functions" / function
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
        "LAMBDA_TASK_ROOT": str(task_root),
        "LAMBDA_RUNTIME_DIR": "/var/runtime",
        "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001",
        "AWS_LAMBDA_FUNCTION_NAME": f"jobsync-{function}",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb),
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/jobsync-{function}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "2026/01/01/[$LATEST]00000000000000000000000000000000",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "AKIDLAMBDALIKE",
        "AWS_SECRET_ACCESS_KEY": "not-a-secret-lambda-like",
        "AWS_SESSION_TOKEN": "not-a-session-token-lambda-like",
        "_HANDLER": "app.lambda_handler",
        "PYTHONPATH": os.pathsep.join([str(task_root), str(ROOT / "layers" / "jobsync")]),
        "POWERTOOLS_SERVICE_NAME": "jobsync",
        "POWERTOOLS_METRICS_NAMESPACE": "jobsync",
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }
    if tracing:
        env |= {
            "_X_AMZN_TRACE_ID": TRACE_ID,
            "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
            "_AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1",
            "_AWS_XRAY_DAEMON_PORT": "2000",
            "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
        }
    else:
        env["POWERTOOLS_TRACE_DISABLED"] = "true"
    return env | (settings or {})
