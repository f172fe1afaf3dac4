"""Every AWS client the code makes is held to short timeouts and few attempts, and no call can outlast a Lambda.

botocore's defaults (60 s to connect, 60 s to read, retried) equal the functions' 60 s timeout: in a VPC
without a route to a service a single call would hang the invocation, and the state machine would retry
it into the same wall. These tests build each client the way the code does and read its configuration,
and hold a real botocore client against a socket that never answers to its bound.
"""

from __future__ import annotations

import ast
import socket
import threading
import time
from pathlib import Path

import pytest

from jobsync import aws, runtime
from jobsync.cluster import connection, eks_token
from tests.cfn import load_template

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    ROOT / "layers" / "jobsync" / "jobsync",
    ROOT / "notifier" / "jobsync_notifier",
    ROOT / "functions",
    ROOT / "cli" / "jobsync_cli",
]
LAMBDA_TIMEOUT = load_template()["Globals"]["Function"]["Timeout"]


@pytest.fixture
def deployed(monkeypatch):
    monkeypatch.setenv("JOBSYNC_TABLE_NAME", "jobsync-table")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    runtime.reset()
    yield
    runtime.reset()


def clients() -> dict[str, object]:
    from jobsync_cli import aws as cli_aws
    from jobsync_notifier.publish import EventBridgePublisher

    return {
        "s3 (templates)": runtime._s3(),
        "dynamodb (tokens)": runtime.table().meta.client,
        "dynamodb (hints)": runtime._hints_table().meta.client,
        "stepfunctions": runtime.stepfunctions(),
        "eks": connection._eks("us-east-1"),
        "sts (token presigning)": eks_token.sts_client("us-east-1"),
        "events (notifier)": EventBridgePublisher("jobsync-jobs")._client,
        "stepfunctions (jobsync run)": cli_aws.client("stepfunctions", "us-east-1"),
    }


def test_every_client_connects_within_seconds_and_tries_a_bounded_number_of_times(deployed):
    for name, client in clients().items():
        config = client.meta.config
        assert config.connect_timeout <= 2, name
        assert config.read_timeout <= 6, name
        assert config.retries["mode"] == "standard", name
        assert 1 <= config.retries["total_max_attempts"] <= 3, name


def test_no_call_can_outlast_the_function_that_makes_it():
    assert aws.CALL.worst_case_seconds() < LAMBDA_TIMEOUT
    # A hint is looked up after the job exists: one short attempt, a few seconds at worst.
    assert aws.BEST_EFFORT.attempts == 1
    assert aws.BEST_EFFORT.worst_case_seconds() <= 3


def test_the_code_makes_aws_clients_only_through_jobsync_aws():
    """A client made elsewhere would get botocore's 60 s defaults back."""
    offenders = []
    for folder in SOURCES:
        for path in folder.rglob("*.py"):
            if path == ROOT / "layers/jobsync/jobsync/aws/__init__.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in {"client", "resource"}
                    and _is_boto(node.func.value)
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def _is_boto(value: ast.expr) -> bool:
    text = ast.unparse(value)
    return "boto3" in text or "session" in text.lower()


@pytest.fixture
def silent_endpoint():
    """A TCP endpoint that accepts connections and never answers: a route that leads nowhere."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_a_call_to_an_endpoint_that_never_answers_fails_within_its_bound(deployed, silent_endpoint):
    from botocore.exceptions import ReadTimeoutError

    table = aws.resource("dynamodb", aws.BEST_EFFORT, endpoint_url=silent_endpoint).Table("jobsync-table")
    began = time.monotonic()
    with pytest.raises(ReadTimeoutError):
        table.get_item(Key={"pk": "family#mnist"})
    assert time.monotonic() - began < aws.BEST_EFFORT.worst_case_seconds() + 2


def test_a_hint_table_that_never_answers_costs_a_submit_seconds_and_never_its_job(deployed, silent_endpoint):
    """Submit creates the job first: a hint lookup that hung or failed there would leave the job running
    under an execution that ends SubmitFailed. One short attempt, then the run goes on without a hint."""
    import json

    from jobsync.aws.hints import HintStore
    from jobsync.run.inputs import SubmitRequest
    from jobsync.run.submit import submit
    from jobsync.settings import Settings
    from tests.support.cluster import RecordingCluster
    from tests.support.lambdas import load_event

    job = json.loads(json.dumps(load_event("run-job-input.json")["job"]))
    execution = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:hint-hangs"
    table = aws.resource("dynamodb", aws.BEST_EFFORT, endpoint_url=silent_endpoint).Table("jobsync-table")
    cluster = RecordingCluster(expect={"create"})
    began = time.monotonic()
    state = submit(SubmitRequest(execution=execution, job=job), cluster, Settings(), lambda uri: "", HintStore(table))
    assert time.monotonic() - began < aws.BEST_EFFORT.worst_case_seconds() + 2
    assert [call for call, _ in cluster.calls] == ["create"]
    assert state.expectedDurationSeconds is None and state.hintSource is None
    assert state.job.uid and state.phase == "PENDING"
