"""The wait policy: how long the state machine waits before the next poll.

The fixed 600 s loop this replaces notices a finished job up to ten minutes
late and spends as many polls on a stuck start as on hour nine of a training
run. This policy spends polls where a change is likely.

For a poll at time ``now`` (all in seconds, ``clamp(x, lo, hi)`` bounds x):

* PENDING, UNKNOWN (a start can get stuck; notice early; but a job queued
  for hours need not be asked every minute)::

      w = max(clamp(min + PENDING_GROWTH * in_phase, min, pending_max),
              min(QUEUED_GROWTH * in_phase, running_max))

* RUNNING or SUSPENDED, no hint (a job that has run for t will likely run a
  while longer; the wait grows with the square root of the run)::

      w = clamp(RUNNING_SQRT_FACTOR * sqrt(in_phase), min, running_max)

  Spacing polls by 1/sqrt(hazard) minimises polls for a given mean delay;
  for run lengths spread over orders of magnitude (minutes to a day) that is
  about sqrt(t). In the benchmark (docs/performance.md) it needs a fifth
  fewer state transitions than a wait growing linearly with t, at the same
  mean delay (1.76x against 2.21x the fixed 10-minute loop's).

* RUNNING with ``expectedDurationSeconds`` E, elapsed since submission e, and
  the window [(1 - tol) E, (1 + tol) E] in which the end is expected::

      before the window:  w = clamp(min(max(near, (window_start - e) / 2), no_hint), min, max)
      inside it:          w = near = clamp(NEAR_FACTOR * sqrt(2 tol E), min, running_max)
      after it:           no_hint (the hint was wrong)

  where ``no_hint`` is the no-hint rule's wait above. Halving the distance to
  the window lands inside it after a few polls; capping that at ``no_hint``
  means a hint never waits longer than no hint would before its window, so a
  job that fails early (a bad configuration, out of memory) is noticed as
  fast as without a hint: the hint says when the job should end, not that it
  cannot fail before. Inside the window the spacing grows with the square
  root of the window's width: that spacing minimises polls for a given mean
  delay over jobs of different lengths. (Waiting out the distance to the
  window instead saves polls, but a failure at 20 minutes of a two-hour hint
  was then noticed 27 minutes late.)

Then two guards, in this order, the same in every completion mode (``within_budget``;
``jobsync.run.loop.next_look_wait`` applies them to watch and callback mode's waits too):

* history budget: once the looks left could not cover the time left at the
  mode's longest wait apart (``looks_left * spacing < deadline - now``;
  poll mode: ``running_max``), ``w >= (deadline - now) / looks_left``. From
  then on the looks are spread evenly to the deadline, so it is reached
  before the execution's history fills, whatever the job's length. The
  looks an execution may make are the poll budget's events at what one look
  costs in the mode (``WaitBounds.looks``: 2,400 polls of 9 events; 1,661
  callback rounds of 13). With the defaults poll mode never spreads for
  deadlines under 2,400 x 420 s = 11.6 days;
* deadline: ``w <= deadline - now`` (never wait past it), and ``w >= 1``.

``in_phase`` is the time since jobsync first saw the current phase. The result
is a whole number of seconds, ``ceil(w)``, except that it is never more than
the time left: ``floor(deadline - now)`` when that is at least 1 s (1 when
less is left). It depends only on its inputs. The status step
then adds a jitter of up to 10 %, derived from the job and the poll number
(``jobsync.run.loop.jittered``), so jobs submitted together spread apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from jobsync.evaluation.phase import Phase

PENDING_GROWTH = 0.25
QUEUED_GROWTH = 0.05
RUNNING_SQRT_FACTOR = 3.5
NEAR_FACTOR = 1.5

# History events one look costs, as counted in the local run's histories (docs/state-machine.md):
# poll and watch mode, Wait 2 + Status 5 + IsDone 2; callback mode, IsDone 2 + Await 6 (TaskStateEntered,
# TaskScheduled, TaskStarted, TaskSubmitted, TaskTimedOut, TaskStateExited) + Status 5.
POLL_EVENTS = 9
LOOK_EVENTS = {"poll": POLL_EVENTS, "watch": POLL_EVENTS, "callback": 13}


@dataclass(frozen=True)
class WaitBounds:
    """Bounds set in the template (MinWaitSeconds, MaxWaitSeconds, ...)."""

    min_seconds: int = 30
    max_seconds: int = 3600
    pending_max_seconds: int = 60
    running_max_seconds: int = 420
    hint_tolerance: float = 0.2
    # Polls one execution may make. Step Functions ends an execution at 25,000
    # history events; one poll costs 9 (docs/state-machine.md), so 2,400 polls
    # leave room for submit, cleanup, retries and the end states.
    poll_budget: int = 2400
    # History events one look costs in the completion mode (LOOK_EVENTS): the
    # poll budget's events buy fewer of the dearer looks (``looks``).
    look_events: int = POLL_EVENTS

    def __post_init__(self) -> None:
        if not 1 <= self.min_seconds <= self.pending_max_seconds <= self.max_seconds:
            raise ValueError("wait bounds need 1 <= min <= pending_max <= max")
        if not self.min_seconds <= self.running_max_seconds <= self.max_seconds:
            raise ValueError("wait bounds need min <= running_max <= max")
        if not 0 <= self.hint_tolerance < 1:
            raise ValueError("hint_tolerance must be in [0, 1)")
        if self.poll_budget < 2:
            raise ValueError("poll_budget must be at least 2")
        if self.look_events < 1:
            raise ValueError("look_events must be at least 1")

    @property
    def looks(self) -> int:
        """Looks one execution may make: the poll budget's history events at ``look_events`` each."""
        return max(2, self.poll_budget * POLL_EVENTS // self.look_events)


@dataclass(frozen=True)
class PollState:
    """What the policy knows at one poll."""

    phase: Phase
    now: float
    submitted_at: float
    phase_since: float
    deadline: float
    polls: int
    expected_duration: float | None = None


def _clamp(value: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, value))


