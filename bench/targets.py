"""The targets the benchmark holds its figures to: each met, missed (and why), or only reported."""

from __future__ import annotations

import math
from typing import Any

from bench.notifier_report import Add, notifier_targets
from bench.simulate import policy_settings, standard_policies
from bench.tables import SHORT_CLASS, _duration, _opt, _s, policies
from jobsync.core.wait import WaitBounds

# The notifier: one pod on a node the cluster already runs. Priced at the Fargate rates (us-east-1, Linux x86)
# as the share of a node it takes: USD 0.04048 per vCPU-hour and USD 0.004445 per GB-hour.
NOTIFIER_VCPU, NOTIFIER_GB = 0.05, 0.125
VCPU_HOUR_USD, GB_HOUR_USD = 0.04048, 0.004445
HOURS_PER_MONTH = 730
SEVEN_DAYS = 7 * 86_400

# The targets of this round, in one place for the table (targets()) and the plot (bench.plot).
# Ratios are of seed-600's figures.
DEFAULT_DELAY_VS_SEED, DEFAULT_TRANSITIONS_VS_SEED = 0.5, 1.5
HINT_DELAY_VS_SEED, HINT_TRANSITIONS_VS_SEED = 0.25, 1.0
CALLBACK_TRANSITIONS_PER_JOB = 14
CALLBACK_COST_VS_SEED = 0.12
NOTIFIER_DOWN_LIMIT_S = 300
CONTAINERS_P95_S = 2.0
RUNJOBS_JOBS = 1_000  # the most one RunJobs run takes
# The monthly volume of one cluster that the notifier's and the sweeper's fixed costs are spread over.
JOBS_PER_MONTH = 10_000
# DynamoDB on-demand, us-east-1: USD 0.125 per million read request units (a small table's Scan: one).
DYNAMODB_USD_PER_READ_UNIT = 0.125 / 1_000_000


# --------------------------------------------------------------------------- targets


