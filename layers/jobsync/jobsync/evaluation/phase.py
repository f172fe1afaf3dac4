"""The evaluation every part of jobsync speaks: a ``Phase`` (``jobsync.core.outcome``) and why."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from jobsync.core.outcome import Phase

__all__ = ["Evaluation", "Phase"]


@dataclass(frozen=True)
class Evaluation:
    """The verdict on one job's status: one of the evaluated phases (``Phase.evaluated``) and why.

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
