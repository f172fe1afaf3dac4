"""jobsync_cli.follow: execution history events to lines, an outcome and an exit code; the follow loop.

Two sources of events: a history captured from a LocalJobsync run (moto's shapes,
tests/data/follow_history_failure.json), and events built as the Step Functions
service sends them through boto3 (datetimes, the Invoke result with its
SdkHttpMetadata, Payload an object).
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from jobsync_cli import follow
from jobsync_cli.main import build_parser
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "data" / "follow_history_failure.json"
START = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
ARN = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:t1"
JOB = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": "t1-abc", "uid": "u"}


def captured() -> list[dict[str, Any]]:
    return json.loads(FIXTURE.read_text())["events"]


class History:
    """Events in the service's shapes, ids and previousEventIds in order."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.add(
            "ExecutionStarted", 0, executionStartedEventDetails={"input": "{}", "roleArn": "arn:aws:iam::1:role/r"}
        )

    def add(self, kind: str, at: float, **details: Any) -> History:
        event_id = len(self.events) + 1
        self.events.append(
            {
                "timestamp": START + timedelta(seconds=at),
                "type": kind,
                "id": event_id,
                "previousEventId": event_id - 1,
                **details,
            }
        )
        return self

    def task(self, state: str, at: float, payload: Any) -> History:
        """A lambda:invoke Task that succeeded: TaskSucceeded.output is the whole Invoke result as JSON."""
        invoke_result = {
            "ExecutedVersion": "$LATEST",
            "Payload": payload,
            "SdkHttpMetadata": {"AllHttpHeaders": {"X-Amz-Executed-Version": ["$LATEST"]}, "HttpStatusCode": 200},
            "SdkResponseMetadata": {"RequestId": "r"},
            "StatusCode": 200,
        }
        self.add("TaskStateEntered", at, stateEnteredEventDetails={"name": state, "input": "{}"})
        self.add("TaskScheduled", at, taskScheduledEventDetails={"resourceType": "lambda", "resource": "invoke"})
        self.add("TaskStarted", at, taskStartedEventDetails={"resourceType": "lambda", "resource": "invoke"})
        self.add(
            "TaskSucceeded",
            at,
            taskSucceededEventDetails={
                "resourceType": "lambda",
                "resource": "invoke",
                "output": json.dumps(invoke_result),
            },
        )
        return self.add("TaskStateExited", at, stateExitedEventDetails={"name": state, "output": "{}"})

    def poll(self, state: str, at: float, phase: str, reason: str, wait: int = 30, **extra: Any) -> History:
        terminal = phase in ("SUCCEEDED", "FAILED", "STOPPED", "NOT_FOUND", "TIMED_OUT", "ERROR")
        payload = {
            "job": JOB,
            "phase": phase,
            "reason": reason,
            "terminal": terminal,
            "waitSeconds": 0 if terminal else wait,
        }
        return self.task(state, at, {**payload, **extra})

    def failed(self, at: float, error: str, cause: str) -> History:
        self.add("FailStateEntered", at, stateEnteredEventDetails={"name": "X", "input": "{}"})
        return self.add("ExecutionFailed", at, executionFailedEventDetails={"error": error, "cause": cause})


def run_to(phase: str, reason: str) -> History:
    history = History().poll("Submit", 0, "PENDING", "NoStatus")
    history.add("WaitStateEntered", 0, stateEnteredEventDetails={"name": "Wait"})
    history.poll("Status", 30, "RUNNING", "PyTorchJobRunning", wait=45)
    history.poll("Status", 75, phase, reason)
    return history.task("Cleanup", 75, {"job": JOB, "deleted": True})


# --------------------------------------------------------------------- the captured moto history


def test_captured_history_gives_a_line_for_submit_and_each_status():
    reader = follow.HistoryReader()
    lines = [poll.line() for poll in reader.feed(captured())]

    assert lines == [
        "+00:00:00  PENDING    NoStatus                     next wait 30s",
        "+00:00:30  PENDING    PyTorchJobCreated            next wait 38s",
        "+00:01:08  RUNNING    PyTorchJobRunning            next wait 30s",
        "+00:01:38  RUNNING    PyTorchJobRunning            next wait 30s",
        "+00:02:08  RUNNING    PyTorchJobRunning            next wait 30s",
        "+00:02:38  RUNNING    PyTorchJobRunning            next wait 34s",
        "+00:03:12  FAILED     PyTorchJobFailed             done",
    ]
    assert [poll.state for poll in reader.polls] == ["Submit"] + ["Status"] * 6
    assert reader.outcome is not None
    assert (reader.outcome.status, reader.outcome.error) == ("FAILED", "JobFailed")
    assert reader.outcome.exit_code == follow.EXIT_JOB_FAILED == 3
    assert reader.last_state is not None and reader.last_state["phase"] == "FAILED"