def targets(results: dict[str, Any]) -> list[dict[str, str]]:
    """Each goal, MET / MISSED / REPORTED (or not measured), with the numbers and, where missed, why."""
    seed, default, hint = (results.get(n) for n in ("seed-600", "default", "default-hint20"))
    out: list[dict[str, str]] = []

    def add(goal: str, measured: str, ok: bool | None, why: str = "") -> None:
        status = "REPORTED" if ok is None else ("MET" if ok else "MISSED")
        out.append({"target": goal, "measured": measured, "status": status, "why": "" if ok else why})

    if seed and default:
        d = default["mean_delay_s"] / seed["mean_delay_s"]
        t = default["transitions_per_job"] / seed["transitions_per_job"]
        short = default["by_class"].get(SHORT_CLASS, {}).get("mean_delay_s", float("nan"))
        classes = default["by_class"]
        polls = ", ".join(
            f"{k}: {v['polls_per_job']:.0f} vs {seed['by_class'][k]['polls_per_job']:.0f}" for k, v in classes.items()
        )
        short_polls = classes.get(SHORT_CLASS, {}).get("polls_per_job", float("nan"))
        cap = WaitBounds().running_max_seconds
        add(
            f"default: mean detection delay <= {DEFAULT_DELAY_VS_SEED:g}x seed-600",
            f"{_s(default['mean_delay_s'])} s vs {_s(seed['mean_delay_s'])} s = {d:.2f}x",
            d <= DEFAULT_DELAY_VS_SEED,
            f"the {WaitBounds().running_max_seconds} s running_max leaves half that on every job running past an hour",
        )
        add(
            f"default: state transitions per job <= {DEFAULT_TRANSITIONS_VS_SEED:g}x seed-600",
            f"{_s(default['transitions_per_job'])} vs {_s(seed['transitions_per_job'])} = {t:.2f}x",
            t <= DEFAULT_TRANSITIONS_VS_SEED,
            f"polls per job by class, default vs the seed's checks: {polls}. The {WaitBounds().min_seconds} s "
            f"first waits and their square-root growth poll a 10-30 min job {short_polls:.0f} times, "
            f"and the {cap} s cap polls a long job {600 / cap:.1f}x as often as 600 s. "
            "Without knowing the end, mean delay x polls is about half the "
            "run length whatever the spacing, so 0.5x the seed's delay at 1.5x its transitions (3 per poll "
            "against its 4 per check) leaves no room for ramp-up or PENDING polls (`python -m bench --sweep`)",
        )
        add(
            f"default: mean delay for jobs under 30 minutes ({SHORT_CLASS}) <= 60 s",
            f"{_s(short)} s",
            short <= 60,
            "waits grow as RUNNING_SQRT_FACTOR x sqrt(time running): about 120 s apart when a 20-minute run ends",
        )
    if seed and hint:
        d = hint["mean_delay_s"] / seed["mean_delay_s"]
        t = hint["transitions_per_job"] / seed["transitions_per_job"]
        past = hint.get("jobs_past_hint_window") or 0
        long_class = list(hint["by_class"])[-1]
        add(
            f"default-hint20: mean delay <= {HINT_DELAY_VS_SEED:g}x seed-600",
            f"{_s(hint['mean_delay_s'])} s = {d:.2f}x",
            d <= HINT_DELAY_VS_SEED,
            f"inside the hint's window polls are NEAR_FACTOR x sqrt(0.4 E) apart, up to {cap} s for long jobs "
            f"({long_class}: {_s(hint['by_class'][long_class]['mean_delay_s'])} s mean delay); {past} of "
            f"{hint['jobs']} jobs end after the window (hint 0.80-0.83x the truth) and fall back to the no-hint waits",
        )
        add(
            "default-hint20: state transitions per job <= seed-600",
            f"{_s(hint['transitions_per_job'])} vs {_s(seed['transitions_per_job'])} = {t:.2f}x",
            t <= HINT_TRANSITIONS_VS_SEED,
            _hint_transitions_why(hint, seed),
        )
    watch = results.get("watch")
    if seed and watch:
        t = watch["transitions_per_job"] / seed["transitions_per_job"]
        add(
            "watch: p95 delay <= 5 s",
            f"{_s(watch['p95_delay_s'])} s",
            watch["p95_delay_s"] <= 5,
            "the watch answers when the phase changes",
        )
        add(
            "watch: state transitions per job <= 0.8x seed-600",
            f"{_s(watch['transitions_per_job'])} vs {_s(seed['transitions_per_job'])} = {t:.2f}x",
            t <= 0.8,
            "one poll per held watch",
        )
        add(
            "watch: Lambda cost per job-hour (reported)",
            f"USD {watch['lambda_usd_per_job_hour']:.4f} per job-hour "
            f"({watch['lambda_gb_s_per_job']:.0f} GB-s per job at {results['prices']['lambda_memory_mb']} MB)",
            None,
            "",
        )

    callback = results.get("callback")
    if callback and seed:
        callback_targets(results, callback, seed, watch, add)
    notifier_targets(results, add)
    learned = results.get("learned-hint30")
    if learned and seed:
        d = learned["mean_delay_s"] / seed["mean_delay_s"]
        t = learned["transitions_per_job"] / seed["transitions_per_job"]
        add(
            "learned-hint30: mean delay <= 0.3x seed-600",
            f"{_s(learned['mean_delay_s'])} s = {d:.2f}x",
            d <= 0.3,
            "a hint off by more than the window's ±20 % falls back to the no-hint waits",
        )
        add(
            "learned-hint30: state transitions per job <= seed-600",
            f"{_s(learned['transitions_per_job'])} vs {_s(seed['transitions_per_job'])} = {t:.2f}x",
            t <= 1.0,
            "as default-hint20's: before its window a hint polls at the no-hint pace, so failures are seen as fast",
        )

    for name in policies(results):
        r = results[name]
        fail, succ = r.get("mean_delay_failed_s"), r.get("mean_delay_succeeded_s")
        if fail is None or not succ:
            continue
        ratio = fail / succ
        add(
            f"{name}: mean delay, failing jobs <= 1.1x succeeding jobs",
            f"{_s(fail)} s vs {_s(succ)} s = {ratio:.2f}x",
            ratio <= 1.1,
            _failure_why(name, r),
        )
    if seed and hint and hint.get("mean_delay_failed_s") is not None:
        ratio = hint["mean_delay_failed_s"] / seed["mean_delay_failed_s"]
        add(
            "default-hint20: mean delay, failing jobs <= 0.5x seed-600's",
            f"{_s(hint['mean_delay_failed_s'])} s vs {_s(seed['mean_delay_failed_s'])} s = {ratio:.2f}x",
            ratio <= 0.5,
            "before its window the hint waits no longer than the no-hint rule",
        )

    too_short = []
    for name in policies(results):
        longest = results[name]["longest_job_within_history_cap_s"]
        if longest is not None and not isinstance(longest, str) and longest < SEVEN_DAYS:
            too_short.append(f"{name} ({_duration(longest)})")
    add(
        "no policy lets a 7-day job exceed the 25,000-event history cap",
        "; ".join(f"{n}: {_duration(results[n]['longest_job_within_history_cap_s'])}" for n in policies(results)),
        not too_short,
        f"over the cap before 7 days: {', '.join(too_short)}. A fixed 60 s Wait has no poll budget: "
        "9 events a poll fill the history after 2,775 polls. jobsync's policies keep the budget guard",
    )

    lam = results.get("lambda") or {}
    goal = "cold import of the status handler, Lambda-like environment: at most 1.3x bare import kubernetes.client"
    ratio = lam.get("ratio_lambda_like")
    if ratio is None:
        add(goal, "not measured", None)
        out[-1]["why"] = "not measured in this run (--import-runs 0)"
    else:
        extra = (lam.get("lambda_like_imports") or {}).get("import_extra_ms_by_package", {})
        heavy = ", ".join(f"{k} {v:.0f} ms" for k, v in list(extra.items())[:5])
        disabled = lam["ratio_lambda_like_tracing_disabled"]
        add(
            goal,
            f"{ratio:.2f} tracing Active, {disabled:.2f} disabled (CPU time {lam['ratio_lambda_like_cpu']:.2f}, "
            f"{lam['ratio_lambda_like_tracing_disabled_cpu']:.2f})",
            ratio <= 1.3,
            "on top of the kubernetes client the handler still imports (self time by package, tracing Active, "
            f"median of 3 -X importtime runs): {heavy}. pydantic comes with the input models, pydantic-settings "
            "(with the asyncio, argparse and dotenv it imports) with the settings every call reads, "
            "Powertools' Logger and Metrics with the handler; tracing Active adds the X-Ray SDK. boto3 and, "
            "with tracing off, the X-Ray SDK are no longer imported; EKS mode pays boto3 on its first call "
            "(the cold-start rows). Reading the environment without pydantic-settings would save about 50 ms; "
            "it stays, as the one typed reader of the settings",
        )
    if "api_requests_per_running_poll" in lam:
        n = lam["api_requests_per_running_poll"]
        add("1 Kubernetes API request per steady-state (RUNNING) poll", f"{n:g}", n == 1, "see the per-poll requests")
    runjobs_targets(results, add)
    return out


