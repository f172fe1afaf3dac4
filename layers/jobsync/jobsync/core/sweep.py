"""The sweeper's one decision: whether to look at a waiting execution's job now (``why_look``).

The stack's sweeper (``jobsync.run.sweep``) lists each kind once and keeps, of
the jobs the waiting executions created, what the LIST showed (``Seen``). It
looks at a job when:

* the LIST shows it ended, or no longer shows it (past the not-found grace):
  the notifier missed it (dead, restarting, an event lost);
* its ``sweepAt`` has come: a starting job's check (a stuck pod's grace, an
  operator that never reconciles, the pods' first reading), timed by the very
  rule that timed the Await's timeout (``jobsync.core.wait.sweep_due``);
* the LIST shows another phase than its last look saw (a job that started,
  or went back to PENDING);

and leaves every other execution alone. A job is the execution's by its name,
its uid and its execution label, as every step checks (``jobsync.core.ours``):
another object of that name is never looked at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobsync.bodies import meta
from jobsync.core.ours import EXECUTION_LABEL, execution_label
from jobsync.core.outcome import Phase
from jobsync.core.state import LoopState, seconds
from jobsync.evaluation import evaluate
from jobsync.settings import Settings


@dataclass(frozen=True)
class Seen:
    """What the LIST showed of a waiting execution's job: its name, uid, execution label and phase."""

    name: str
    uid: str
    execution_label: str
    phase: Phase
    terminal: bool

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Seen:
        seen = meta(obj)
        evaluation = evaluate(obj)
        label = seen.labels.get(EXECUTION_LABEL) or ""
        return cls(seen.name, seen.uid, label, evaluation.phase, evaluation.terminal)

    def belongs_to(self, state: LoopState) -> bool:
        """The execution's own job: created by it (its label) and, when known, the very object (its uid)."""
        if self.execution_label != execution_label(state.execution):
            return False
        return state.job.uid is None or self.uid == state.job.uid


def why_look(state: LoopState, seen: Seen | None, now: float, settings: Settings) -> str | None:
    """Why the sweeper looks at a waiting execution's job now, or None to leave it alone."""
    if seen is not None and not seen.belongs_to(state):
        return None  # the name now belongs to another object: never ours to look at
    if seen is not None and seen.terminal:
        return f"the LIST shows it {seen.phase} and no event resumed the execution"
    if seen is None and now - seconds(state.submittedAt) >= settings.starts.not_found_grace_seconds:
        return "the LIST no longer shows it"
    if state.sweepAt is not None and now >= seconds(state.sweepAt):
        return "a starting job's check is due"
    if seen is not None and seen.phase != state.phase:
        return f"the LIST shows it {seen.phase}, its last look {state.phase}"
    return None
