"""A RunJobs execution followed job by job: each child RunJob execution, in input order, and the worst outcome.

RunJobs starts one child RunJob execution per job (``statemachine/run_jobs.asl.json``), from a
Distributed Map: its history's ``MapRunStarted`` names the Map Run, whose child workflow executions
(``ListExecutions(mapRunArn=...)``) each have the job's index in their input and, in their own
history, a ``TaskSubmitted`` event carrying the RunJob execution's ARN. (An inline Map's
``TaskSubmitted`` events are in the run's own history, their ``previousEventId`` chain leading back
to the iteration: read too.) Each RunJob execution's history then gives its looks, as ``jobsync
run`` reads a RunJob execution (``jobsync_cli.history``).

:class:`RunJobsReader` is pure: events in, children (in input order), changes and the outcome out.
A child's line is printed when its phase or reason changes, and when it ends, each line naming
its job; the exit code is the worst child's (:data:`WORST_FIRST`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

from jobsync.core.outcome import (
    EXIT_JOB_FAILED,
    EXIT_JOB_NOT_FOUND,
    EXIT_JOB_STOPPED,
    EXIT_JOB_TIMED_OUT,
    EXIT_OTHER_ERROR,
    EXIT_SUCCEEDED,
)
from jobsync_cli.history import TERMINAL_EVENTS, HistoryPager, HistoryReader, Outcome, Poll, clock_text, timestamp

# The worst outcome first: a job's own failure, its deadline, its disappearance, then what says nothing
# of the job itself (a step's error, an execution stopped: failFast's stopped siblings), then a job
# stopped on purpose. A run's exit code is its worst child's.
WORST_FIRST = (EXIT_JOB_FAILED, EXIT_JOB_TIMED_OUT, EXIT_JOB_NOT_FOUND, EXIT_OTHER_ERROR, EXIT_JOB_STOPPED)
WAITING = "WAITING"  # a child not started yet (maxConcurrency)


def worst(codes: Iterable[int]) -> int:
    """The worst of exit codes (:data:`WORST_FIRST`); 0 when every one is 0 (or there is none)."""
    found = set(codes)
    return next((code for code in WORST_FIRST if code in found), EXIT_SUCCEEDED if found <= {0} else max(found))


def job_names(execution_input: Any) -> list[str]:
    """The name each job of a RunJobs input asks for, in input order (its manifest's, its template's file)."""
    jobs = execution_input.get("jobs") if isinstance(execution_input, dict) else None
    names = []
    for index, entry in enumerate(jobs if isinstance(jobs, list) else []):
        job = entry.get("job") if isinstance(entry, dict) else None
        metadata = job.get("metadata") if isinstance(job, dict) else None
        name = metadata.get("name") or metadata.get("generateName") if isinstance(metadata, dict) else None
        template = entry.get("jobTemplate") if isinstance(entry, dict) else None
        if not name and isinstance(template, str):
            name = template.rsplit("/", 1)[-1].split(".", 1)[0]
        names.append(str(name) if name else f"job-{index}")
    return names


@dataclass
class Child:
    """One job of the run: its child execution (once started) and what its history said so far."""

    index: int
    job: str  # the name the input asks for, then the job's own name once Submit created it
    arn: str = ""
    reader: HistoryReader = field(default_factory=HistoryReader)
    shown: tuple[str, str] | None = None  # the phase and reason of the last line printed
    since: float | None = None  # seconds since the run started: when its phase last changed
    ended_shown: bool = False

    @property
    def execution(self) -> str:
        return self.arn.rsplit(":", 1)[-1] if self.arn else ""

    @property
    def last(self) -> Poll | None:
        return self.reader.polls[-1] if self.reader.polls else None

    @property
    def outcome(self) -> Outcome | None:
        return self.reader.outcome

    @property
    def phase(self) -> str:
        outcome = self.outcome
        if outcome is not None and outcome.status == "ABORTED":
            return "ABORTED"
        if self.last is not None:
            return self.last.phase
        if outcome is not None:
            return "ERROR" if outcome.status != "SUCCEEDED" else "SUCCEEDED"
        return "STARTING" if self.arn else WAITING

    @property
    def reason(self) -> str:
        outcome = self.outcome
        if outcome is not None and outcome.status == "ABORTED":
            return outcome.error or "stopped"
        return self.last.reason if self.last is not None else ""

    @property
    def exit_code(self) -> int | None:
        return self.outcome.exit_code if self.outcome is not None else None

    def since_start(self, run_started: float, poll: Poll) -> float:
        """A look's time as seconds since the run started (the child's own clock starts later)."""
        started = self.reader.started_at if self.reader.started_at is not None else run_started
        return started - run_started + poll.at


@dataclass(frozen=True)
class Change:
    """A line to print: a child's new phase or reason, or its end."""

    at: float  # seconds since the run started
    child: Child
    text: str