def runjobs_targets(results: dict[str, Any], add: Add) -> None:
    """RunJobs at its largest (``make bench-runjobs``, opt-in: its own key, kept by a whole ``make bench``)."""
    goal = f"RunJobs: {RUNJOBS_JOBS:,} jobs to SUCCEEDED in one run, the output within the 256 KB payload limit"
    run = results.get(f"runjobs_{RUNJOBS_JOBS}")
    if not run:
        add(goal, "not measured", None, "opt-in: make bench-runjobs")
        return
    succeeded = run["child_status"].get("SUCCEEDED", 0)
    where = "outcomes inline" if run["outcomes_inline"] else "the outcomes in S3 (its ResultWriter), the summary inline"
    ok = run["status"] == "SUCCEEDED" and succeeded == run["jobs"] and run["output_within_payload_limit"]
    measured = (
        f"{run['status']}: {succeeded:,} of {run['jobs']:,} jobs succeeded; output {run['output_bytes']:,} bytes "
        f"({where}); {run['virtual_s']:,.0f} s of virtual time in {run['wall_s']:,.0f} s of wall time"
    )
    add(goal, measured, ok, f"error {run.get('error')}; children {run['child_status']}")


def callback_targets(
    results: dict[str, Any], callback: dict[str, Any], seed: dict[str, Any], watch: dict[str, Any] | None, add: Add
) -> None:
    """Callback mode as the template deploys it (with the sweeper); the Sweeper=DISABLED row for comparison."""
    limit = CALLBACK_TRANSITIONS_PER_JOB
    model = results["cost_model"]["callback"]
    per = model["transitions_per_poll"]
    once = model["transitions_fixed"] + per  # the execution that looks once: the resume
    backstops = callback["polls_per_job"] - 1
    without = results.get("callback-no-sweeper")
    before = f"; {_s(without['transitions_per_job'])} with Sweeper=DISABLED" if without else ""
    add(
        f"callback: state transitions per job <= {limit}",
        f"{_s(callback['transitions_per_job'])} ({backstops:.2f} backstop looks per job){before}",
        callback["transitions_per_job"] <= limit,
        f"each look costs {per} transitions (Await, Status, IsDone) and the execution that looks once costs "
        f"{once}; the Await's backstop ({policy_settings(_callback_policy()).wait.backstop_seconds:,} s) adds a "
        "look per 6 hours of a long run",
    )
    if watch:
        ratio = callback["lambda_gb_s_per_job"] / watch["lambda_gb_s_per_job"]
        add(
            "callback: Lambda GB-s per job <= 1 % of watch mode's",
            f"{callback['lambda_gb_s_per_job']:.5f} vs {watch['lambda_gb_s_per_job']:.1f} = {100 * ratio:.4f} %",
            ratio <= 0.01,
            "",
        )
    seed_usd, usd = seed["cost_per_1000_jobs_usd"], callback["cost_per_1000_jobs_usd"]
    goal_usd = CALLBACK_COST_VS_SEED * seed_usd
    add(
        f"callback: USD per 1,000 jobs <= {CALLBACK_COST_VS_SEED:g}x seed-600: the executions and the sweeper's looks",
        f"{usd:.3f} vs {seed_usd:.3f} = {usd / seed_usd:.3f}x"
        + (f" (was {without['cost_per_1000_jobs_usd'] / seed_usd:.2f}x with Sweeper=DISABLED)" if without else ""),
        usd <= goal_usd,
        f"{CALLBACK_COST_VS_SEED:g}x is USD {goal_usd:.3f} per 1,000 jobs",
    )
    fixed = notifier_month_usd() + (sweeper_month_usd(results) or 0.0)
    total = usd + fixed / (JOBS_PER_MONTH / 1000)
    room = goal_usd - usd
    add(
        f"callback: USD per 1,000 jobs <= {CALLBACK_COST_VS_SEED:g}x seed-600 with the notifier and the sweeper "
        f"at {JOBS_PER_MONTH:,} jobs a month per cluster",
        f"{total:.3f} = {total / seed_usd:.3f}x: the executions {usd:.3f}, the notifier "
        f"USD {notifier_month_usd():.2f} and the sweeper USD {sweeper_month_usd(results) or 0.0:.3f} a month",
        total <= goal_usd,
        f"the notifier pod's fixed USD {notifier_month_usd():.2f} a month is USD "
        f"{notifier_month_usd() / (JOBS_PER_MONTH / 1000):.3f} per 1,000 jobs at {JOBS_PER_MONTH:,} jobs; "
        f"the executions leave USD {room:.3f} per 1,000 jobs of room, so the whole stays under "
        f"{CALLBACK_COST_VS_SEED:g}x from {fixed / room * 1000:,.0f} jobs a month per cluster"
        if room > 0
        else "the executions alone are over the target",
    )
    down = callback.get("notifier_down") or {}
    simulated = callback.get("notifier_down_simulated") or {}
    measured = (
        f"max {down['max_delay_s']:g} s, mean {down['mean_delay_s']:.0f} s ({down['jobs']} jobs in the local run, "
        f"sweeps every {down['sweep_seconds']} s)"
        if down
        else "not measured in this run"
    )
    if simulated:
        measured += (
            f"; simulated over the workload: max {simulated['max_delay_s']:.0f} s, "
            f"p95 {simulated['p95_delay_s']:.0f} s, mean {simulated['mean_delay_s']:.0f} s"
        )
    add(
        f"callback, the notifier dead: a job's end noticed within {NOTIFIER_DOWN_LIMIT_S} s",
        measured,
        None if not down else down["max_delay_s"] <= NOTIFIER_DOWN_LIMIT_S,
        "the sweeper's interval (SweepMinutes) bounds it",
    )
    e2e = (results.get("end_to_end") or {}).get("callback")
    add(
        "callback: detection delay measured end to end (reported)",
        f"p50 {1000 * e2e['p50_delay_s']:.0f} ms, p95 {1000 * e2e['p95_delay_s']:.0f} ms ({e2e['runs']} jobs)"
        if e2e
        else "not measured in this run",
        None,
        "",
    )
    containers = results.get("callback_containers")
    ok = None
    measured = "not measured: `make bench-e2e-callback`"
    why = ""
    if containers:
        measured = (
            f"p95 {containers['p95_resumed_s']:.2f} s, p50 {containers['p50_resumed_s']:.2f} s, max "
            f"{containers['max_resumed_s']:.2f} s ({containers['jobs']} jobs, {containers['cold_resumes']} woken by "
            f"a cold Resume); to the execution's end p95 {containers['p95_ended_s']:.2f} s"
        )
        ok = containers["p95_resumed_s"] <= CONTAINERS_P95_S and containers["cold_resumes"] >= 1
        why = (
            "no job's wake came from the Resume container's first invocation: an earlier event had started it"
            if containers["cold_resumes"] < 1
            else "from the API server's Succeeded to the woken Await's task: the notifier's watch, PutEvents, "
            "the rule, SAM's Invoke API and the container, SendTaskSuccess"
        )
    add(
        f"callback: p95 job end -> execution resumed <= {CONTAINERS_P95_S:g} s, the functions in containers on the "
        "e2e tier, a cold Resume included",
        measured,
        ok,
        why,
    )


