"""Every completion mode keeps the history budget: its looks, at what each costs in events, fit 25,000.

The looks a mode makes until the deadline are played through ``with_next_wait``
(what the steps call) on a job that never ends, for the worst settings the
template allows: SafetyPollSeconds at its minimum (60 s), WatchSeconds at its
shortest (60 s), deadlines up to a year (a Standard execution's longest life).
"""

from __future__ import annotations

import pytest

from jobsync import clock
from jobsync.core.outcome import Phase
from jobsync.core.wait import with_next_wait
from jobsync.run.inputs import LoopState
from jobsync.settings import Settings

DAY = 86_400
HISTORY_LIMIT = 25_000
# History events one look costs, as the local run's histories show them
# (tests/integration/test_history_budget.py counts them): poll and watch, Wait 2,
# Status 5, IsDone 2; callback, IsDone 2, Await 6, Status 5.
LOOK_EVENTS = {"poll": 9, "watch": 9, "callback": 13, "sweeper": 13}
# What an execution spends besides its looks: 20 events of its own (test_run_job counts them) and
# room for retried attempts and LostSight laps: what 2,400 polls of 9 leave (docs/state-machine.md).
RESERVE = HISTORY_LIMIT - 2400 * 9
T0 = clock.parse("2026-01-01T00:00:00Z") or 0.0

MODES = {
    "poll": Settings(),
    "watch": Settings(completion_mode="watch", watch_seconds=60),
    "callback": Settings(completion_mode="callback", safety_poll_seconds=60),
    # With the sweeper, the Await's own timeout is the backstop; at its shortest (60 s) it still keeps the budget.
    "sweeper": Settings(completion_mode="callback", sweep_seconds=120, backstop_seconds=60),
}


def looks_to_deadline(settings: Settings, phase: str, days: float, watched: float = 0.0) -> int:
    """How many looks a job in ``phase`` from submission to its deadline ``days`` later gets."""
    state = LoopState.model_validate(
        {
            "job": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": "t"},
            "execution": "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:budget",
            "submittedAt": clock.isoformat(T0),
            "deadline": clock.isoformat(T0 + days * DAY),
            "phase": phase,
            "phaseSince": clock.isoformat(T0),
        }
    )
    now, deadline, looks = T0, T0 + days * DAY, 0
    while now < deadline:
        # Watch mode: each look's watch holds up to WatchSeconds before the Wait state.
        held = min(watched, deadline - now)
        now += held
        state = with_next_wait(state, now, settings, watched=held)
        now += state.waitSeconds
        looks += 1
        state = state.model_copy(update={"polls": state.polls + 1})
        assert looks <= 100_000, "the looks never reach the deadline"
    return looks


@pytest.mark.parametrize("days", [2, 30, 365])
@pytest.mark.parametrize("phase", ["PENDING", "RUNNING"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_looks_of_every_mode_fit_the_history_whatever_the_deadline(mode, phase, days):
    settings = MODES[mode]
    looks = looks_to_deadline(settings, phase, days, watched=settings.watch_seconds)
    assert looks * LOOK_EVENTS[mode] + RESERVE <= HISTORY_LIMIT


def test_a_callback_job_running_two_days_with_the_shortest_safety_poll_stays_in_budget():
    # The defect: a healthy job's 60 s safety polls over 2 days took 2,880 rounds of 13 events.
    looks = looks_to_deadline(MODES["callback"], "RUNNING", 2)
    assert looks * LOOK_EVENTS["callback"] < HISTORY_LIMIT - RESERVE
    # ... and the safety interval holds while the budget allows it: a 1-day deadline fits at 60 s.
    assert looks_to_deadline(MODES["callback"], "RUNNING", 0.5) == 0.5 * DAY / 60


def test_watch_mode_without_a_watch_waits_as_poll_mode():
    # CompletionMode=watch with no WatchSeconds set: nothing holds a watch, so the Wait state must wait.
    unwatched = Settings(completion_mode="watch", watch_seconds=0)
    assert looks_to_deadline(unwatched, "RUNNING", 2) == looks_to_deadline(MODES["poll"], "RUNNING", 2)


def test_with_the_sweeper_the_await_waits_the_backstop_whatever_the_phase_and_the_sweeper_gets_the_checks():
    sweeper = Settings(completion_mode="callback", sweep_seconds=120)
    for phase in ("PENDING", "RUNNING", "UNKNOWN"):
        assert looks_to_deadline(sweeper, phase, 2) == 8  # 6 h apart: 2 days are 8 looks
        assert looks_to_deadline(sweeper, phase, 0.1) == 1  # never past the deadline
    state = LoopState.model_validate(
        {
            "job": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": "t"},
            "execution": "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:budget",
            "submittedAt": clock.isoformat(T0),
            "deadline": clock.isoformat(T0 + DAY),
            "phase": "PENDING",
            "phaseSince": clock.isoformat(T0),
        }
    )
    pending = with_next_wait(state, T0, sweeper)
    # The starting job's first check (the pods read 121 s after submission) is the sweeper's, not a timeout's.
    assert (pending.waitSeconds, pending.payload()["sweepAt"]) == (6 * 3600, clock.isoformat(T0 + 121))
    running = with_next_wait(state.model_copy(update={"phase": Phase.RUNNING}), T0 + 600, sweeper)
    assert (running.waitSeconds, running.sweepAt) == (6 * 3600, None)  # its end comes as an event, or a LIST
    ended = with_next_wait(pending.model_copy(update={"terminal": True, "phase": Phase.SUCCEEDED}), T0 + 700, sweeper)
    assert (ended.waitSeconds, ended.sweepAt) == (0, None)
    # Without the sweeper nothing changes: the Await times out at the check itself.
    alone = with_next_wait(state, T0, Settings(completion_mode="callback"))
    assert (alone.waitSeconds, alone.sweepAt) == (121, None)