def test_captured_failure_result_pretty_prints_the_cause_and_the_log_tail():
    reader = follow.HistoryReader()
    reader.feed(captured())
    assert reader.outcome is not None
    lines = reader.outcome.lines()

    assert lines[:2] == ["result: FAILED  error: JobFailed", "cause:"]
    cause = json.loads(lines[2])
    assert cause["reason"] == "PyTorchJobFailed"
    assert "\n" in lines[2]  # indented over several lines
    assert lines[3] == "log tail:"
    assert "CUDA error: out of memory" in lines[4]
    assert "\\n" not in lines[4]  # the log as text, not as a JSON string
    assert "\n".join(lines).count("CUDA error: out of memory") == 1  # printed once, not in the Cause as well
    assert "logTail" not in cause


def test_each_event_is_used_once_when_the_history_is_read_again():
    events = captured()
    reader = follow.HistoryReader()
    first = reader.feed(events[:40])
    again = reader.feed(events)  # moto hands the whole history back on every read

    assert len(first) + len(again) == 7
    assert reader.feed(events) == []


# --------------------------------------------------------------------- the service's shapes, every outcome


@pytest.mark.parametrize(
    ("phase", "reason", "error", "code"),
    [
        ("FAILED", "PyTorchJobFailed", "JobFailed", 3),
        ("STOPPED", "PyTorchJobDeleting", "JobStopped", 4),
        ("TIMED_OUT", "DeadlinePassed", "JobTimedOut", 5),
        ("NOT_FOUND", "NotFound", "JobNotFound", 6),
        ("ERROR", "", "TransientClusterError", 7),
    ],
)
def test_job_outcomes_have_their_exit_codes(phase, reason, error, code):
    history = run_to(phase, reason).failed(80, error, json.dumps({"job": JOB, "reason": reason}))
    reader = follow.HistoryReader()
    lines = [poll.line() for poll in reader.feed(history.events)]

    assert lines[0] == "+00:00:00  PENDING    NoStatus                     next wait 30s"
    assert lines[1] == "+00:00:30  RUNNING    PyTorchJobRunning            next wait 45s"
    assert lines[2].split()[:2] == ["+00:01:15", phase]
    assert lines[2].endswith("done")
    assert len(lines) == 3  # Cleanup's result is no loop state
    assert reader.outcome is not None
    assert reader.outcome.exit_code == code
    assert reader.outcome.lines()[0] == f"result: FAILED  error: {error}"


def test_success_gives_exit_0_and_the_output():
    history = run_to("SUCCEEDED", "PyTorchJobSucceeded")
    history.add("SucceedStateEntered", 80, stateEnteredEventDetails={"name": "Succeeded", "input": "{}"})
    output = {"job": JOB, "phase": "SUCCEEDED", "polls": 2, "deleted": False}
    history.add("ExecutionSucceeded", 80, executionSucceededEventDetails={"output": json.dumps(output)})
    reader = follow.HistoryReader()
    reader.feed(history.events)

    assert reader.outcome == follow.Outcome("SUCCEEDED", output, None, None)
    assert reader.outcome.exit_code == 0
    assert reader.outcome.lines() == ["result: SUCCEEDED", json.dumps(output, indent=2)]


def test_a_task_failure_is_a_line_and_submit_failed_is_another_error():
    history = History()
    history.add("TaskStateEntered", 0, stateEnteredEventDetails={"name": "Submit", "input": "{}"})
    cause = {"errorMessage": "job.kind: v1/Pod is not allowed here", "errorType": "InvalidInput"}
    history.add("TaskFailed", 1, taskFailedEventDetails={"error": "InvalidInput", "cause": json.dumps(cause)})
    history.failed(1, "InvalidInput", json.dumps(cause))
    reader = follow.HistoryReader()

    assert [poll.line() for poll in reader.feed(history.events)] == [
        "+00:00:01  ERROR      InvalidInput                 Submit failed"
    ]
    assert reader.outcome is not None
    assert reader.outcome.exit_code == follow.EXIT_OTHER_ERROR
    assert json.loads(reader.outcome.lines()[2]) == cause