def _callback_policy() -> Any:
    return next(p for p in standard_policies() if p.name == "callback")


def sweeper_month_usd(results: dict[str, Any]) -> float | None:
    """The sweeper's own invocations a month (one per SweepMinutes, nothing waiting: a token Scan), from the
    idle sweep measured in the local run plus the assumed VPC round trip per request; None when not measured.
    Its looks at waiting jobs are priced per job, in the callback row."""
    idle = ((results.get("callback") or {}).get("notifier_down") or {}).get("idle_sweep")
    if not idle:
        return None
    prices, assumed = results["prices"], results["lambda"]["assumptions"]
    requests = sum(idle["kubernetes_requests"].values()) + sum(idle["aws_requests"].values())
    billed_s = math.ceil(idle["median_ms"] + assumed["assumed_vpc_rtt_ms"] * requests) / 1000
    runs = HOURS_PER_MONTH * 3600 / results["callback"]["sweep_seconds"]
    gb_s = billed_s * prices["lambda_memory_mb"] / 1024
    per_run = (
        prices["lambda_usd_per_1m_requests"] / 1_000_000
        + gb_s * prices["lambda_usd_per_gb_second_x86"]
        + idle["aws_requests"]["dynamodb Scan"] * DYNAMODB_USD_PER_READ_UNIT
    )
    return runs * per_run


