"""The wait: how long an execution waits before its next look at the job, in every completion mode.

The policy (``next_wait``) is poll mode's; watch mode's wait is the watch
itself (``watch_hold``), callback mode's the time until something no event
announces could be decided (``callback_wait``). All of them then pass the
same two guards (``within_budget``): one history budget, one deadline.

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
  about sqrt(t) (the benchmark compares it with a linear growth:
  docs/performance.md).

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
  window instead saves polls, but sees a failure before the window late.)

Then two guards, in this order, the same in every completion mode (``within_budget``;
``next_look_wait`` applies them to watch and callback mode's waits too):

* history budget: once the looks left could not cover the time left at the
  mode's longest wait apart (``looks_left * spacing < deadline - now``;
  poll mode: ``running_max``), ``w >= (deadline - now) / looks_left``. From
  then on the looks are spread evenly to the deadline, so it is reached
  before the execution's history fills, whatever the job's length. The
  looks an execution may make are the poll budget's events at what one look
  costs in the mode (``WaitBounds.looks``); with the defaults poll mode
  spreads its looks only for deadlines past ``poll_budget x running_max``;
* deadline: ``w <= deadline - now`` (never wait past it), and ``w >= 1``;
  while a queued job's queue budget runs, its end is the deadline here
  (``LoopState.look_deadline``).

``in_phase`` is the time since jobsync first saw the current phase. The result
is a whole number of seconds, ``ceil(w)``, except that it is never more than
the time left: ``floor(deadline - now)`` when that is at least 1 s (1 when
less is left). It depends only on its inputs. A look
then adds a jitter of up to 10 %, derived from the job and the poll number
(``jittered``), so jobs submitted together spread apart.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from jobsync.core.outcome import Phase
from jobsync.core.state import JobRef, LoopState, instant, seconds
from jobsync.core.stuck import Grace, grace_seconds
from jobsync.settings import LOOK_EVENTS, POLL_EVENTS, Settings, WaitBounds

__all__ = [
    "JITTER_FRACTION",
    "LOOK_EVENTS",
    "POLL_EVENTS",
    "PollState",
    "Starting",
    "WaitBounds",
    "budget_floor",
    "callback_wait",
    "jittered",
    "look_bounds",
    "next_look_wait",
    "next_wait",
    "policy_wait",
    "poll_state",
    "poll_wait",
    "sweep_due",
    "watch_hold",
    "with_next_wait",
    "within_budget",
]

PENDING_GROWTH = 0.25
QUEUED_GROWTH = 0.05
RUNNING_SQRT_FACTOR = 3.5
NEAR_FACTOR = 1.5


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
    if state.phase.runs:
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


# --------------------------------------------------------------------------- every mode's next look

# Jitter: at most this share of the wait is added (see ``jittered``).
JITTER_FRACTION = 0.1


@dataclass(frozen=True)
class Starting:
    """What a look at a starting job saw that no event announces (``callback_wait`` times the next look by it).

    ``visible``: the API showed the job (one it never shows ends NOT_FOUND after
    ``not_found_grace_seconds``); ``reconciled``: it has a status (one that never
    gets one ends OperatorNotReconciling after ``operator_timeout_seconds``);
    ``stuck_until``: when the stuck pod the look found could first be failed
    (``jobsync.core.stuck.Judgement.ends_at``), None when it found none.
    """

    visible: bool = True
    reconciled: bool = True
    stuck_until: float | None = None


def poll_state(state: LoopState, now: float) -> PollState:
    """What the policy knows of ``state`` at ``now``."""
    return PollState(
        phase=state.phase if state.phase.evaluated else Phase.UNKNOWN,
        now=now,
        submitted_at=seconds(state.submittedAt),
        phase_since=seconds(state.phaseSince),
        deadline=state.look_deadline(now),
        polls=state.polls,
        expected_duration=state.expectedDurationSeconds,
    )


def with_next_wait(
    state: LoopState,
    now: float,
    settings: Settings,
    watched: float = 0.0,
    jitter: bool = True,
    starting: Starting | None = None,
) -> LoopState:
    """``state`` with ``waitSeconds`` from ``next_look_wait`` (0 once the loop ended).

    ``jitter=False`` gives the mode's wait without its jitter.
    """
    if state.terminal:
        return state.model_copy(update={"waitSeconds": 0, "sweepAt": None})
    polled = poll_state(state, now)
    wait = next_look_wait(polled, settings, state.job, watched, starting, jitter)
    update: dict[str, Any] = {"waitSeconds": wait}
    if settings.wait.sweeps:
        due = sweep_due(polled, settings, starting)
        update["sweepAt"] = None if due is None else instant(math.ceil(due))  # never before the moment
    return state.model_copy(update=update)


def sweep_due(state: PollState, settings: Settings, starting: Starting | None = None) -> float | None:
    """When the sweeper should next look at a starting job: the moment ``callback_wait`` would end the Await
    (a stuck pod's grace, a missing operator, a job the API never shows, the first pod check, the cadence).

    None once the job runs: its end comes as the notifier's event, and the sweeper's LIST sees it if none comes.
    """
    if state.phase.runs:
        return None
    return state.now + callback_wait(state, settings, starting)


def look_bounds(settings: Settings) -> WaitBounds:
    """The wait bounds with the history events one look costs in the deployment's mode."""
    return replace(settings.wait.bounds, look_events=LOOK_EVENTS[settings.wait.mode])


def next_look_wait(
    state: PollState,
    settings: Settings,
    job: JobRef,
    watched: float = 0.0,
    starting: Starting | None = None,
    jitter: bool = True,
) -> int:
    """Seconds until the next look, in every completion mode: the mode's own wait, then the guards all share.

    The mode's wait:

    * poll: the policy's (``next_wait``), with the job's jitter (``jittered``),
      so jobs submitted together do not poll in lockstep;
    * watch: none: the watch (``watched`` s) did the waiting;
    * callback: ``callback_wait``, with what the look saw of a starting job
      (``starting``); only a pending job's pace gets the jitter. With the
      stack's sweeper (``WaitSettings.sweeps``) the sweeper takes those looks
      (``sweep_due``) and the Await waits ``backstop_seconds``, should both the
      notifier and the sweeper fail;

    Then ``within_budget``: the history budget's floor, with the looks a
    mode's history allows (``look_bounds``) and the mode's longest wait as its
    spacing (RunningMaxWaitSeconds; WatchSeconds; SafetyPollSeconds once the
    job runs), over the safety interval if need be (a healthy job's execution
    must not end at 25,000 events); then the deadline.
    """
    bounds = look_bounds(settings)
    waits = settings.wait
    left = state.deadline - state.now
    if waits.mode == "watch":
        return within_budget(0, state, bounds, waits.watch_seconds, spent=watched)
    if waits.sweeps:
        return within_budget(waits.backstop_seconds, state, bounds, waits.backstop_seconds)
    if waits.mode == "callback":
        longest = min(bounds.max_seconds, waits.safety_poll_seconds)

        def spread(wait: int) -> int:
            return jittered(wait, job, state.polls, left, longest)

        wanted = callback_wait(state, settings, starting, spread if jitter else None)
        spacing = waits.safety_poll_seconds if state.phase.runs else min(longest, bounds.running_max_seconds)
        return within_budget(wanted, state, bounds, spacing)
    return poll_wait(state, bounds, job, jitter)


def poll_wait(state: PollState, bounds: WaitBounds, job: JobRef, jitter: bool = True) -> int:
    """Poll mode's wait: the policy's (``next_wait``) with the job's jitter (``jittered``), under the history
    budget and the deadline (``within_budget``). The benchmark's simulator waits by it too."""
    wait = next_wait(state, bounds)
    if jitter:
        wait = jittered(wait, job, state.polls, state.deadline - state.now, bounds.max_seconds)
    return within_budget(wait, state, bounds, bounds.running_max_seconds)


def callback_wait(
    state: PollState,
    settings: Settings,
    starting: Starting | None = None,
    spread: Callable[[int], int] | None = None,
) -> int:
    """Callback mode's own wait: how long the next Await waits for the notifier's event before one look.

    Once the job runs (RUNNING, SUSPENDED), only a dead notifier can leave its
    end unannounced: ``safety_poll_seconds``, never past the deadline.

    While it starts (PENDING, UNKNOWN), the notifier still announces whatever
    the job reports itself: its end, its deletion. A look has value only where
    no event comes: a stuck pod whose grace ends, an operator that never writes
    a status, a job the API never shows. So the wait runs to the first moment
    one of those could be decided (``starting`` is what this look saw):

    * the first look that reads the pods, 1 s past ``diagnose_after_seconds``
      after submission (no look reads them before: until then nothing else counts);
    * the stuck pod's ``stuck_until`` + 1 s (its grace's end, or when its events may end it);
    * ``operator_timeout_seconds`` + 1 s after submission, while the job has no status;
    * ``not_found_grace_seconds`` after submission, while the API does not show it;
    * else the cadence: ``max(shortest grace, the policy's PENDING wait)`` from
      now, with the job's jitter (``spread``; none in the moments above, where a
      later look only delays the verdict), stretched to such a moment that
      comes less than ``min_seconds`` after it (the look after it would wait
      ``min_seconds``, and pass the moment);

    never below ``min_seconds``, never past the deadline nor ``safety_poll_seconds``.
    ``next_look_wait`` then holds it to the history budget, as every mode's wait.

    The cadence is how late a pod that gets stuck after this look is first
    seen; poll mode sees it within one PENDING wait, but also fails it up to
    one PENDING wait after its grace ends, where this rule fails it within a
    second. A pull that can never succeed is timed from the pod's start: a pod
    that starts after this look cannot fail before this look +
    ``image_error_grace_seconds``, the shortest grace; only a pull error of a
    pod that started longer ago than that (a later container's image) is seen
    up to one cadence after it appears. A long grace does not stretch the
    cadence: a pod waiting hours for capacity can turn NeverSchedulable, or
    fail its pull once placed, and both count from the look that sees them.
    After a long PENDING the policy's wait (``QUEUED_GROWTH``) is the longer
    and keeps poll mode's pace. The job's own changes need no look: its end
    comes as an event, and its start only makes the next wait the safety
    interval.
    """
    left = state.deadline - state.now
    waits, starts = settings.wait, settings.starts
    if state.phase.runs:
        return max(1, math.floor(min(waits.safety_poll_seconds, left)))
    seen = starting or Starting()
    bounds = waits.bounds
    pods_read = state.submitted_at + starts.diagnose_after_seconds + 1
    moments = [pods_read] if state.now < pods_read else []
    if not seen.reconciled:
        moments.append(state.submitted_at + starts.operator_timeout_seconds + 1)
    if not seen.visible:
        moments.append(state.submitted_at + starts.not_found_grace_seconds)
    if seen.stuck_until is not None:
        moments.append(seen.stuck_until + 1)
    due = min((t for t in moments if t > state.now), default=math.inf)  # a moment past is no reason to look
    if state.now >= pods_read:
        shortest = min(grace_seconds(grace, settings) for grace in Grace)
        cadence = math.ceil(max(shortest, policy_wait(state, bounds)))
        paced = state.now + (spread(cadence) if spread else cadence)
        if paced < due and due - paced >= bounds.min_seconds:
            due = paced
    wait = max(due - state.now, bounds.min_seconds)
    whole = max(1, math.ceil(min(wait, waits.safety_poll_seconds, left)))
    # ceil(left) can pass the deadline when left carries float noise (as in next_wait).
    return min(whole, math.floor(left)) if left >= 1 else whole


def watch_hold(state: LoopState, phase: Phase, started: float, settings: Settings) -> float:
    """Watch mode: how long a look may hold its watch on a job seen in ``phase`` at ``started``.

    A pending job is watched no longer than the pending wait, so the pod
    diagnostics keep their pace; so is a job the last look found queued (its
    status says suspended, its queue said PENDING: the queue's changes are not
    the job's, and no watch on the job sees them). Nothing is watched past the
    deadline (nor a queued job past its queue's), nor a job that ended.
    """
    if phase.terminal:
        return 0.0
    hold = float(settings.wait.watch_seconds)
    queued = phase == Phase.SUSPENDED and state.phase == Phase.PENDING
    if phase in (Phase.PENDING, Phase.UNKNOWN) or queued:
        hold = min(hold, settings.wait.bounds.pending_max_seconds)
    return min(hold, state.look_deadline(started) - started)


def jittered(wait: int, job: JobRef, polls: int, left: float, longest: int) -> int:
    """``wait`` plus up to ``JITTER_FRACTION`` of it; never past the deadline (``left`` s away) nor
    ``longest`` (MaxWaitSeconds), unless the policy's wait already is; never below 1 s.

    The share comes from a hash of the job (its uid, else its name) and the
    poll number: jobs submitted together spread apart, and a run is
    reproducible (the same job at the same poll always gets the same wait).
    The policy's guarantees hold: the wait only grows, so it stays above
    the policy's floors, and it is cut back to the deadline.
    """
    digest = hashlib.sha256(f"{job.uid or job.name}/{polls}".encode()).digest()
    share = int.from_bytes(digest[:8], "big") / 2**64
    longer = min(wait + math.floor(share * JITTER_FRACTION * wait), max(wait, longest))
    return max(1, min(longer, max(wait, math.floor(left))))