@pytest.mark.parametrize(
    ("kind", "key", "status"),
    [
        ("ExecutionAborted", "executionAbortedEventDetails", "ABORTED"),
        ("ExecutionTimedOut", "executionTimedOutEventDetails", "TIMED_OUT"),
    ],
)
def test_aborted_and_timed_out_executions_are_other_errors(kind, key, status):
    history = History().poll("Submit", 0, "PENDING", "NoStatus").add(kind, 600, **{key: {"error": "x", "cause": "y"}})
    reader = follow.HistoryReader()
    reader.feed(history.events)

    assert reader.outcome is not None
    assert reader.outcome.status == status
    assert reader.outcome.exit_code == follow.EXIT_OTHER_ERROR
    assert reader.outcome.lines() == [f"result: {status}  error: x", "cause:", "y"]


def test_every_outcome_has_its_own_exit_code():
    codes = [
        follow.Outcome("SUCCEEDED").exit_code,
        follow.EXIT_BAD_INPUT,
        *(follow.Outcome("FAILED", error=error).exit_code for error in follow.JOB_ERRORS),
        follow.Outcome("FAILED", error="Lambda.Unknown").exit_code,
        follow.Outcome("RUNNING").exit_code,
    ]
    assert codes == [0, 2, 3, 4, 5, 6, 7, 8]
    assert follow.Outcome("ABORTED").exit_code == follow.Outcome("TIMED_OUT").exit_code == 7


def test_a_payload_sent_as_a_json_string_and_a_bare_lambda_resource_are_read():
    loop = {"job": JOB, "phase": "RUNNING", "reason": "PyTorchJobRunning", "waitSeconds": 60}
    history = History().task("Status", 5, json.dumps(loop))
    history.add("TaskStateEntered", 65, stateEnteredEventDetails={"name": "Status"})
    history.add("LambdaFunctionSucceeded", 65, lambdaFunctionSucceededEventDetails={"output": json.dumps(loop)})

    lines = [poll.line() for poll in follow.HistoryReader().feed(history.events)]

    assert lines == [
        "+00:00:05  RUNNING    PyTorchJobRunning            next wait 60s",
        "+00:01:05  RUNNING    PyTorchJobRunning            next wait 60s",
    ]


def test_timestamps_as_boto3_datetimes_iso_text_or_numbers():
    assert follow.timestamp(START) == follow.timestamp("2025-03-01T12:00:00Z") == START.timestamp()
    assert follow.timestamp("2025-03-01T12:00:00.000+00:00") == START.timestamp()
    assert follow.timestamp(START.timestamp()) == START.timestamp()
    assert follow.clock_text(2 * 3600 + 61) == "+02:01:01"


# --------------------------------------------------------------------- reading the history


