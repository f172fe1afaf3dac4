"""The Lambda side of a test: a context, the sample events, a quiet environment, a handler call.

Imports nothing heavy (no pytest, no harness at import time): ``bench.probe``
measures a handler's memory with this module loaded.
"""

from __future__ import annotations

import json
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
