"""Fixtures every test folder shares: a Lambda context and the sample events."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# Powertools as the template's Globals configure it, minus what needs AWS.
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "jobsync")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "jobsync")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ROOT / "events"
SHARED = ROOT.parent / "shared"


@dataclass
class FakeLambdaContext:
    """The attributes Powertools reads from a real LambdaContext."""

    function_name: str = "jobsync-test"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:jobsync-test"
    memory_limit_in_mb: int = 256
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    log_group_name: str = "/aws/lambda/jobsync-test"
    log_stream_name: str = "test"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


def load_event(name: str) -> Any:
    """A sample event from events/, the same file `sam local invoke -e` takes."""
    return json.loads((EVENTS / name).read_text())


@pytest.fixture
def event_loader():
    return load_event


@pytest.fixture
def pinned_clock():
    """jobsync's clock stopped at a time the test sets: ``pinned_clock("2026-11-29T11:00:00Z")``."""
    from jobsync import clock

    def pin(when: str) -> float:
        at = clock.parse(when)
        assert at is not None, when
        clock.set_clock(lambda: at)
        return at

    yield pin
    clock.set_clock(None)


def shared_path(*parts: str) -> Path:
    """A path under ../shared; the test skips when the folder is not beside the project."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared/{'/'.join(parts)} is not available")
    return path