class FakeClient:
    """get_execution_history in pages of ``page`` events; a nextToken only while more follow (as the service)."""

    def __init__(self, events: list[dict[str, Any]], page: int = 3) -> None:
        self.events = events
        self.visible = len(events)
        self.page = page
        self.calls: list[dict[str, Any]] = []

    def get_execution_history(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        assert kwargs["reverseOrder"] is False
        start = int(kwargs.get("nextToken", "0"))
        end = min(start + self.page, self.visible)
        page: dict[str, Any] = {"events": self.events[start:end]}
        if end < self.visible:
            page["nextToken"] = str(end)
        return page


def test_the_pager_keeps_its_place_and_hands_out_each_event_once():
    events = run_to("SUCCEEDED", "PyTorchJobSucceeded").events
    client = FakeClient(events, page=4)
    client.visible = 10
    pager = follow.HistoryPager(client, ARN, page_size=4)

    assert [event["id"] for event in pager.read()] == list(range(1, 11))
    assert [call.get("nextToken") for call in client.calls] == [None, "4", "8"]
    client.visible = len(events)
    assert [event["id"] for event in pager.read()] == list(range(11, len(events) + 1))
    assert client.calls[3]["nextToken"] == "8"  # the last page again, not the whole history
    assert pager.read() == []


def test_an_expired_token_starts_over_without_repeating_events():
    events = run_to("SUCCEEDED", "PyTorchJobSucceeded").events

    class Expiring(FakeClient):
        def get_execution_history(self, **kwargs: Any) -> dict[str, Any]:
            if kwargs.get("nextToken") == "4" and len(self.calls) > 2:
                self.calls.append(kwargs)
                error = Exception("expired")
                error.response = {"Error": {"Code": "InvalidToken", "Message": "expired"}}  # type: ignore[attr-defined]
                raise error
            return super().get_execution_history(**kwargs)

    client = Expiring(events, page=4)
    client.visible = 6
    pager = follow.HistoryPager(client, ARN, page_size=4)
    assert len(pager.read()) == 6
    client.visible = len(events)
    assert [event["id"] for event in pager.read()] == list(range(7, len(events) + 1))


def test_follow_prints_lines_without_progress_when_not_a_tty():
    history = run_to("SUCCEEDED", "PyTorchJobSucceeded")
    history.add("ExecutionSucceeded", 80, executionSucceededEventDetails={"output": "{}"})
    client = FakeClient(history.events, page=100)
    client.visible = 8
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        client.visible = min(len(history.events), client.visible + 8)

    out = io.StringIO()
    outcome = follow.follow(client, ARN, out, poll_interval=2.5, tty=False, sleep=sleep)

    assert outcome.exit_code == 0
    assert "\r" not in out.getvalue()
    assert out.getvalue().splitlines() == [
        "+00:00:00  PENDING    NoStatus                     next wait 30s",
        "+00:00:30  RUNNING    PyTorchJobRunning            next wait 45s",
        "+00:01:15  SUCCEEDED  PyTorchJobSucceeded          done",
    ]
    assert set(sleeps) == {2.5}


def test_on_a_tty_a_progress_line_is_rewritten_and_cleared_before_each_line():
    history = run_to("SUCCEEDED", "PyTorchJobSucceeded")
    history.add("ExecutionSucceeded", 80, executionSucceededEventDetails={"output": "{}"})
    client = FakeClient(history.events, page=100)
    client.visible = 8
    wall = [START.timestamp() + 10]

    def sleep(seconds: float) -> None:
        wall[0] += seconds
        if wall[0] >= START.timestamp() + 12:
            client.visible = len(history.events)

    out = io.StringIO()
    follow.follow(client, ARN, out, poll_interval=2, tty=True, sleep=sleep, now=lambda: wall[0])
    text = out.getvalue()

    assert "\r+00:00:10  PENDING    NoStatus                     waiting, next poll in 20s" in text
    assert "\r+00:00:11  PENDING    NoStatus                     waiting, next poll in 19s" in text
    printed = [line.rsplit("\r", 1)[-1] for line in text.split("\n") if line.rsplit("\r", 1)[-1]]
    assert printed[-1] == "+00:01:15  SUCCEEDED  PyTorchJobSucceeded          done"
    assert not text.endswith("\r")


# --------------------------------------------------------------------- the command line, without AWS


def test_help_shows_every_option_with_its_default_and_the_exit_codes(capsys):
    for command, expected in [
        ("run", ["--stack NAME", "--state-machine-arn ARN", "--name", "--no-follow", "--poll-interval SECONDS"]),
        ("status", ["EXECUTION_ARN", "--region"]),
        ("list", ["--status", "--max N", "(default: 20)"]),
    ]:
        with pytest.raises(SystemExit):
            build_parser().parse_args([command, "--help"])
        text = capsys.readouterr().out
        assert all(option in text for option in expected), (command, text)
        assert "(default: " in text
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    text = capsys.readouterr().out
    assert "(default: 5.0)" in text
    for code, name in [(3, "JobFailed"), (4, "JobStopped"), (5, "JobTimedOut"), (6, "JobNotFound")]:
        assert f"  {code}    {name}" in text


def test_run_needs_a_stack_or_an_arn_and_a_positive_interval(capsys):
    for argv in (["run", "x.json"], ["run", "x.json", "--stack", "a", "--state-machine-arn", "b"]):
        with pytest.raises(SystemExit) as exit_info:
            build_parser().parse_args(argv)
        assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "x.json", "--stack", "a", "--poll-interval", "0"])
    assert "must be more than 0" in capsys.readouterr().err


def test_read_input_refuses_what_is_no_json_object(tmp_path):
    (tmp_path / "list.json").write_text("[1]")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(follow.FollowError, match="no such file"):
        follow.read_input(str(tmp_path / "missing.json"))
    with pytest.raises(follow.FollowError, match="not JSON"):
        follow.read_input(str(tmp_path / "bad.json"))
    with pytest.raises(follow.FollowError, match="must be a JSON object, got list"):
        follow.read_input(str(tmp_path / "list.json"))


