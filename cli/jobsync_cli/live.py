"""What a person sees while a run goes on: a live table on a terminal, plain lines otherwise.

On a terminal, ``LiveTable`` (``rich``'s ``Live``) keeps a table at the bottom of the screen,
one row a job in input order, rewritten in place: its phase, reason, how long it has been so,
when the next look is due; each change is printed above it as a line, so the scrollback keeps
the story. When the output is not a terminal (a pipe, a CI log), ``Lines`` prints the same lines
and nothing else: no escape codes, nothing rewritten.
"""

from __future__ import annotations

from typing import Any, Protocol, TextIO

from jobsync_cli.history import clock_text
from jobsync_cli.runjobs import RunJobsReader

# The colour of each phase in the live table (the plain lines have none).
STYLES = {
    "SUCCEEDED": "green",
    "FAILED": "bold red",
    "ERROR": "bold red",
    "TIMED_OUT": "red",
    "NOT_FOUND": "red",
    "STOPPED": "yellow",
    "ABORTED": "yellow",
    "RUNNING": "cyan",
    "PENDING": "yellow",
    "SUSPENDED": "magenta",
}


class View(Protocol):
    def line(self, text: str) -> None: ...
    def show(self, reader: RunJobsReader, now: float | None) -> None: ...
    def close(self) -> None: ...


class Lines:
    """Plain lines, one per change; the table is not drawn."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def line(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def show(self, reader: RunJobsReader, now: float | None) -> None:
        pass

    def close(self) -> None:
        pass


class LiveTable:
    """A table rewritten in place at the bottom of the terminal, the change lines scrolling above it."""

    def __init__(self, out: TextIO, title: str) -> None:
        from rich.console import Console
        from rich.live import Live

        self.title = title
        self.console = Console(file=out, force_terminal=True, highlight=False)
        # Redrawn when told (each look, each second while waiting), and gone once the run ends: the
        # summary table printed after it is what stays on the screen.
        self.live = Live(
            console=self.console, auto_refresh=False, transient=True, redirect_stdout=False, redirect_stderr=False
        )
        self.live.start()

    def line(self, text: str) -> None:
        self.live.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def show(self, reader: RunJobsReader, now: float | None) -> None:
        self.live.update(table(reader, now, self.title), refresh=True)

    def close(self) -> None:
        self.live.stop()


def table(reader: RunJobsReader, now: float | None, title: str) -> Any:
    """The live table: one row a job, in input order; ``now`` is seconds since the run started (None: unknown)."""
    from rich.table import Table
    from rich.text import Text

    counts: dict[str, int] = {}
    for child in reader.ordered():
        counts[child.phase] = counts.get(child.phase, 0) + 1
    tally = "  ".join(f"{phase.lower()} {count}" for phase, count in sorted(counts.items()))
    elapsed = clock_text(now) if now is not None else "+--:--:--"
    grid = Table(title=Text(f"{title}  {elapsed}  {tally}"), title_justify="left", expand=False)
    for column in ("#", "job", "phase", "reason", "for", "next look", "looks"):
        grid.add_column(column, no_wrap=True, justify="right" if column in ("#", "looks") else "left")
    for child in reader.ordered():
        last = child.last
        held = clock_text(now - child.since)[1:] if now is not None and child.since is not None else ""
        due = ""
        if last is not None and not last.terminal and not last.error and child.outcome is None and now is not None:
            left = child.since_start(reader.started_at or 0.0, last) + last.wait_seconds - now
            due = f"in {int(left)}s" if left > 0 else "due"
        looks = str(len([poll for poll in child.reader.polls if not poll.error])) if child.reader.polls else ""
        phase = Text(child.phase, style=STYLES.get(child.phase, ""))
        grid.add_row(str(child.index), Text(child.job), phase, Text(child.reason), held, due, looks)
    return grid
