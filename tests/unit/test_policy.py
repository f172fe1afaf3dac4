"""The wait policy: bounds, phases, the hint, the deadline and the history budget."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobsync.core.wait import PollState, WaitBounds, next_wait
from jobsync.evaluation.phase import Phase

BOUNDS = WaitBounds()
DAY = 86_400.0


def state(phase=Phase.RUNNING, now=0.0, submitted_at=0.0, phase_since=0.0, deadline=7 * DAY, polls=0, expected=None):
    return PollState(phase, now, submitted_at, phase_since, deadline, polls, expected)


def test_pending_starts_short_and_stays_under_its_cap_for_a_while():
    assert next_wait(state(Phase.PENDING, now=0), BOUNDS) == BOUNDS.min_seconds
    assert next_wait(state(Phase.PENDING, now=600), BOUNDS) == BOUNDS.pending_max_seconds


def test_a_job_queued_for_hours_is_polled_less_often():
    assert next_wait(state(Phase.PENDING, now=3600), BOUNDS) == 180  # 0.05 x 3600 s
    assert next_wait(state(Phase.PENDING, now=5 * 3600), BOUNDS) == BOUNDS.running_max_seconds


def test_running_wait_grows_with_the_run_up_to_its_cap():
    early = next_wait(state(now=60), BOUNDS)
    later = next_wait(state(now=1800), BOUNDS)
    late = next_wait(state(now=10 * 3600), BOUNDS)
    assert BOUNDS.min_seconds == early < later < late == BOUNDS.running_max_seconds
    assert later == math.ceil(3.5 * math.sqrt(1800))  # 149 s


def test_hint_tightens_inside_the_window():
    expected = 2 * 3600.0
    inside = next_wait(state(now=expected, expected=expected), BOUNDS)
    assert inside == math.ceil(1.5 * math.sqrt(0.4 * expected))
    # Just before the window, halving the distance waits less than the no-hint rule would.
    close = state(now=0.8 * expected - 100, expected=expected)
    assert next_wait(close, BOUNDS) == inside < next_wait(state(now=0.8 * expected - 100), BOUNDS)


@pytest.mark.parametrize("expected", [1800.0, 7200.0, 86_400.0])
@pytest.mark.parametrize("since", [0.0, 300.0])
def test_before_its_window_a_hint_never_waits_longer_than_no_hint(expected, since):
    now = since
    while now < 0.8 * expected:
        with_hint = next_wait(state(now=now, phase_since=since, expected=expected), BOUNDS)
        assert with_hint <= next_wait(state(now=now, phase_since=since), BOUNDS)
        now += with_hint


def test_a_job_failing_early_is_noticed_as_fast_with_a_two_hour_hint():
    # The report: expectedDurationSeconds 7200, running from the start, failed at 00:21:30. The first
    # wait used to be 2,823 s (noticed at 00:48:58); now the polls are those of the no-hint rule.
    failed_at, expected = 21.5 * 60, 7200.0

    def noticed(hint: float | None) -> float:
        now = 0.0
        while now < failed_at:
            now += next_wait(state(now=now, expected=hint), BOUNDS)
        return now

    assert noticed(expected) - failed_at <= noticed(None) - failed_at < 150


def test_hint_that_was_wrong_falls_back_to_the_no_hint_rule():
    expected = 3600.0
    after = state(now=2 * expected, phase_since=0, expected=expected)
    assert next_wait(after, BOUNDS) == next_wait(state(now=2 * expected), BOUNDS)


def test_never_waits_past_the_deadline():
    assert next_wait(state(now=1000, deadline=1030, expected=10 * 3600), BOUNDS) == 30
    assert next_wait(state(now=1000, deadline=1000), BOUNDS) == 1


def test_float_noise_in_the_time_left_does_not_pass_the_deadline():
    # Found by hypothesis: 2.2 - 1.2 = 1.0000000000000002, and ceil made that 2 s.
    s = state(Phase.PENDING, now=1.2, phase_since=0.0, deadline=2.2, polls=0)
    assert s.deadline - s.now > 1
    assert next_wait(s, BOUNDS) == 1
    assert next_wait(state(now=10.0, deadline=12.7), BOUNDS) == 2  # rounded down when >= 1 s is left
    assert next_wait(state(now=10.0, deadline=10.4), BOUNDS) == 1  # less than 1 s left: still 1


def test_budget_floor_stretches_waits_when_polls_run_low():
    # 50 polls left for 10 hours: at least 720 s apart, even while PENDING.
    s = state(Phase.PENDING, now=0, deadline=36_000, polls=BOUNDS.poll_budget - 50)
    assert next_wait(s, BOUNDS) == 720


def test_budget_floor_stays_out_of_the_way_while_the_budget_suffices():
    # 7 days fit in 2,400 polls 420 s apart: a fresh PENDING job still gets short waits.
    assert next_wait(state(Phase.PENDING, now=0, deadline=7 * DAY), BOUNDS) == BOUNDS.min_seconds


def test_same_inputs_same_wait():
    s = state(now=5000, expected=20_000)
    assert {next_wait(s, BOUNDS) for _ in range(10)} == {next_wait(s, BOUNDS)}


def test_bounds_are_checked():
    with pytest.raises(ValueError, match="min"):
        WaitBounds(min_seconds=0)
    with pytest.raises(ValueError, match="running_max"):
        WaitBounds(running_max_seconds=5)


@given(
    phase=st.sampled_from(list(Phase)),
    now=st.floats(0, 30 * DAY),
    since=st.floats(0, 30 * DAY),
    left=st.floats(0, 30 * DAY),
    polls=st.integers(0, 5000),
    expected=st.none() | st.floats(1, 30 * DAY),
)
def test_wait_is_a_positive_whole_number_within_the_deadline(phase, now, since, left, polls, expected):
    s = PollState(phase, now, 0.0, min(since, now), now + left, polls, expected)
    wait = next_wait(s, BOUNDS)
    assert isinstance(wait, int)
    assert 1 <= wait <= max(1, math.ceil(left))
    left_exact = s.deadline - s.now
    assert wait <= left_exact or left_exact < 1
    assert wait <= max(BOUNDS.max_seconds, math.ceil(left / max(1, BOUNDS.poll_budget - polls)))


@pytest.mark.parametrize("timeout_days", [0.5, 7, 30])
def test_a_job_stuck_pending_until_its_deadline_fits_the_history(timeout_days):
    deadline, now, polls = timeout_days * DAY, 0.0, 0
    while now < deadline:
        now += next_wait(state(Phase.PENDING, now=now, deadline=deadline, polls=polls), BOUNDS)
        polls += 1
    assert polls <= BOUNDS.poll_budget


@pytest.mark.parametrize("phase", [Phase.PENDING, Phase.RUNNING])
@pytest.mark.parametrize("timeout_days", [1, 7, 30])
def test_any_job_reaches_its_deadline_within_the_poll_budget(phase, timeout_days):
    deadline = timeout_days * DAY
    now, polls = 0.0, 0
    while now < deadline:
        now += next_wait(state(phase, now=now, deadline=deadline, polls=polls), BOUNDS)
        polls += 1
    assert polls <= BOUNDS.poll_budget