def notifier_month_usd() -> float:
    return (NOTIFIER_VCPU * VCPU_HOUR_USD + NOTIFIER_GB * GB_HOUR_USD) * HOURS_PER_MONTH


def _hint_transitions_why(hint: dict[str, Any], seed: dict[str, Any]) -> str:
    polls = ", ".join(
        f"{k}: {v['polls_per_job']:.0f} vs {seed['by_class'][k]['polls_per_job']:.0f}"
        for k, v in hint["by_class"].items()
    )
    return (
        f"polls per job by class, hint vs the seed's checks: {polls}. Before its window the hint now waits no "
        "longer than the no-hint rule, so that a failure there is seen as fast as without a hint; waiting out the "
        "distance to the window saved those polls but saw a failure up to half that distance late. For failures "
        "spread as here (half in the first tenth of the run, half uniform), the mean failure delay D and the "
        "polls N that watch for them satisfy D x N >= 0.38 x the run (Cauchy-Schwarz on the failure density); "
        "D near the success delay (~60 s) then needs about as many polls as no hint, whatever the spacing"
    )


def _failure_why(name: str, r: dict[str, Any]) -> str:
    by_class = ", ".join(f"{k}: {_opt(v.get('mean_delay_failed_s'))} s" for k, v in r["by_class"].items())
    return (
        f"failing jobs' mean delay by class: {by_class}. A failure can come at any time of the run, so it is seen "
        "at the pace the policy keeps before the end is due"
    )
