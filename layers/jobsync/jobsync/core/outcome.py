"""The phase contract's one vocabulary: every phase, whether it ends the loop, and how a run ends in it.

``Phase`` is what the evaluator answers (PENDING to UNKNOWN), what only the
loop can see (NOT_FOUND: the job is gone; TIMED_OUT: its deadline passed),
and what the state machine's Catch sets when a step failed for good (ERROR).
Each phase carries its outcome (``OUTCOMES``): whether it ends the loop (the
state machine's IsDone reads the loop state's ``terminal``), the error name
the execution fails with (its ``Outcome`` state), and the exit code the
command line gives for it. Everything else reads them from here: the
evaluator, the status step, the notifier's events, the CLI, and a test that
holds the definition's ``Outcome`` and ``IsDone`` and the template's event
patterns to this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# Exit codes of `jobsync run` and `jobsync status`, one per way an execution ends.
EXIT_SUCCEEDED = 0
EXIT_JOB_FAILED = 3
EXIT_JOB_STOPPED = 4
EXIT_JOB_TIMED_OUT = 5
EXIT_JOB_NOT_FOUND = 6
EXIT_OTHER_ERROR = 7  # a step's error (SubmitFailed, StepFailed), an aborted or timed-out execution
EXIT_RUNNING = 8  # the execution has not ended


class Phase(StrEnum):
    """Where a job is, in one word."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
    UNKNOWN = "UNKNOWN"
    NOT_FOUND = "NOT_FOUND"
    TIMED_OUT = "TIMED_OUT"
    ERROR = "ERROR"

    @property
    def outcome(self) -> Outcome:
        return OUTCOMES[self]

    @property
    def terminal(self) -> bool:
        """The loop ends in this phase."""
        return self.outcome.terminal

    @property
    def error_name(self) -> str | None:
        """The ``Error`` an execution that ends in this phase fails with (None: it succeeds, or a step's own)."""
        return self.outcome.error_name

    @property
    def exit_code(self) -> int:
        return self.outcome.exit_code

    @property
    def evaluated(self) -> bool:
        """The evaluator may answer it; the others come from the loop (NOT_FOUND, TIMED_OUT) or its Catch (ERROR)."""
        return self.outcome.evaluated

    @property
    def runs(self) -> bool:
        """The job itself runs: nothing but its end (or a person) changes it, so looks may be far apart."""
        return self in (Phase.RUNNING, Phase.SUSPENDED)


@dataclass(frozen=True)
class Outcome:
    """How a run whose loop state is in a phase goes on or ends."""

    terminal: bool
    error_name: str | None
    exit_code: int
    evaluated: bool = True


_GOES_ON = Outcome(terminal=False, error_name=None, exit_code=EXIT_RUNNING)

OUTCOMES: dict[Phase, Outcome] = {
    Phase.PENDING: _GOES_ON,
    Phase.RUNNING: _GOES_ON,
    Phase.SUSPENDED: _GOES_ON,
    Phase.UNKNOWN: _GOES_ON,
    Phase.SUCCEEDED: Outcome(terminal=True, error_name=None, exit_code=EXIT_SUCCEEDED),
    Phase.FAILED: Outcome(terminal=True, error_name="JobFailed", exit_code=EXIT_JOB_FAILED),
    Phase.STOPPED: Outcome(terminal=True, error_name="JobStopped", exit_code=EXIT_JOB_STOPPED),
    Phase.NOT_FOUND: Outcome(terminal=True, error_name="JobNotFound", exit_code=EXIT_JOB_NOT_FOUND, evaluated=False),
    Phase.TIMED_OUT: Outcome(terminal=True, error_name="JobTimedOut", exit_code=EXIT_JOB_TIMED_OUT, evaluated=False),
    # A step failed for good: the execution fails with that step's own error (the definition's StepFailed).
    Phase.ERROR: Outcome(terminal=True, error_name=None, exit_code=EXIT_OTHER_ERROR, evaluated=False),
}

# The phases the evaluator may answer, and those that end the loop.
EVALUATED = frozenset(p for p in Phase if p.evaluated)
TERMINAL = frozenset(p for p in Phase if p.terminal)
# The error names an execution fails with when its job did (JobFailed, JobStopped, ...), and their exit codes.
JOB_ERRORS: dict[str, int] = {
    o.error_name: o.exit_code for o in sorted(OUTCOMES.values(), key=lambda o: o.exit_code) if o.error_name
}
