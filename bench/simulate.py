"""Poll sequences under each wait policy, fed to the policy exactly as ``runs.poll`` feeds it.

Time starts at 0 when Submit creates the job. Submit asks the policy for the
first wait with phase PENDING; every poll then GETs the job, notes when the
phase it reports first appeared (``phase_since`` is the poll time at which it
changed), counts itself, and asks the policy for the next wait, with the status
step's jitter as the job's identity gives it (``jobsync.core.wait.poll_wait``:
a simulated job is known by its name, a replayed one by its uid). A job that
ended is noticed at the first poll at or after its end. Execution latency
(Lambda, state transitions: well under a second per poll) is left out.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bench.prices import Prices
from bench.statemachine import HISTORY_CAP, CostModel
from bench.workload import Job
from jobsync.core import wait as jobsync_policy
from jobsync.core.state import JobRef
from jobsync.core.wait import PollState, Starting, WaitBounds, budget_floor, next_look_wait, poll_wait, sweep_due
from jobsync.evaluation.phase import Phase
from jobsync.settings import Settings

DAY = 86_400
SIM_DEADLINE_S = 7 * DAY  # generous: no job in the workload reaches it
CAP_HORIZON_S = 30 * DAY  # the longest deadline the template allows (MaxTimeoutSeconds)
# Deadlines the history-cap check runs with: just over a week (a 7-day job, budget
# guard not yet needed) and the 30-day maximum (guard active from the first poll).
CAP_DEADLINES_S = (8 * DAY, CAP_HORIZON_S)
CAP_PENDING_S = 600.0
WATCH_SECONDS = 840  # the template's largest WatchSeconds: fewest polls
SAFETY_POLL_SECONDS = 3600  # the template's SafetyPollSeconds default (callback mode)
SWEEP_SECONDS = 120  # the template's SweepMinutes default, "2" (callback mode, Sweeper=ENABLED)
# From the operator's status write to the execution's end, until measured (bench.endtoend replaces it
# with the measured delays of the local run on the wall clock).
DEFAULT_EVENT_LATENCY_S = (1.0,)


ENDED = (Phase.SUCCEEDED, Phase.FAILED)


@dataclass(frozen=True)
class Policy:
    """How one contender decides its waits, and which state machine it runs on."""

    name: str
    description: str
    machine: str  # key of bench.statemachine.cost_models()
    fixed_seconds: int | None = None  # a constant Wait state; otherwise jobsync's next_wait
    bounds: WaitBounds = field(default_factory=WaitBounds)
    hint: bool = False  # pass the job's expectedDurationSeconds
    check_at_submit: bool = False  # the seed GETs the job straight after creating it
    # Module constants of jobsync.core.wait to override for a sweep (never written to the file).
    constants: tuple[tuple[str, float], ...] = ()
    # Watch mode (JOBSYNC_WATCH_SECONDS): each Status holds a watch up to this long.
    watch_seconds: int = 0
    # Callback mode (JOBSYNC_SAFETY_POLL_SECONDS): a running job is looked at this often; its end comes as an event.
    safety_poll_seconds: int = 0
    # Callback mode: Settings fields to change from their defaults, e.g. ("image_error_grace_seconds", 300).
    settings: tuple[tuple[str, int], ...] = ()
    # Which hint the caller passes: the workload's ±20 % one, or the learned one (Job.learned_hint_s).
    hint_source: str = "hint_s"
    # Watch and callback: seconds from the job's end to the execution's end, one per job in turn (measured).
    event_latency_s: tuple[float, ...] = DEFAULT_EVENT_LATENCY_S


def standard_policies() -> list[Policy]:
    return [
        Policy(
            "seed-600",
            "the hand-written eks:call loop: GET, Choice, Pass, Wait 600 s; no Lambda",
            machine="seed",
            fixed_seconds=600,
            check_at_submit=True,
        ),
        Policy("fixed-60", "jobsync's state machine, Wait fixed at 60 s", machine="jobsync", fixed_seconds=60),
        Policy("default", "jobsync's policy, WaitBounds() defaults, no hint", machine="jobsync"),
        Policy(
            "default-hint20",
            "jobsync's policy given expectedDurationSeconds off by up to ±20 %",
            machine="jobsync",
            hint=True,
        ),
        Policy(
            "watch",
            f"jobsync's watch mode: each poll holds a watch up to {WATCH_SECONDS} s (the Wait states wait 0 s)",
            machine="jobsync",
            watch_seconds=WATCH_SECONDS,
        ),
        Policy(
            "callback",
            "jobsync's callback mode as the template deploys it (Sweeper=ENABLED): the notifier's event resumes "
            f"the execution; the stack's sweeper (every {SWEEP_SECONDS} s) does a starting job's checks and a dead "
            "notifier's work, and the Await times out only as a 6-hour backstop",
            machine="callback",
            safety_poll_seconds=SAFETY_POLL_SECONDS,
            settings=(("sweep_seconds", SWEEP_SECONDS),),
        ),
        Policy(
            "callback-no-sweeper",
            "jobsync's callback mode with Sweeper=DISABLED: while PENDING the Await times out when a stuck "
            "start could first be decided (the first pod check, then every shortest grace), while RUNNING "
            f"every {SAFETY_POLL_SECONDS} s (one safety poll)",
            machine="callback",
            safety_poll_seconds=SAFETY_POLL_SECONDS,
        ),
        Policy(
            "learned-hint30",
            "jobsync's policy with a learned hint: the median of the family's last 5 runs, which vary ±30 %",
            machine="jobsync",
            hint=True,
            hint_source="learned_hint_s",
        ),
    ]


def with_event_latency(policies: Sequence[Policy], latency: Mapping[str, Sequence[float]]) -> list[Policy]:
    """``policies`` with the measured end-to-end latencies of watch and callback mode (bench.endtoend)."""
    out = []
    for p in policies:
        key = "watch" if p.watch_seconds else "callback" if p.safety_poll_seconds else None
        out.append(replace(p, event_latency_s=tuple(latency[key])) if key and latency.get(key) else p)
    return out


@contextlib.contextmanager
def policy_constants(overrides: Sequence[tuple[str, float]]) -> Iterator[None]:
    """Run the real jobsync.core.wait with some module constants changed, and put them back."""
    saved = {name: getattr(jobsync_policy, name) for name, _ in overrides}
    try:
        for name, value in overrides:
            setattr(jobsync_policy, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(jobsync_policy, name, value)


def poll_times(job: Job, policy: Policy, deadline: float = SIM_DEADLINE_S, latency: float | None = None) -> list[float]:
    """Times of every poll of ``job`` until one sees it end or the deadline passes.

    Watch and callback mode: the last time is when the execution learns of the end
    (``latency``, else the policy's first event latency, after it).
    """
    if latency is None:
        latency = policy.event_latency_s[0]
    if policy.fixed_seconds is not None:
        return _fixed_poll_times(job, policy, deadline)
    if policy.watch_seconds:
        return [answered for answered, _ in watch_polls(job, policy, deadline, latency)]
    if policy.safety_poll_seconds:
        return callback_looks(job, policy, deadline, latency)
    hint = _hint(job, policy)
    bounds, ref = policy.bounds, job_ref(job)
    phase, since, polls, now = Phase.PENDING, 0.0, 0, 0.0
    wait = poll_wait(PollState(phase, now, 0.0, since, deadline, polls, hint), bounds, ref)  # from Submit
    times: list[float] = []
    while True:
        now += wait
        polls += 1
        times.append(now)
        seen = job.phase_at(now)
        if seen is not phase:
            phase, since = seen, now
        if seen in ENDED or now >= deadline:  # runs.poll: terminal, or TIMED_OUT
            return times
        wait = poll_wait(PollState(phase, now, 0.0, since, deadline, polls, hint), bounds, ref)


def job_ref(job: Job) -> JobRef:
    """The job as the status step's jitter knows it (``jittered`` hashes its uid, else its name)."""
    return JobRef(apiVersion="kubeflow.org/v1", kind="PyTorchJob", namespace="sim", name=job.name, uid=job.uid)


def _hint(job: Job, policy: Policy) -> int | None:
    return int(getattr(job, policy.hint_source)) if policy.hint else None


def policy_settings(policy: Policy) -> Settings:
    """The deployment's settings for ``policy``: its wait bounds, safety interval and ``settings`` (callback mode)."""
    return _settings(policy.bounds, policy.safety_poll_seconds, policy.settings)


@functools.cache
def _settings(bounds: WaitBounds, safety_poll_seconds: int, overrides: tuple[tuple[str, int], ...]) -> Settings:
    return Settings(
        min_wait_seconds=bounds.min_seconds,
        max_wait_seconds=bounds.max_seconds,
        pending_max_wait_seconds=bounds.pending_max_seconds,
        running_max_wait_seconds=bounds.running_max_seconds,
        poll_budget=bounds.poll_budget,
        completion_mode="callback",
        safety_poll_seconds=safety_poll_seconds,
        **dict(overrides),
    )


def callback_looks(job: Job, policy: Policy, deadline: float, latency: float) -> list[float]:
    """Callback mode: the times of the Status polls the Await timeouts run, then the resume.

    Submit's wait becomes the first Await's timeout; a timed-out Await runs one
    Status, whose wait is the next timeout. Every wait is the status step's own
    rule, ``jobsync.core.wait.next_look_wait``, without its jitter (as the other
    policies' waits): without the sweeper the Await times out at a starting
    job's checks (``callback_wait``) and every safety interval; with it only at
    the backstop, the sweeper taking the checks (``sweeper_looks``). Submit's
    job has no status yet; each poll sees it reconciled and, the workload
    having no stuck starts, no stuck pod. The notifier's event resumes the
    execution ``latency`` after the job ends, unless a Status saw the end first.
    (Each Await's own look at the job, after storing its token, is counted by
    the cost model, not here.)
    """
    settings = policy_settings(policy)
    ref = job_ref(job)
    phase, since, polls, now = Phase.PENDING, 0.0, 0, 0.0
    created = Starting(reconciled=False)
    state = PollState(phase, now, 0.0, since, deadline, polls)
    wait: float = next_look_wait(state, settings, ref, starting=created, jitter=False)
    resumed = job.end_s + latency
    times: list[float] = []
    while True:
        if now + wait >= resumed:
            return [*times, resumed]
        now += wait
        polls += 1
        times.append(now)
        seen = job.phase_at(now)
        if seen is not phase:
            phase, since = seen, now
        if seen in ENDED or now >= deadline:
            return times
        state = PollState(phase, now, 0.0, since, deadline, polls)
        wait = next_look_wait(state, settings, ref, starting=Starting(), jitter=False)


@dataclass(frozen=True)
class Swept:
    """What the stack's sweeper does for one job: its looks while the execution waits, and when it would
    resume the execution were the notifier dead (the first sweep at or after the job's end)."""

    looks: int
    resumed_notifier_down_s: float


def sweep_offset(job: Job, sweep_seconds: int) -> float:
    """When in the sweep interval the job was submitted: spread evenly over the workload by its identity."""
    digest = hashlib.sha256(f"{job.uid or job.name}/sweep".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 * sweep_seconds


def sweeper_looks(job: Job, policy: Policy, deadline: float = SIM_DEADLINE_S) -> Swept:
    """The sweeper's looks at ``job`` (``jobsync.core.sweep.why_look``, from what its LIST shows): when the
    stored ``sweepAt`` comes (``jobsync.core.wait.sweep_due``, a starting job's checks), and when the LIST
    shows another phase than the last look saw (the job started). Sweeps run every ``sweep_seconds`` from
    a point of the interval the job's identity picks; the notifier's event ends the wait before any sweep
    sees the end, but with the notifier dead the first sweep at or after the end resumes the execution."""
    settings = policy_settings(policy)
    interval = settings.wait.sweep_seconds
    phase, since, polls = Phase.PENDING, 0.0, 0
    due = sweep_due(PollState(phase, 0.0, 0.0, since, deadline, polls), settings, Starting(reconciled=False))
    looks = 0
    tick = interval - sweep_offset(job, interval)
    while tick < job.end_s and tick < deadline:
        seen = job.phase_at(tick)
        if (due is not None and tick >= due) or seen is not phase:
            looks += 1
            polls += 1
            if seen is not phase:
                phase, since = seen, tick
            due = sweep_due(PollState(phase, tick, 0.0, since, deadline, polls), settings, Starting())
        tick += interval
    return Swept(looks, tick)


def watch_polls(
    job: Job, policy: Policy, deadline: float = SIM_DEADLINE_S, latency: float | None = None
) -> list[tuple[float, float]]:
    """(time each poll answered, seconds it held its watch) in watch mode, as ``runs.poll`` does it.

    A poll GETs the job, then watches it: up to ``watch_seconds`` while it runs,
    up to the pending wait while it is pending, never past the deadline. The
    watch answers ``latency`` after the phase changes. The Wait state after it
    waits what the poll budget needs beyond the time watched
    (``budget_floor(watch_seconds) - watched``, as ``with_next_wait`` does; 0 s
    while the budget suffices).
    """
    if latency is None:
        latency = policy.event_latency_s[0]
    now, polls, out = 0.0, 0, []
    phase, since = Phase.PENDING, 0.0
    while True:
        seen = job.phase_at(now)
        polls += 1
        if seen is not phase:
            phase, since = seen, now
        if seen in ENDED or now >= deadline:
            out.append((now, 0.0))
            return out
        hold = policy.watch_seconds
        if seen is Phase.PENDING:
            hold = min(hold, policy.bounds.pending_max_seconds)
        hold = min(hold, deadline - now)
        change = job.pending_s if seen is Phase.PENDING else job.end_s
        answered = min(now + hold, change + latency)
        out.append((answered, answered - now))
        if job.phase_at(answered) in ENDED or answered >= deadline:
            return out
        state = PollState(job.phase_at(answered), answered, 0.0, since, deadline, polls, None)
        floor = budget_floor(state, policy.bounds, policy.watch_seconds) - (answered - now)
        now = answered + max(0, math.ceil(min(floor, deadline - answered)))


def _fixed_poll_times(job: Job, policy: Policy, deadline: float) -> list[float]:
    step = policy.fixed_seconds or 0
    first = 0 if policy.check_at_submit else step
    polls = 1 + max(0, math.ceil((job.end_s - first) / step))
    times = [float(first + i * step) for i in range(polls)]
    if policy.machine == "jobsync":  # the status Lambda ends the loop at the deadline; the seed has none
        past = next((i for i, t in enumerate(times) if t >= deadline), None)
        if past is not None:
            times = times[: past + 1]
    return times


@dataclass(frozen=True)
class JobRun:
    job: Job
    polls: int
    delay_s: float  # end of the job -> the poll that saw it
    timed_out: bool
    pending_polls: int = 0  # polls (callback: timed-out Awaits' Statuses) that saw the job PENDING
    sweeper_looks: int = 0  # callback mode with the sweeper: its looks at the job
    notifier_down_delay_s: float | None = None  # ... and the delay were the notifier dead


def sweeps(policy: Policy) -> bool:
    """Whether ``policy`` is callback mode with the stack's sweeper."""
    return bool(policy.safety_poll_seconds) and policy_settings(policy).wait.sweeps


def simulate(job: Job, policy: Policy, deadline: float = SIM_DEADLINE_S, latency: float | None = None) -> JobRun:
    times = poll_times(job, policy, deadline, latency)
    noticed = times[-1]
    pending = sum(1 for t in times if t < job.pending_s)
    run = JobRun(job, len(times), noticed - job.end_s, noticed < job.end_s, pending)
    if sweeps(policy):
        swept = sweeper_looks(job, policy, deadline)
        run = replace(run, sweeper_looks=swept.looks, notifier_down_delay_s=swept.resumed_notifier_down_s - job.end_s)
    return run


def p95(values: Sequence[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def evaluate_policy(
    policy: Policy, jobs: Sequence[Job], model: CostModel, prices: Prices, cap_check: bool = True
) -> dict[str, Any]:
    """Detection delay, polls and cost per job of ``policy`` over ``jobs``."""
    with policy_constants(policy.constants):
        latencies = [policy.event_latency_s[i % len(policy.event_latency_s)] for i in range(len(jobs))]
        runs = [simulate(job, policy, latency=lat) for job, lat in zip(jobs, latencies, strict=True)]
        longest = longest_job_within_cap(policy, model) if cap_check else None
    delays = [r.delay_s for r in runs]
    by_outcome = {o: [r.delay_s for r in runs if r.job.outcome == o] for o in ("succeeded", "failed")}
    polls = statistics.fmean(r.polls for r in runs)
    invocations = model.lambda_invocations(polls)
    billed_s = invocations * prices.lambda_billed_ms / 1000
    if policy.watch_seconds:  # a watch is billed for as long as it is held
        held = [
            sum(h for _, h in watch_polls(job, policy, latency=lat)) for job, lat in zip(jobs, latencies, strict=True)
        ]
        billed_s += statistics.fmean(held)
    # The sweeper's looks run inside its own invocations: billed like a look, no request of their own.
    swept_looks = statistics.fmean(r.sweeper_looks for r in runs)
    sweeper_gb_s = swept_looks * prices.lambda_billed_ms / 1000 * prices.lambda_memory_mb / 1024
    gb_s = billed_s * prices.lambda_memory_mb / 1024
    transitions = model.transitions(polls)
    job_s = statistics.fmean(r.job.end_s + r.delay_s for r in runs)  # submission to the execution's end
    lambda_s = billed_s  # Lambda time per job, as billed
    cost = {
        "step_functions": 1000 * transitions * prices.sfn_per_transition,
        "lambda_requests": 1000 * invocations * prices.lambda_per_request,
        "lambda_compute": 1000 * gb_s * prices.lambda_per_gb_second,
    }
    if sweeps(policy):
        cost["sweeper_looks"] = 1000 * sweeper_gb_s * prices.lambda_per_gb_second
    by_class: dict[str, dict[str, float]] = {}
    for klass in dict.fromkeys(job.klass for job in jobs):
        mine = [r for r in runs if r.job.klass == klass]
        by_class[klass] = {
            "jobs": len(mine),
            "mean_delay_s": statistics.fmean(r.delay_s for r in mine),
            "mean_delay_failed_s": _mean_or_none([r.delay_s for r in mine if r.job.failed]),
            "polls_per_job": statistics.fmean(r.polls for r in mine),
        }
    return {
        "description": policy.description,
        "machine": policy.machine,
        "jobs": len(runs),
        "mean_delay_s": statistics.fmean(delays),
        "p95_delay_s": p95(delays),
        "mean_delay_succeeded_s": _mean_or_none(by_outcome["succeeded"]),
        "mean_delay_failed_s": _mean_or_none(by_outcome["failed"]),
        "p95_delay_failed_s": p95(by_outcome["failed"]) if by_outcome["failed"] else None,
        "failed_jobs": len(by_outcome["failed"]),
        "max_delay_s": max(delays),
        "polls_per_job": polls,
        "transitions_per_job": transitions,
        "history_events_per_job": model.events(polls),
        "max_history_events": model.events(max(r.polls for r in runs)),
        "lambda_invocations_per_job": invocations,
        "pending_polls_per_job": statistics.fmean(r.pending_polls for r in runs),
        "running_polls_per_job": statistics.fmean(r.polls - r.pending_polls for r in runs),
        "execution_seconds_mean": job_s,
        "mean_running_seconds": statistics.fmean(r.job.run_s for r in runs),
        "lambda_seconds_per_job": lambda_s,
        "lambda_gb_s_per_job": gb_s,
        # Lambda requests and compute per hour of job (submission to end): what watch mode costs.
        "lambda_usd_per_job_hour": (cost["lambda_requests"] + cost["lambda_compute"])
        / 1000
        / statistics.fmean(job.end_s / 3600 for job in jobs),
        "cost_per_1000_jobs_usd": sum(cost.values()),
        "cost_per_1000_jobs_breakdown_usd": cost,
        "longest_job_within_history_cap_s": longest,
        "timed_out_jobs": sum(r.timed_out for r in runs),
        "by_class": by_class,
        # With a hint: jobs that end after the window the policy watches closely (its fallback then waits longer).
        "jobs_past_hint_window": (
            sum(r.job.end_s > (1 + policy.bounds.hint_tolerance) * r.job.hint_s for r in runs) if policy.hint else None
        ),
        **(_sweeper_figures(runs, policy) if sweeps(policy) else {}),
    }


def _sweeper_figures(runs: Sequence[JobRun], policy: Policy) -> dict[str, Any]:
    """Callback mode with the sweeper: its looks per job, and the delay were the notifier dead (simulated)."""
    down = [r.notifier_down_delay_s for r in runs if r.notifier_down_delay_s is not None]
    return {
        "sweep_seconds": policy_settings(policy).wait.sweep_seconds,
        "sweeper_looks_per_job": statistics.fmean(r.sweeper_looks for r in runs),
        "notifier_down_simulated": {
            "mean_delay_s": statistics.fmean(down),
            "p95_delay_s": p95(down),
            "max_delay_s": max(down),
        },
    }


def _mean_or_none(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def longest_job_within_cap(policy: Policy, model: CostModel, cap: int = HISTORY_CAP) -> float | str:
    """The longest run (after a 10-minute PENDING) whose execution stays within ``cap`` history events.

    "unbounded" when every length up to the 30-day maximum deadline fits, for
    each deadline in CAP_DEADLINES_S (a job longer than its deadline ends as
    TIMED_OUT, so no length can do worse). With a hint, the hint is 0.8x and
    1.2x the true length, the worst cases of the workload's error.
    """
    max_polls = model.max_polls(cap)

    def fits(run_s: float, deadline: float) -> bool:
        factors = (0.8, 1.2) if policy.hint else (1.0,)
        return all(len(poll_times(_cap_job(run_s, f), policy, deadline)) <= max_polls for f in factors)

    worst: float | None = None
    for deadline in CAP_DEADLINES_S:
        longest_run = deadline - CAP_PENDING_S
        # Without a hint, a longer job only adds polls, so the longest one decides. With
        # one, the schedule depends on the length: check every day's length as well.
        lengths = [longest_run, *(range(DAY, int(longest_run), DAY) if policy.hint else ())]
        failing = [run for run in lengths if not fits(run, deadline)]
        if not failing:
            continue
        # Bisect the end of the lengths that fit below the shortest failing one.
        lo, hi = 0.0, float(min(failing))
        while hi - lo > 1:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if fits(mid, deadline) else (lo, mid)
        worst = lo if worst is None else min(worst, lo)
    return "unbounded" if worst is None else round(worst)


def _cap_job(run_s: float, hint_factor: float) -> Job:
    return Job("cap-check", CAP_PENDING_S, run_s, max(1, round((CAP_PENDING_S + run_s) * hint_factor)))


def evaluate_all(
    policies: Sequence[Policy], jobs: Sequence[Job], models: Mapping[str, CostModel], prices: Prices, **kwargs: Any
) -> dict[str, dict[str, Any]]:
    return {p.name: evaluate_policy(p, jobs, models[p.machine], prices, **kwargs) for p in policies}
