"""The lines `make demo` prints: each look at the job, the notifier's events and log, or each job of a RunJobs run.

One run: a line per look, from the Lambda invocations the local run recorded (a Status poll, or in callback
mode the Await's look and the Resume the notifier's event caused), each at the time it answered on the
story's clock, saying what changed and what comes next. In callback mode the notifier's own log lines
(wall time, mapped to the story's clock through samples of both) and the event that woke the wait are
among them. Several jobs (RunJobs): the lines ``jobsync run`` prints, each naming its job
(``jobsync_cli.runjobs``, read from the executions' histories), then the table in input order.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from harness.local import RunResult
from harness.sfn import Invocation, LocalStepFunctions


def clock_text(seconds: float) -> str:
    seconds = int(seconds)
    return f"+{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


@dataclass(frozen=True)
class Entry:
    """One line of the story, at ``at`` (the story's clock): a look at the job, or something said about it."""

    at: float
    phase: str
    reason: str
    look: bool = True  # a look's line says what changed; another's says ``text``
    wait: int | None = None  # the wait after a look (None: it ends the loop, or a watch does the waiting)
    text: str = ""
    terminal: bool = False


def looks(invocations: Iterable[Invocation], arn: str) -> list[Entry]:
    """The execution's looks and the events that woke it, from the Lambda invocations."""
    entries = []
    for call in invocations:
        result, event = call.result, call.event if isinstance(call.event, dict) else {}
        if not isinstance(result, dict):
            continue
        answered = call.answered if call.answered is not None else call.at
        if call.function_name == "jobsync-status" and result.get("execution") in (None, arn):
            wait = int(result.get("waitSeconds") or 0)
            terminal = bool(result.get("terminal"))
            entries.append(
                Entry(answered, str(result["phase"]), str(result.get("reason") or ""), True, wait, "", terminal)
            )
        elif call.function_name == "jobsync-await" and (event.get("state") or {}).get("execution") == arn:
            terminal = bool(result.get("terminal"))
            armed = int((event.get("state") or {}).get("waitSeconds") or 0)
            text = "done" if terminal else f"waiting for the notifier's event (a look in {armed}s at the latest)"
            entries.append(
                Entry(answered, str(result["phase"]), str(result.get("reason") or ""), True, None, text, terminal)
            )
        elif call.function_name == "jobsync-resume" and (event.get("detail") or {}).get("executionArn") == arn:
            detail = event["detail"]
            woke = "woke the wait" if result.get("resumed") else f"woke nothing: {result.get('why')}"
            entries.append(Entry(call.at, str(detail.get("phase")), "the notifier's event", False, text=woke))
    return entries


def notifier_entries(records: Iterable[dict[str, Any]], samples: Sequence[tuple[float, float]]) -> list[Entry]:
    """The notifier's INFO (and worse) log lines, each at the story's time its wall time maps to."""
    walls = [wall for wall, _ in samples]
    entries = []
    for record in records:
        level, message = str(record.get("level", "")), str(record.get("message", ""))
        if not message or level == "DEBUG":
            continue
        wall = _wall(record.get("timestamp"))
        if wall is None or not samples:
            continue
        story = samples[max(0, bisect.bisect_right(walls, wall) - 1)][1]
        job = record.get("job")
        what = f"{job.get('kind')} {job.get('namespace')}/{job.get('name')}" if isinstance(job, dict) else ""
        phase = str(record.get("phase") or "")
        detail = " ".join(part for part in (what, phase) if part)
        entries.append(
            Entry(story, "notifier", level.lower(), False, text=f"{message}{': ' if detail else ''}{detail}")
        )
    return entries


def _wall(stamp: Any) -> float | None:
    """Powertools' timestamp (``2026-01-02 10:00:00,123+0000``) as epoch seconds."""
    try:
        return datetime.strptime(str(stamp), "%Y-%m-%d %H:%M:%S,%f%z").timestamp()
    except ValueError:
        return None


def story_lines(invocations: Iterable[Invocation], result: RunResult, extra: Iterable[Entry] = ()) -> list[str]:
    """One line per look, event and notifier log line, in time order, from the execution's start."""
    seen = looks(invocations, result.execution_arn)
    # At the same time, what the notifier said comes before what it caused.
    entries = sorted([*seen, *_published_at_their_resume(extra, seen)], key=lambda e: (e.at, e.phase != "notifier"))
    last_look = max((i for i, e in enumerate(entries) if e.look), default=-1)
    lines, before = [], None
    for i, entry in enumerate(entries):
        clock = clock_text(entry.at - result.started_at)
        if not entry.look:
            lines.append(f"{clock}  {entry.phase:<10} {entry.reason:<28} {entry.text}")
            continue
        now = (entry.phase, entry.reason)
        if before is None:
            changed = "first look"
        elif now != before:
            changed = f"was {before[0]} {before[1]}".rstrip() if now[0] != before[0] else f"was {before[1]}"
        else:
            changed = "no change"
        if entry.text:
            after = entry.text
        elif entry.wait:
            after = f"next wait {entry.wait}s"
        elif i == last_look or entry.terminal:
            after = "done"
        else:
            after = "watching again"
        lines.append(f"{clock}  {entry.phase:<10} {entry.reason:<28} {changed}; {after}")
        before = now
    return lines


# How far the story's clock moves in one step of a task token's wait (harness.sfn: callback_step_seconds).
CLOCK_STEP = 30.0


def _published_at_their_resume(notes: Iterable[Entry], seen: Sequence[Entry]) -> list[Entry]:
    """The notifier logs a publish once the event is put, and the put runs the Resume: a publish line whose wall
    time maps to within one clock step after a Resume is placed at that Resume, which it came before."""
    resumes = sorted(e.at for e in seen if e.reason == "the notifier's event")
    placed = []
    for note in notes:
        if note.phase == "notifier" and "published" in note.text:
            caused = [at for at in resumes if note.at - CLOCK_STEP <= at <= note.at]
            note = replace(note, at=caused[-1]) if caused else note
        placed.append(note)
    return placed


def run_jobs_lines(sfn: LocalStepFunctions, arn: str, execution_input: Any) -> tuple[list[str], Any]:
    """What ``jobsync run`` prints for a RunJobs run, read from the run's and its children's histories."""
    from jobsync_cli.runjobs import MapRunChildren, RunJobsReader, summary_lines

    reader = RunJobsReader(execution_input)
    reader.feed_parent(sfn.history(arn))
    map_children = MapRunChildren(sfn._sfn)  # each job's RunJob execution, through the Map Run, as the CLI finds it
    for map_run in reader.map_runs:
        for index, child in map_children.read(map_run):
            reader.adopt(index, child)
    changes = []
    for child in reader.ordered():
        if child.arn:
            changes += reader.feed_child(child, sfn.history(child.arn))
    lines = [change.text for change in sorted(changes, key=lambda c: (int(c.at), c.child.index))]
    return [*lines, *summary_lines(reader)], reader