class RunJobsReader:
    """The parent's events and each child's, turned into children in input order, changes and an outcome."""

    def __init__(self, execution_input: Any = None) -> None:
        self.parent = HistoryReader()
        self.children: dict[int, Child] = {i: Child(i, name) for i, name in enumerate(job_names(execution_input))}
        self._events: dict[int, dict[str, Any]] = {}
        self.latest: float | None = None  # the latest event time seen, of the run or a child
        self.map_runs: list[str] = []  # the Map Runs the run started (a Distributed Map), in order

    @property
    def outcome(self) -> Outcome | None:
        return self.parent.outcome

    @property
    def started_at(self) -> float | None:
        return self.parent.started_at

    def ordered(self) -> list[Child]:
        return [self.children[i] for i in sorted(self.children)]

    def feed_parent(self, events: Iterable[dict[str, Any]]) -> list[Child]:
        """The children these events started (their index and ARN now known)."""
        events = list(events)
        for event in events:
            self._events[int(event.get("id", 0))] = event
            self._seen(event)
        self.parent.feed(events)
        started = []
        for event in events:
            details = event.get("mapRunStartedEventDetails")
            if event.get("type") == "MapRunStarted" and isinstance(details, dict) and details.get("mapRunArn"):
                self.map_runs.append(str(details["mapRunArn"]))
            if event.get("type") != "TaskSubmitted":
                continue
            arn = _submitted_arn(event)
            index = self._iteration(event)
            if arn is None or index is None:
                continue
            child = self.adopt(index, arn)
            if child is not None:
                started.append(child)
        return started

    def adopt(self, index: int, arn: str) -> Child | None:
        """The child at ``index`` runs as ``arn``; the child, or None when it was known already."""
        child = self.children.setdefault(index, Child(index, f"job-{index}"))
        if child.arn:
            return None
        child.arn = arn
        return child

    def feed_child(self, child: Child, events: Iterable[dict[str, Any]]) -> list[Change]:
        """The lines a child's new events give: one when its phase or reason changed, one when it ended."""
        events = list(events)
        for event in events:
            self._seen(event)
        changes = []
        for poll in child.reader.feed(events):
            state = child.reader.last_state or {}
            name = (state.get("job") or {}).get("name") if isinstance(state.get("job"), dict) else None
            if name and not poll.error:
                child.job = str(name)
            if (poll.phase, poll.reason) != child.shown or poll.terminal:
                if child.shown is None or poll.phase != child.shown[0]:
                    child.since = self._at(child, poll)
                child.shown = (poll.phase, poll.reason)
                changes.append(self._change(child, poll.line(), self._at(child, poll)))
        outcome = child.outcome
        if outcome is not None and not child.ended_shown:
            child.ended_shown = True
            last = child.last
            if last is None or not last.terminal or outcome.status == "ABORTED":
                # It ended without a look saying so (stopped, a step's error): say how it ended.
                ends = [timestamp(e["timestamp"]) for e in events if e.get("type") in TERMINAL_EVENTS]
                at = ends[-1] - self.started_at if ends and self.started_at is not None else self._at(child, last)
                text = f"{clock_text(at)}  {child.phase:<10} {child.reason:<28} ended {outcome.status}"
                child.since = at
                changes.append(Change(at, child, _named(text, child)))
        return changes

    def _change(self, child: Child, line: str, at: float) -> Change:
        _, rest = line.split("  ", 1)  # the look's own clock counts from the child's start: the run's instead
        return Change(at, child, _named(f"{clock_text(at)}  {rest}", child))

    def _at(self, child: Child, poll: Poll | None) -> float:
        if poll is None:
            return 0.0
        return child.since_start(self.started_at or 0.0, poll)

    def _seen(self, event: dict[str, Any]) -> None:
        at = timestamp(event["timestamp"]) if event.get("timestamp") is not None else None
        if at is not None and (self.latest is None or at > self.latest):
            self.latest = at

    def _iteration(self, event: dict[str, Any]) -> int | None:
        """The Map iteration (the job's index) an event of the run belongs to, up its previousEventId chain."""
        seen = set()
        current: dict[str, Any] | None = event
        while current is not None and int(current.get("id", 0)) not in seen:
            seen.add(int(current.get("id", 0)))
            started = current.get("mapIterationStartedEventDetails")
            if isinstance(started, dict) and isinstance(started.get("index"), int):
                return int(started["index"])
            entered = current.get("stateEnteredEventDetails")
            if isinstance(entered, dict):
                index = _input_index(entered.get("input"))
                if index is not None:
                    return index
            current = self._events.get(int(current.get("previousEventId") or 0))
        return None

    def exit_code(self) -> int:
        """The worst child's exit code; the run's own when no child ended (its input was refused, say)."""
        codes = [c.exit_code for c in self.children.values() if c.exit_code is not None]
        if not codes:
            return self.outcome.exit_code if self.outcome is not None else EXIT_OTHER_ERROR
        return worst(codes)


