"""The phase contract's one vocabulary: every phase, whether it ends the loop, and how a run ends in it.

``Phase`` is what the evaluator answers (PENDING to UNKNOWN), what only the
loop can see (NOT_FOUND: the job is gone; TIMED_OUT: its deadline passed),
and what the state machine's Catch sets when a step failed for good (ERROR).
Each phase carries its outcome (its row in ``Phase``): whether it ends the loop (the
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
    """Where a job is, in one word; each with its outcome: the table below, one row a phase."""

    terminal: bool  # the loop ends in this phase
    error_name: str | None  # the Error an execution that ends in it fails with (None: it succeeds, or a step's own)
    exit_code: int  # jobsync run's and jobsync status's
    evaluated: bool  # the evaluator may answer it (else: the loop's NOT_FOUND, TIMED_OUT; the Catch's ERROR)

    def __new__(cls, word: str, terminal: bool, error_name: str | None, exit_code: int, evaluated: bool) -> Phase:
        phase = str.__new__(cls, word)
        phase._value_ = word
        phase.terminal, phase.error_name, phase.exit_code, phase.evaluated = terminal, error_name, exit_code, evaluated
        return phase

    # word          terminal  error name     exit code           evaluated
    PENDING = "PENDING", False, None, EXIT_RUNNING, True
    RUNNING = "RUNNING", False, None, EXIT_RUNNING, True
    SUSPENDED = "SUSPENDED", False, None, EXIT_RUNNING, True
    SUCCEEDED = "SUCCEEDED", True, None, EXIT_SUCCEEDED, True
    FAILED = "FAILED", True, "JobFailed", EXIT_JOB_FAILED, True
    STOPPED = "STOPPED", True, "JobStopped", EXIT_JOB_STOPPED, True
    UNKNOWN = "UNKNOWN", False, None, EXIT_RUNNING, True
    NOT_FOUND = "NOT_FOUND", True, "JobNotFound", EXIT_JOB_NOT_FOUND, False
    TIMED_OUT = "TIMED_OUT", True, "JobTimedOut", EXIT_JOB_TIMED_OUT, False
    # A step failed for good: the execution fails with that step's own error (the definition's StepFailed).
    ERROR = "ERROR", True, None, EXIT_OTHER_ERROR, False

    @property
    def outcome(self) -> Outcome:
        return Outcome(self.terminal, self.error_name, self.exit_code, self.evaluated)

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


OUTCOMES: dict[Phase, Outcome] = {phase: phase.outcome for phase in Phase}

# The phases the evaluator may answer, and those that end the loop.
EVALUATED = frozenset(p for p in Phase if p.evaluated)
TERMINAL = frozenset(p for p in Phase if p.terminal)
# The error names an execution fails with when its job did (JobFailed, JobStopped, ...), and their exit codes.
JOB_ERRORS: dict[str, int] = {
    o.error_name: o.exit_code for o in sorted(OUTCOMES.values(), key=lambda o: o.exit_code) if o.error_name
}
