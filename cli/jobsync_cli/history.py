"""An execution's history, read as `jobsync run` and `jobsync status` show it: a line per look, and the outcome.

Everything comes from the execution's history (``GetExecutionHistory``), the one
record Step Functions keeps: each ``lambda:invoke`` task that succeeded has a
``TaskSucceeded`` event whose ``output`` is the Invoke result as a JSON string,
``{"ExecutedVersion": ..., "Payload": {...loop state...}, "StatusCode": 200, ...}``.
Submit's and each look's loop state become one line (``Poll``), and the
execution's last event its ``Outcome``, whose exit code is its job's phase's
(``jobsync.core.outcome``). :class:`HistoryReader` is pure; :class:`HistoryPager`
reads the history through a boto3 client, page by page.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from jobsync.core.outcome import EXIT_OTHER_ERROR, EXIT_RUNNING, EXIT_SUCCEEDED, JOB_ERRORS


def error_code(err: BaseException) -> str:
    """The AWS error code of ``err`` (a botocore ClientError), or ""."""
    response = getattr(err, "response", None)
    return str(((response or {}).get("Error") or {}).get("Code", "")) if isinstance(response, dict) else ""


TERMINAL_EVENTS = {
    "ExecutionSucceeded": ("SUCCEEDED", "executionSucceededEventDetails"),
    "ExecutionFailed": ("FAILED", "executionFailedEventDetails"),
    "ExecutionAborted": ("ABORTED", "executionAbortedEventDetails"),
    "ExecutionTimedOut": ("TIMED_OUT", "executionTimedOutEventDetails"),
}
TASK_FAILURES = {
    "TaskFailed": "taskFailedEventDetails",
    "TaskTimedOut": "taskTimedOutEventDetails",
    "LambdaFunctionFailed": "lambdaFunctionFailedEventDetails",
    "LambdaFunctionTimedOut": "lambdaFunctionTimedOutEventDetails",
}


# --------------------------------------------------------------------- events to lines


def clock_text(seconds: float) -> str:
    """``+HH:MM:SS``, as ``make demo`` prints the time since the execution started."""
    seconds = max(0, int(seconds))
    return f"+{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def timestamp(value: Any) -> float:
    """Seconds since the epoch from a history timestamp: a datetime (boto3), ISO text or a number."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, int | float):
        return float(value)
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


@dataclass
class Poll:
    """One loop state (Submit's or a Status's result), or one failed attempt of a task."""

    at: float  # seconds since the execution started
    state: str
    phase: str
    reason: str
    wait_seconds: int = 0
    terminal: bool = False
    polls: int = 0
    error: bool = False
    note: str = ""  # what the loop state says of the job's advance or its queue (``note``)

    def line(self) -> str:
        if self.error:
            tail = f"{self.state} failed"
        else:
            tail = f"next wait {self.wait_seconds}s" if self.wait_seconds and not self.terminal else "done"
        return f"{clock_text(self.at)}  {self.phase:<10} {self.reason:<28} {tail}" + (
            f"  ({self.note})" if self.note else ""
        )


