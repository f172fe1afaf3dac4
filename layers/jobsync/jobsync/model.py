"""The phase contract and the evaluation every part of jobsync speaks."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Phase(StrEnum):
    """Where a job is, in one word (design.md, "The phase contract")."""

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


class EvaluationError(ValueError):
    """The input cannot be evaluated: not a Kubernetes object, or a kind jobsync does not know."""


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