def _named(line: str, child: Child) -> str:
    """A look's line with the job it is about after the time: ``+00:01:05  [0] mnist-4b6d92d0  RUNNING ...``."""
    clock, rest = line.split("  ", 1)
    return f"{clock}  [{child.index}] {child.job:<28} {rest}"


class MapRunChildren:
    """The RunJob executions a Distributed Map's Map Run started, as (index, ARN), each handed out once.

    A Map Run child workflow execution's input is RunJobs' ItemSelector (``index``, ``input``); its
    ``TaskSubmitted`` event (startExecution.sync) carries the RunJob execution's ARN. A child that has not
    submitted yet is looked at again next time.
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self.done: set[str] = set()  # Map Run children whose RunJob execution is known

    def read(self, map_run_arn: str) -> list[tuple[int, str]]:
        found = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"mapRunArn": map_run_arn, "maxResults": 1000}
            if token:
                kwargs["nextToken"] = token
            page = self.client.list_executions(**kwargs)
            for listed in page.get("executions", []):
                arn = listed["executionArn"]
                if arn in self.done:
                    continue
                started = self._started(arn)
                if started is not None:
                    self.done.add(arn)
                    found.append(started)
            token = page.get("nextToken")
            if not token:
                return found

    def _started(self, arn: str) -> tuple[int, str] | None:
        index, submitted = None, None
        for event in HistoryPager(self.client, arn).read():
            if event.get("type") == "ExecutionStarted":
                index = _input_index((event.get("executionStartedEventDetails") or {}).get("input"))
            elif event.get("type") == "TaskSubmitted":
                submitted = _submitted_arn(event)
                break
        return (index, submitted) if index is not None and submitted is not None else None


def _submitted_arn(event: dict[str, Any]) -> str | None:
    details = event.get("taskSubmittedEventDetails") or {}
    try:
        output = json.loads(details.get("output") or "")
    except ValueError:
        return None
    arn = output.get("ExecutionArn") if isinstance(output, dict) else None
    return str(arn) if isinstance(arn, str) else None


def _input_index(text: Any) -> int | None:
    """``index`` of a Map iteration's input (RunJobs' ItemSelector puts it there), or None."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    index = value.get("index") if isinstance(value, dict) else None
    return index if isinstance(index, int) and not isinstance(index, bool) else None


# --------------------------------------------------------------------- the end: a table and each failure