def span(seconds: Any) -> str:
    """A duration as a person reads it: ``45s``, ``12m30s``, ``2h05m``."""
    value = max(0, int(seconds))
    hours, rest = divmod(value, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def note(state: dict[str, Any]) -> str:
    """The job's advance as its controller reports it (a TrainJob's progress and ETA), and its queue: how long it
    waited for admission and in which ClusterQueue (LocalQueue), how many times it was evicted."""
    parts = []
    progress = _object(state.get("progress"))
    if isinstance(progress.get("progressPercentage"), int):
        parts.append(f"{progress['progressPercentage']}%")
    if isinstance(progress.get("estimatedRemainingSeconds"), int):
        parts.append(f"ETA {span(progress['estimatedRemainingSeconds'])}")
    queue = _object(state.get("queue"))
    where = queue.get("clusterQueue") or queue.get("localQueue")
    if where and isinstance(state.get("queuedSeconds"), int):
        parts.append(f"queued {span(state['queuedSeconds'])} in {where}")
    found = queue.get("evictions")
    lines: list[Any] = found if isinstance(found, list) else []
    evictions = sum(e["count"] for e in lines if isinstance(e, dict) and isinstance(e.get("count"), int))
    if evictions:
        parts.append(f"evicted {evictions}x")
    return ", ".join(parts)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@dataclass
class Outcome:
    """How the execution ended, from its last event or DescribeExecution."""

    status: str  # SUCCEEDED, FAILED, ABORTED, TIMED_OUT (or RUNNING, for status)
    output: Any = None
    error: str | None = None
    cause: str | None = None

    @property
    def exit_code(self) -> int:
        if self.status == "SUCCEEDED":
            return EXIT_SUCCEEDED
        if self.status in ("RUNNING", "PENDING_REDRIVE"):
            return EXIT_RUNNING
        if self.status == "FAILED" and self.error in JOB_ERRORS:
            return JOB_ERRORS[self.error]
        return EXIT_OTHER_ERROR

    def lines(self) -> list[str]:
        """The result as printed at the end: the output, or the error and its Cause (JSON, pretty-printed)."""
        if self.status == "SUCCEEDED":
            return [f"result: {self.status}", _pretty(self.output)]
        head = f"result: {self.status}" + (f"  error: {self.error}" if self.error else "")
        if not self.cause:
            return [head]
        cause = _json_or_text(self.cause)
        tail = cause.get("logTail") if isinstance(cause, dict) else None
        if not (isinstance(tail, str) and tail.strip()):
            return [head, "cause:", _pretty(cause)]
        # The log tail once, as text under the Cause, not a second time as a JSON string inside it.
        rest = {key: value for key, value in cause.items() if key != "logTail"}
        return [head, "cause:", _pretty(rest), "log tail:", tail.rstrip("\n")]


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _pretty(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def loop_state(payload: Any) -> dict[str, Any] | None:
    """The loop state in a task result, or None when it is not one (Cleanup's result, say)."""
    payload = _json_or_text(payload)
    if isinstance(payload, dict) and "phase" in payload and "job" in payload:
        return payload
    return None


@dataclass
class HistoryReader:
    """Turns execution history events, in order, into poll lines and an outcome; each event is used once."""

    started_at: float | None = None
    last_id: int = 0
    state: str = ""
    polls: list[Poll] = field(default_factory=list)
    last_state: dict[str, Any] | None = None
    outcome: Outcome | None = None

    def feed(self, events: Iterable[dict[str, Any]]) -> list[Poll]:
        """The new polls among ``events``; events already seen (by id) are skipped."""
        new: list[Poll] = []
        for event in events:
            event_id = int(event.get("id", 0))
            if event_id and event_id <= self.last_id:
                continue
            self.last_id = max(self.last_id, event_id)
            poll = self._event(event)
            if poll is not None:
                self.polls.append(poll)
                new.append(poll)
        return new

    def _since(self, event: dict[str, Any]) -> float:
        at = timestamp(event["timestamp"])
        if self.started_at is None:
            self.started_at = at
        return at - self.started_at

    def _event(self, event: dict[str, Any]) -> Poll | None:
        kind = event.get("type", "")
        if kind == "ExecutionStarted":
            self.started_at = timestamp(event["timestamp"])
            return None
        if kind.endswith("StateEntered"):
            self.state = (event.get("stateEnteredEventDetails") or {}).get("name", "")
            return None
        if kind in TERMINAL_EVENTS:
            status, key = TERMINAL_EVENTS[kind]
            details = event.get(key) or {}
            output = _json_or_text(details["output"]) if details.get("output") is not None else None
            self.outcome = Outcome(status, output, details.get("error"), details.get("cause"))
            return None
        if kind == "TaskSucceeded":
            # lambda:invoke: the output is the Invoke result, the function's result in its Payload.
            result = _json_or_text((event.get("taskSucceededEventDetails") or {}).get("output"))
            state = loop_state(result.get("Payload")) if isinstance(result, dict) else None
            return self._poll(event, state)
        if kind == "LambdaFunctionSucceeded":
            # A bare function ARN as Resource: the output is the function's result itself.
            return self._poll(event, loop_state((event.get("lambdaFunctionSucceededEventDetails") or {}).get("output")))
        if kind in TASK_FAILURES:
            details = event.get(TASK_FAILURES[kind]) or {}
            error = details.get("error") or ("States.Timeout" if kind.endswith("TimedOut") else kind)
            return Poll(self._since(event), self.state, "ERROR", error, error=True)
        return None

    def _poll(self, event: dict[str, Any], state: dict[str, Any] | None) -> Poll | None:
        if state is None:
            return None
        self.last_state = state
        return Poll(
            at=self._since(event),
            state=self.state,
            phase=str(state.get("phase", "")),
            reason=str(state.get("reason") or ""),
            wait_seconds=_int(state.get("waitSeconds")),
            terminal=bool(state.get("terminal")),
            polls=_int(state.get("polls")),
            note=note(state),
        )


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


# --------------------------------------------------------------------- reading the history


class HistoryPager:
    """Reads an execution's history oldest first, keeping its place between reads.

    The service gives a ``nextToken`` only while more events follow; at the end
    of the history there is none. So the token of the last page read is kept
    and that page read again next time, its events already seen skipped by id:
    every event is handed out once.
    """

    def __init__(self, client: Any, execution_arn: str, page_size: int = 1000) -> None:
        self.client = client
        self.execution_arn = execution_arn
        self.page_size = page_size
        self.token: str | None = None
        self.last_id = 0

    def read(self) -> list[dict[str, Any]]:
        """The events not handed out before."""
        new: list[dict[str, Any]] = []
        while True:
            kwargs: dict[str, Any] = {
                "executionArn": self.execution_arn,
                "reverseOrder": False,
                "maxResults": self.page_size,
            }
            if self.token:
                kwargs["nextToken"] = self.token
            try:
                page = self.client.get_execution_history(**kwargs)
            except Exception as err:
                if self.token and error_code(err) == "InvalidToken":  # tokens expire (24 h): start over
                    self.token = None
                    continue
                raise
            for event in page.get("events", []):
                if int(event.get("id", 0)) > self.last_id:
                    new.append(event)
                    self.last_id = int(event["id"])
            next_token = page.get("nextToken")
            if not next_token:
                return new
            self.token = next_token
