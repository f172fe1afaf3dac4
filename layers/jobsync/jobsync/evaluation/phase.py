"""The phase contract (docs/phases.md) and the evaluation every part of jobsync speaks."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Phase(StrEnum):
    """Where a job is, in one word: what the evaluator answers."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
    UNKNOWN = "UNKNOWN"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_PHASES


TERMINAL_PHASES = frozenset({Phase.SUCCEEDED, Phase.FAILED, Phase.STOPPED})


class LoopPhase(StrEnum):
    """Where one execution's loop is: the evaluator's phases, and what only the loop can see.

    NOT_FOUND: the job is gone. TIMED_OUT: its deadline passed. ERROR: a step
    failed for good (set by the state machine's Catch, never by a Lambda).
    """

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
    def terminal(self) -> bool:
        """The loop ends in this phase (the state machine's IsDone reads the state's ``terminal``)."""
        return self in LOOP_ENDING

    @classmethod
    def of(cls, phase: Phase) -> LoopPhase:
        return cls(str(phase))


LOOP_ENDING = frozenset(
    {
        LoopPhase.SUCCEEDED,
        LoopPhase.FAILED,
        LoopPhase.STOPPED,
        LoopPhase.NOT_FOUND,
        LoopPhase.TIMED_OUT,
        LoopPhase.ERROR,
    }
)


@dataclass(frozen=True)
class Evaluation:
    """The verdict on one job's status.

    ``since`` is the RFC 3339 timestamp of the deciding condition or status
    change, when the object says it.
    """

    phase: Phase
    reason: str
    message: str = ""
    since: str | None = None
    kind: str = ""

    @property
    def terminal(self) -> bool:
        return self.phase.terminal

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["phase"] = str(self.phase)
        out["terminal"] = self.terminal
        return out