def _near_spacing(expected: float, bounds: WaitBounds) -> float:
    width = 2 * bounds.hint_tolerance * expected
    return _clamp(NEAR_FACTOR * math.sqrt(width), bounds.min_seconds, bounds.running_max_seconds)


def _running_wait(state: PollState, bounds: WaitBounds) -> float:
    in_phase = max(0.0, state.now - state.phase_since)
    no_hint = _clamp(RUNNING_SQRT_FACTOR * math.sqrt(in_phase), bounds.min_seconds, bounds.running_max_seconds)
    expected = state.expected_duration
    if not expected or expected <= 0:
        return no_hint
    elapsed = state.now - state.submitted_at
    window_start = (1 - bounds.hint_tolerance) * expected
    window_end = (1 + bounds.hint_tolerance) * expected
    near = _near_spacing(expected, bounds)
    if elapsed < window_start:
        # Never longer than without the hint: a failure before the window is noticed as fast.
        approach = min(max(near, (window_start - elapsed) / 2), no_hint)
        return _clamp(approach, bounds.min_seconds, bounds.max_seconds)
    if elapsed <= window_end:
        return near
    return no_hint


def next_wait(state: PollState, bounds: WaitBounds) -> int:
    """Seconds to wait before the next poll (see the module docstring)."""
    return within_budget(policy_wait(state, bounds), state, bounds, bounds.running_max_seconds)


def policy_wait(state: PollState, bounds: WaitBounds) -> float:
    """The policy's wait for the phase and the hint, before the guards (``within_budget``)."""
    if state.phase in (Phase.RUNNING, Phase.SUSPENDED):
        return _running_wait(state, bounds)
    in_phase = max(0.0, state.now - state.phase_since)
    starting = _clamp(bounds.min_seconds + PENDING_GROWTH * in_phase, bounds.min_seconds, bounds.pending_max_seconds)
    return max(starting, min(QUEUED_GROWTH * in_phase, bounds.running_max_seconds))


def within_budget(wait: float, state: PollState, bounds: WaitBounds, spacing: float, spent: float = 0.0) -> int:
    """``wait`` under the guards every mode shares: the history budget, then the deadline, in whole seconds.

    ``spacing`` is the mode's longest wait (``budget_floor``); ``spent`` the
    time this look already took (watch mode's watch), which the floor counts.
    The result is at least ``budget_floor - spent``, never past the deadline:
    ``floor(deadline - now)`` when that is at least 1 s; at least 1 s, unless
    the mode asks for none (watch mode: the watch did the waiting).
    """
    least = 1 if wait > 0 else 0
    left = state.deadline - state.now
    # The floor spaces the looks' starts: this one began ``spent`` seconds ago.
    begun = replace(state, now=state.now - spent)
    wait = min(max(wait, budget_floor(begun, bounds, spacing) - spent), left)
    whole = max(least, math.ceil(wait))
    # ceil(left) can pass the deadline when left carries float noise (1.0000000000000002 -> 2).
    return min(whole, math.floor(left)) if left >= 1 else whole


def budget_floor(state: PollState, bounds: WaitBounds, spacing: float) -> float:
    """The least time between two looks that still reaches the deadline within the looks budget.

    0 while the looks left (``WaitBounds.looks`` less ``state.polls``),
    ``spacing`` apart, cover the time left; then the time left spread evenly
    over the looks left. Once it applies it keeps applying (each look takes
    one look and its share of the time), so any ``spacing`` keeps the budget;
    the mode's longest wait makes the spreading start when its own pace
    would first run out.
    """
    left = state.deadline - state.now
    looks_left = max(1, bounds.looks - state.polls)
    return left / looks_left if looks_left * spacing < left else 0.0