class StartingClient(FakeClient):
    def __init__(self, events: list[dict[str, Any]]) -> None:
        super().__init__(events, page=100)
        self.started: list[dict[str, Any]] = []

    def start_execution(self, **kwargs: Any) -> dict[str, Any]:
        self.started.append(kwargs)
        return {"executionArn": ARN}


def test_run_main_prints_lines_and_returns_the_outcomes_code(monkeypatch, tmp_path, capsys):
    history = run_to("NOT_FOUND", "NotFound").failed(80, "JobNotFound", json.dumps({"job": JOB}))
    client = StartingClient(history.events)
    monkeypatch.setattr(follow, "_client", lambda service, region: client)
    path = tmp_path / "in.json"
    path.write_text('{"job": {}}')

    code = follow.cmd_run(build_parser().parse_args(["run", str(path), "--state-machine-arn", "sm", "--name", "n1"]))

    out = capsys.readouterr().out.splitlines()
    assert code == follow.EXIT_JOB_NOT_FOUND
    assert client.started == [{"stateMachineArn": "sm", "input": '{"job": {}}', "name": "n1"}]
    assert out[0] == f"execution {ARN}"
    assert out[3].split()[1:] == ["NOT_FOUND", "NotFound", "done"]
    assert out[4] == "result: FAILED  error: JobNotFound"


def test_run_no_follow_prints_only_the_arn(monkeypatch, tmp_path, capsys):
    client = StartingClient([])
    monkeypatch.setattr(follow, "_client", lambda service, region: client)
    path = tmp_path / "in.json"
    path.write_text("{}")

    code = follow.cmd_run(build_parser().parse_args(["run", str(path), "--state-machine-arn", "sm", "--no-follow"]))

    assert code == 0
    assert capsys.readouterr().out == ARN + "\n"
    assert client.calls == []


def test_ctrl_c_stops_following_not_the_execution(monkeypatch, tmp_path, capsys):
    client = StartingClient(History().events)
    monkeypatch.setattr(follow, "_client", lambda service, region: client)
    monkeypatch.setattr(follow.time, "sleep", lambda seconds: (_ for _ in ()).throw(KeyboardInterrupt))
    path = tmp_path / "in.json"
    path.write_text("{}")

    code = follow.cmd_run(build_parser().parse_args(["run", str(path), "--state-machine-arn", "sm"]))

    assert code == follow.EXIT_INTERRUPTED
    assert f"the execution goes on: jobsync status {ARN}" in capsys.readouterr().err


def test_aws_errors_are_one_line_without_credentials():
    error = Exception("An error occurred (AccessDeniedException) when calling X")
    error.response = {
        "Error": {"Code": "AccessDeniedException", "Message": "User: arn:aws:sts::1:x is not\nauthorized"}
    }  # type: ignore[attr-defined]

    message = str(follow._aws_error(error, "cannot start the execution"))

    assert message == "cannot start the execution: AccessDeniedException: User: arn:aws:sts::1:x is not authorized"


def test_a_line_says_how_far_a_trainjob_has_come_and_why_a_queued_job_waits():
    queue = {"localQueue": "team-a", "clusterQueue": "gpu-cq", "evictions": [{"reason": "Preempted", "count": 2}]}
    history = History().poll("Submit", 0, "PENDING", "NoStatus")
    history.poll(
        "Status", 182, "PENDING", "WaitingForQuota", wait=60, queue={"localQueue": "team-a"}, queuedSeconds=182
    )
    history.poll("Status", 300, "PENDING", "Evicted", wait=60, queue=queue, queuedSeconds=3725)
    progress = {"progressPercentage": 42, "estimatedRemainingSeconds": 3310, "metrics": {"loss": "0.31"}}
    history.poll("Status", 2410, "RUNNING", "TrainJobRunning", wait=95, progress=progress)
    reader = follow.HistoryReader()

    lines = [poll.line() for poll in reader.feed(history.events)]

    assert lines[1:] == [
        "+00:03:02  PENDING    WaitingForQuota              next wait 60s  (queued 3m02s in team-a)",
        "+00:05:00  PENDING    Evicted                      next wait 60s  (queued 1h02m in gpu-cq, evicted 2x)",
        "+00:40:10  RUNNING    TrainJobRunning              next wait 95s  (42%, ETA 55m10s)",
    ]
    assert lines[0] == "+00:00:00  PENDING    NoStatus                     next wait 30s"  # nothing to say: as before