def summary_lines(reader: RunJobsReader) -> list[str]:
    """The table printed at the end: one row a job, in input order."""
    rows = [("#", "job", "phase", "reason", "error", "took", "execution")]
    for child in reader.ordered():
        outcome = child.outcome
        error = outcome.error if outcome is not None and outcome.error else ""
        rows.append(
            (
                str(child.index),
                child.job,
                child.phase,
                child.reason,
                error,
                _took(child),
                child.execution,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]


def _took(child: Child) -> str:
    if child.reader.started_at is None or not child.reader.polls:
        return ""
    seconds = int(child.reader.polls[-1].at)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def result_lines(reader: RunJobsReader) -> list[str]:
    """After the table: how the run ended, then each job that did not succeed with its Cause and log tail.

    The run's own Cause (JobsFailed: every job's outcome) is the table above, so it is not printed again.
    """
    outcome = reader.outcome
    if outcome is None:
        return ["result: still RUNNING"]
    lines = ["", *summary_lines(reader)]
    counts: dict[str, int] = {}
    for child in reader.ordered():
        counts[child.phase] = counts.get(child.phase, 0) + 1
    tally = ", ".join(f"{count} {phase}" for phase, count in sorted(counts.items()))
    head = f"result: {outcome.status}" + (f"  error: {outcome.error}" if outcome.error else "")
    lines += ["", f"{head}  ({tally} of {len(reader.children)})"]
    if outcome.status == "SUCCEEDED":
        lines.append(json.dumps(outcome.output, indent=2, ensure_ascii=False))
        return lines
    if not any(child.outcome is not None for child in reader.children.values()) and outcome.cause:
        lines += outcome.lines()[1:]  # no job ran: the run's own error and its Cause (InvalidInput, say)
    for child in reader.ordered():
        if child.outcome is None or child.outcome.status == "SUCCEEDED" or child.outcome.status == "ABORTED":
            continue
        lines += ["", f"[{child.index}] {child.job}: {child.outcome.lines()[0]}", *child.outcome.lines()[1:]]
    return lines


# --------------------------------------------------------------------- following it


def follow_run_jobs(
    client: Any,
    execution_arn: str,
    out: TextIO,
    execution_input: Any = None,
    *,
    poll_interval: float = 5.0,
    tty: bool | None = None,
    sleep: Callable[[float], None] | None = None,
    now: Callable[[], float] | None = None,
    settle_reads: int = 12,
) -> RunJobsReader:
    """Follow a RunJobs execution and its children until the run and every child ended; returns what was read.

    After the run ended, children it stopped (failFast) are read ``settle_reads`` more times at most.
    On a terminal the live table shows every job between the lines (``jobsync_cli.live``).
    """
    from jobsync_cli import live

    sleep = sleep or time.sleep
    now = now or time.time
    reader = RunJobsReader(execution_input)
    parent = HistoryPager(client, execution_arn)
    pagers: dict[int, HistoryPager] = {}
    map_children = MapRunChildren(client)
    tty = out.isatty() if tty is None else tty
    view: live.View = live.LiveTable(out, f"RunJobs {execution_arn.rsplit(':', 1)[-1]}") if tty else live.Lines(out)
    clock = _RunClock(now)
    try:
        reads_after_end = 0
        while True:
            started = reader.feed_parent(parent.read())
            for map_run in reader.map_runs:
                started += [c for i, arn in map_children.read(map_run) if (c := reader.adopt(i, arn)) is not None]
            for child in started:
                pagers[child.index] = HistoryPager(client, child.arn)
            changes = []
            for child in reader.ordered():
                if child.index in pagers and child.outcome is None:
                    changes += reader.feed_child(child, pagers[child.index].read())
            for change in sorted(changes, key=lambda c: (int(c.at), c.child.index)):
                view.line(change.text)
            clock.saw(reader.latest)
            if reader.outcome is not None:
                running = [c for c in reader.children.values() if c.arn and c.outcome is None]
                if not running or reads_after_end >= settle_reads:
                    return reader
                reads_after_end += 1
            _wait(view, reader, clock, poll_interval, sleep, tty)
    finally:
        view.close()


class _RunClock:
    """The run's time now, as seconds since it started: its latest event's time, moved on by the wall clock since.

    Read from the history alone, so it is right whatever clock the service keeps (a local run's is virtual).
    """

    def __init__(self, wall: Callable[[], float]) -> None:
        self.wall = wall
        self.anchor: tuple[float, float] | None = None

    def saw(self, latest: float | None) -> None:
        if latest is not None and (self.anchor is None or latest > self.anchor[0]):
            self.anchor = (latest, self.wall())

    def since(self, started: float | None) -> float | None:
        if self.anchor is None or started is None:
            return None
        return self.anchor[0] + (self.wall() - self.anchor[1]) - started


def _wait(
    view: Any, reader: RunJobsReader, clock: _RunClock, seconds: float, sleep: Callable[[float], None], tty: bool
) -> None:
    if not tty:
        sleep(seconds)
        return
    left = seconds
    while left > 0:
        view.show(reader, clock.since(reader.started_at))
        step = min(1.0, left)
        sleep(step)
        left -= step
