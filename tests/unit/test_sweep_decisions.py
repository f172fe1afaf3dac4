"""When the sweeper looks at a waiting execution's job, and when it leaves it alone (jobsync.core.sweep.why_look)."""

from __future__ import annotations

import pytest

from jobsync import clock
from jobsync.core.ours import execution_label
from jobsync.core.outcome import Phase
from jobsync.core.state import LoopState
from jobsync.core.sweep import Seen, why_look
from jobsync.settings import Settings

T0 = clock.parse("2026-01-01T00:00:00Z") or 0.0
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:sweep"
SETTINGS = Settings(completion_mode="callback", sweep_seconds=120)  # not_found_grace_seconds: 60


def waiting(phase: str = "RUNNING", sweep_at: float | None = None) -> LoopState:
    state = LoopState.model_validate(
        {
            "job": {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "namespace": "ml-training",
                "name": "train-1a2b3c4d",
                "uid": "uid-1",
            },
            "execution": EXECUTION,
            "submittedAt": clock.isoformat(T0),
            "deadline": clock.isoformat(T0 + 86_400),
            "phase": phase,
            "phaseSince": clock.isoformat(T0),
            "sweepAt": clock.isoformat(sweep_at) if sweep_at is not None else None,
        }
    )
    return state


def seen(phase: Phase, uid: str = "uid-1", execution: str = EXECUTION) -> Seen:
    return Seen("train-1a2b3c4d", uid, execution_label(execution), phase, phase.terminal)


OTHER = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:other"


@pytest.mark.parametrize(
    ("state", "listed", "now", "why"),
    [
        # The notifier missed an end: the LIST says so.
        (waiting(), seen(Phase.SUCCEEDED), T0 + 600, "the LIST shows it SUCCEEDED and no event resumed the execution"),
        (waiting(), seen(Phase.FAILED), T0 + 600, "the LIST shows it FAILED and no event resumed the execution"),
        # Gone from the LIST: past the not-found grace only (before it, the API may not show it yet).
        (waiting(), None, T0 + 61, "the LIST no longer shows it"),
        (waiting("PENDING"), None, T0 + 30, None),
        # A starting job's check, at the moment callback_wait gives; not before.
        (waiting("PENDING", sweep_at=T0 + 121), seen(Phase.PENDING), T0 + 121, "a starting job's check is due"),
        (waiting("PENDING", sweep_at=T0 + 121), seen(Phase.PENDING), T0 + 120, None),
        # Another phase than the last look's: the stored state catches up (a start, a job back to PENDING).
        (
            waiting("PENDING", sweep_at=T0 + 900),
            seen(Phase.RUNNING),
            T0 + 200,
            "the LIST shows it RUNNING, its last look PENDING",
        ),
        (waiting("RUNNING"), seen(Phase.PENDING), T0 + 900, "the LIST shows it PENDING, its last look RUNNING"),
        # Nothing new.
        (waiting("RUNNING"), seen(Phase.RUNNING), T0 + 9000, None),
        # Not the execution's job: another object of that name, or another execution's: never looked at.
        (waiting(), seen(Phase.SUCCEEDED, uid="uid-2"), T0 + 600, None),
        (waiting(), seen(Phase.SUCCEEDED, execution=OTHER), T0 + 600, None),
        (waiting("PENDING", sweep_at=T0 + 121), seen(Phase.PENDING, uid="uid-2"), T0 + 600, None),
    ],
)
def test_the_sweeper_looks_when_the_list_or_the_stored_state_says_so(state, listed, now, why):
    assert why_look(state, listed, now, SETTINGS) == why
