"""Tables, targets, the plot and docs/performance.md from the benchmark's results."""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import container
from bench.simulate import SAFETY_POLL_SECONDS, policy_settings, standard_policies
from jobsync.run.policy import WaitBounds
from jobsync.run.stuck import Grace, grace_seconds

POLICY_ORDER = ("seed-600", "fixed-60", "default", "default-hint20")
WATCH_NOTE = (
    "each Status holds a Kubernetes watch up to 840 s (the template's largest WatchSeconds) and answers "
    "when the phase changes, after the delays measured end to end (below), job by job in turn; billed for "
    "the time it holds the watch; the Wait after it keeps the poll budget"
)
CALLBACK_NOTE = (
    "the notifier's event resumes the execution, after the delays measured end to end (below); while PENDING "
    "each Await times out when a stuck start could first be decided (jobsync.run.loop.callback_wait: the first "
    "pod check 121 s after submission, then every shortest grace, 120 s) and runs one Status, while RUNNING once "
    "every 3,600 s (SafetyPollSeconds' default). Lambda: Submit, every Await (stores the token, looks once), "
    "every Status, Cleanup, and the resume function"
)
LEARNED_NOTE = (
    "the policy given a learned hint: each job's family runs its typical length x U(0.7, 1.3), and the hint "
    "is the median of the family's last 5 runs (jobsync.run.hints)"
)
# The notifier: one pod on a node the cluster already runs. Priced at the Fargate rates (us-east-1, Linux x86)
# as the share of a node it takes: USD 0.04048 per vCPU-hour and USD 0.004445 per GB-hour.
NOTIFIER_VCPU, NOTIFIER_GB = 0.05, 0.125
VCPU_HOUR_USD, GB_HOUR_USD = 0.04048, 0.004445
HOURS_PER_MONTH = 730
SHORT_CLASS = "10-30 min"
SEVEN_DAYS = 7 * 86_400


# --------------------------------------------------------------------------- formatting


def _s(value: float) -> str:
    return f"{value:,.3f}" if abs(value) < 1 else f"{value:,.1f}"


def _opt(value: float | None) -> str:
    return "-" if value is None else _s(value)


def _duration(value: float | str | None) -> str:
    if value is None:
        return "not checked"
    if isinstance(value, str):
        return "unbounded (up to the 30-day maximum deadline)"
    if value >= 86_400:
        return f"{value / 86_400:.1f} d ({value:,.0f} s)"
    return f"{value / 3600:.1f} h ({value:,.0f} s)"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def policies(results: dict[str, Any]) -> list[str]:
    return [name for name in results["meta"]["policies"] if name in results]


def policy_table(results: dict[str, Any]) -> str:
    header = [
        "policy",
        "mean delay (s)",
        "mean delay, succeeded / failed (s)",
        "p95 delay (s)",
        f"mean delay, {SHORT_CLASS} jobs (s)",
        "polls / job",
        "state transitions / job",
        "history events / job",
        "longest job within 25,000 events",
        "Lambda GB-s / job",
        "USD / 1,000 jobs",
    ]
    rows = []
    for name in policies(results):
        r = results[name]
        rows.append(
            [
                f"`{name}`",
                _s(r["mean_delay_s"]),
                f"{_opt(r.get('mean_delay_succeeded_s'))} / {_opt(r.get('mean_delay_failed_s'))}",
                _s(r["p95_delay_s"]),
                _s(r["by_class"][SHORT_CLASS]["mean_delay_s"]) if SHORT_CLASS in r["by_class"] else "-",
                _s(r["polls_per_job"]),
                _s(r["transitions_per_job"]),
                _s(r["history_events_per_job"]),
                _duration(r["longest_job_within_history_cap_s"]),
                f"{r['lambda_gb_s_per_job']:.5f}",
                f"{r['cost_per_1000_jobs_usd']:.3f}",
            ]
        )
    return _table(header, rows)


def class_table(results: dict[str, Any]) -> str:
    names = policies(results)
    classes = list(results[names[0]]["by_class"])
    header = ["policy", *(f"{k}: mean delay (s) / polls" for k in classes)]
    rows = [
        [
            f"`{n}`",
            *(
                f"{_s(results[n]['by_class'][k]['mean_delay_s'])} / {_s(results[n]['by_class'][k]['polls_per_job'])}"
                for k in classes
            ),
        ]
        for n in names
    ]
    return _table(header, rows)


def lambda_table(results: dict[str, Any]) -> str:
    lam = results["lambda"]
    rows = []
    like = lam.get("lambda_like_imports") or {}
    if lam.get("ratio_lambda_like") is not None:
        bare = lam["bare_kubernetes_client_lambda_like_ms"]
        for label, key, ms in (
            ("tracing as deployed (Active)", "ratio_lambda_like", lam["cold_import_lambda_like_ms"]),
            (
                "tracing disabled",
                "ratio_lambda_like_tracing_disabled",
                lam["cold_import_lambda_like_tracing_disabled_ms"],
            ),
        ):
            rows.append(
                [
                    f"cold import, Lambda-like environment, {label}: status handler / bare `import kubernetes.client`",
                    f"{lam[key]:.2f} ({_s(ms)} ms / {_s(bare)} ms, median of {like['runs_each']} interleaved fresh "
                    f"processes each; CPU time {lam[key + '_cpu']:.2f})",
                ]
            )
    if lam.get("import_ratio") is not None:
        rows.append(
            [
                "cold import outside Lambda (POWERTOOLS_TRACE_DISABLED, no Lambda variables): status handler / bare "
                "`import kubernetes.client`",
                f"{lam['import_ratio']:.2f} ({_s(lam['status_handler_import_ms'])} ms / "
                f"{_s(lam['bare_kubernetes_client_import_ms'])} ms, median of {lam['runs_each']} fresh processes each)",
            ]
        )
    else:
        rows.append(["cold import ratio", "not measured (--import-runs 0)"])
    cold = lam.get("cold_starts")
    if cold:
        for mode, how in (("url", "HTTP, no AWS call"), ("eks", "moto's DescribeCluster over HTTP, STS token, HTTPS")):
            c = cold[mode]
            boto3 = "imported by the first call" if "boto3" in c["loaded_after_first_call"] else "never imported"
            rows.append(
                [
                    f"cold start, {mode} mode ({how}), tracing Active: import + first invocation",
                    f"{_s(c['cold_start_ms'])} ms ({_s(c['import_ms'])} + {_s(c['first_invocation_ms'])} ms; "
                    f"boto3 {boto3}; "
                    f"median of {cold['runs']} fresh processes)",
                ]
            )
        rows.append(
            [
                "warm poll, eks mode over HTTPS with a token (status handler)",
                f"{lam['warm_eks_https_ms']:.2f} ms median, p95 {lam['warm_eks_https_p95_ms']:.2f} ms "
                f"({cold['calls']} calls a process)",
            ]
        )
    rows.append(["peak RSS, one invocation in a fresh process", f"{lam['peak_rss_mb_one_invocation']:.1f} MB"])
    for name, r in lam["api_requests_per_poll"].items():
        rows.append(
            [
                f"API requests per poll: {name.replace('_', ' ')} ({r['phase']}, {r['reason']})",
                f"{r['requests_per_poll']:g} ({', '.join(r['requests'])}"
                + (f"; {r['polls']} polls)" if r["polls"] > 1 else ")"),
            ]
        )
    rows.append(
        [
            "warm poll latency: status handler / one bare GET",
            f"{lam['latency_ratio']:.2f} ({lam['handler_median_ms']:.2f} ms / {lam['bare_get_median_ms']:.2f} ms, "
            f"median of {lam['latency_calls']} interleaved calls; "
            f"p95 {lam['handler_p95_ms']:.2f} / {lam['bare_get_p95_ms']:.2f} ms)",
        ]
    )
    billed, assumed = lam.get("billed_ms_model"), lam.get("assumptions")
    if billed and assumed:
        rows.append(
            [
                "billed ms per status poll (model: measured + assumed, rounded up to 1 ms)",
                f"warm {billed['warm_ms']} ms; cold start: INIT {billed['cold_init_ms']} ms + first invocation "
                f"{billed['cold_first_invocation_ms']} ms; mean {billed['mean_ms_per_invocation']:.2f} ms per "
                f"invocation with one cold start per {assumed['assumed_invocations_per_cold_start']}",
            ]
        )
        rows.append(
            [
                "assumed, not measured",
                f"assumed_vpc_rtt_ms {assumed['assumed_vpc_rtt_ms']:g} per API request; "
                f"{assumed['assumed_cold_extra_round_trips']} more round trips on a cold start (TLS to the API, "
                f"DescribeCluster); assumed_runtime_init_ms {assumed['assumed_runtime_init_ms']:g}; "
                f"INIT billed: {'yes' if assumed['init_phase_billed'] else 'no'}",
            ]
        )
    return _table(["measurement", "value"], rows)


# --------------------------------------------------------------------------- targets


def targets(results: dict[str, Any]) -> list[dict[str, str]]:
    """Each goal, MET / MISSED / NOT RUN, with the numbers and, where missed, why."""
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
            "default: mean detection delay <= 0.5x seed-600",
            f"{_s(default['mean_delay_s'])} s vs {_s(seed['mean_delay_s'])} s = {d:.2f}x",
            d <= 0.5,
            f"the {WaitBounds().running_max_seconds} s running_max leaves half that on every job running past an hour",
        )
        add(
            "default: state transitions per job <= 1.5x seed-600",
            f"{_s(default['transitions_per_job'])} vs {_s(seed['transitions_per_job'])} = {t:.2f}x",
            t <= 1.5,
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
            "default-hint20: mean delay <= 0.25x seed-600",
            f"{_s(hint['mean_delay_s'])} s = {d:.2f}x",
            d <= 0.25,
            f"inside the hint's window polls are NEAR_FACTOR x sqrt(0.4 E) apart, up to {cap} s for long jobs "
            f"({long_class}: {_s(hint['by_class'][long_class]['mean_delay_s'])} s mean delay); {past} of "
            f"{hint['jobs']} jobs end after the window (hint 0.80-0.83x the truth) and fall back to the no-hint waits",
        )
        add(
            "default-hint20: state transitions per job <= seed-600",
            f"{_s(hint['transitions_per_job'])} vs {_s(seed['transitions_per_job'])} = {t:.2f}x",
            t <= 1.0,
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
        safety = callback_safety_intervals(results)
        limit = 15 + 3 * safety
        model = results["cost_model"]["callback"]
        per = model["transitions_per_poll"]
        once = model["transitions_fixed"] + per  # the execution that looks once: the resume
        pending, running = callback["pending_polls_per_job"], callback["running_polls_per_job"] - 1
        first_check, cadence = callback_pending_pace()
        add(
            "callback: state transitions per job <= 15 + 3 per safety interval",
            f"{_s(callback['transitions_per_job'])} vs 15 + 3 x {safety:.2f} = {_s(limit)} "
            f"({pending:.1f} PENDING looks, {running:.1f} safety polls per job)",
            callback["transitions_per_job"] <= limit,
            f"each look costs {per} transitions (Await, Status, IsDone). A PENDING look has value only where a "
            f"stuck start could be decided: the first pod check {first_check} s after submission, then one every "
            f"shortest grace ({cadence} s), so that a stuck pod's verdict comes no later than in poll mode: "
            f"{pending:.1f} per job for the workload's 0-10 min PENDING spells. With the {running:.1f} looks once "
            f"it runs (the one that sees it start, then one per safety interval) on the execution that looks once "
            f"({once}), the target leaves {(limit - once - per * running) / per:.1f} PENDING looks per job. "
            f"Without them: {_s(callback['transitions_per_job'] - per * pending)}",
        )
        if watch:
            ratio = callback["lambda_gb_s_per_job"] / watch["lambda_gb_s_per_job"]
            add(
                "callback: Lambda GB-s per job <= 1 % of watch mode's",
                f"{callback['lambda_gb_s_per_job']:.5f} vs {watch['lambda_gb_s_per_job']:.1f} = {100 * ratio:.4f} %",
                ratio <= 0.01,
                "",
            )
        ratio = callback["cost_per_1000_jobs_usd"] / seed["cost_per_1000_jobs_usd"]
        price = results["prices"]["step_functions_standard_usd_per_1000_transitions"]
        add(
            "callback: USD per 1,000 jobs <= 0.1x seed-600 (the notifier apart)",
            f"{callback['cost_per_1000_jobs_usd']:.3f} vs {seed['cost_per_1000_jobs_usd']:.3f} = {ratio:.2f}x; "
            f"the notifier: USD {notifier_month_usd():.2f} a month per cluster, whatever the jobs",
            ratio <= 0.1,
            f"0.1x is USD {0.1 * seed['cost_per_1000_jobs_usd']:.3f} per 1,000 jobs, "
            f"{0.1 * seed['cost_per_1000_jobs_usd'] / price:.1f} transitions per job at USD {price} per 1,000 "
            f"(Lambda apart). The execution that looks once is {once}, and a safety poll every "
            f"{SAFETY_POLL_SECONDS:,} s of the mean {callback['mean_running_seconds'] / 3600:.1f} h run adds "
            f"{per} x {safety:.2f}: {_s(once + per * safety)} transitions, USD {(once + per * safety) * price:.3f} "
            f"per 1,000 jobs, before any PENDING look (measured: {pending:.1f} PENDING looks, {running:.1f} safety "
            "polls)",
        )
        e2e = (results.get("end_to_end") or {}).get("callback")
        add(
            "callback: detection delay measured end to end (reported)",
            f"p50 {1000 * e2e['p50_delay_s']:.0f} ms, p95 {1000 * e2e['p95_delay_s']:.0f} ms ({e2e['runs']} jobs)"
            if e2e
            else "not measured in this run",
            None,
        )
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
    return out


def notifier_month_usd() -> float:
    return (NOTIFIER_VCPU * VCPU_HOUR_USD + NOTIFIER_GB * GB_HOUR_USD) * HOURS_PER_MONTH


def callback_safety_intervals(results: dict[str, Any]) -> float:
    """Safety intervals per job: the workload's mean RUNNING time over SafetyPollSeconds."""
    return float(results["callback"]["mean_running_seconds"]) / SAFETY_POLL_SECONDS


def callback_pending_pace() -> tuple[int, int]:
    """Callback mode's PENDING looks as the benchmark's callback policy sets them (jobsync.run.loop.callback_wait):
    seconds from submission to the first pod check, and the shortest grace (the cadence after it)."""
    settings = policy_settings(next(p for p in standard_policies() if p.safety_poll_seconds))
    return settings.diagnose_after_seconds + 1, min(grace_seconds(g, settings) for g in Grace)


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


def targets_table(rows: list[dict[str, str]]) -> str:
    return _table(
        ["target", "measured", "status", "why (where missed)"],
        [[r["target"], r["measured"], f"**{r['status']}**", r["why"]] for r in rows],
    )


# --------------------------------------------------------------------------- plot


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = policies(results)
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    seed = results.get("seed-600")
    if seed:
        # Where the default policy should land: <= 0.5x the delay at <= 1.5x the transitions.
        ax.fill_between(
            [0, 1.5 * seed["transitions_per_job"]], 0, 0.5 * seed["mean_delay_s"], color="tab:green", alpha=0.12
        )
        ax.text(4, 0.5 * seed["mean_delay_s"] - 6, "default's target", va="top", fontsize=8, color="tab:green")
        # And with the ±20 % hint: <= 0.25x the delay at no more transitions.
        hint_box = (seed["transitions_per_job"], 0.25 * seed["mean_delay_s"])
        ax.plot([0, hint_box[0], hint_box[0]], [hint_box[1], hint_box[1], 0], ls="--", lw=1, color="tab:red", alpha=0.6)
        ax.text(4, hint_box[1] - 6, "hint's target", va="top", fontsize=8, color="tab:red")
    for name in names:
        r = results[name]
        x, y = r["transitions_per_job"], r["mean_delay_s"]
        ax.scatter([x], [y], s=40, zorder=3)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(6, 5), fontsize=9)
    ax.set_xlabel("state transitions per job (Step Functions Standard)")
    ax.set_ylabel("mean detection delay (s)")
    ax.set_title(f"Detection delay against cost, {results['meta']['jobs']:,} simulated jobs", fontsize=10)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})  # no version stamp: the file changes only when the numbers do
    plt.close(fig)


# --------------------------------------------------------------------------- machine and markdown


def machine() -> dict[str, Any]:
    """What the numbers were measured on: no hostname, no paths."""
    cpu = platform.processor() or ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }


def _billed(prices: dict[str, Any], lam: dict[str, Any]) -> str:
    """How the billed ms per invocation was reached, measured and assumed parts named."""
    billed, assumed = lam.get("billed_ms_model"), lam.get("assumptions")
    mean = prices["lambda_billed_ms_per_invocation"]
    if not billed or not assumed:
        return f"{mean:g} ms"
    return (
        f"{mean:.2f} ms on average. Measured here: the status handler in EKS mode over HTTPS with a token, warm "
        f"{lam['warm_eks_https_ms']:.2f} ms, first invocation {lam['first_invocation_eks_ms']:.0f} ms (boto3, moto's "
        f"DescribeCluster, the token, the client) after a {lam['cold_import_lambda_like_ms']:.0f} ms Lambda-like cold "
        f"import. Assumed (bench/simulate.py LambdaAssumptions, never measured): {assumed['assumed_vpc_rtt_ms']:g} ms "
        f"per Kubernetes API request from a VPC Lambda to EKS ({lam['api_requests_per_running_poll']:g} a RUNNING "
        f"poll), {assumed['assumed_cold_extra_round_trips']} more round trips on a cold start, "
        f"{assumed['assumed_runtime_init_ms']:g} ms of the runtime's own start, one cold start per "
        f"{assumed['assumed_invocations_per_cold_start']} invocations (AWS: under 1%), and the INIT phase billed (on "
        f"demand, ZIP, managed runtime: since 1 August 2025). So a warm poll is billed {billed['warm_ms']} ms, a cold "
        f"start {billed['cold_init_ms']} ms of INIT plus {billed['cold_first_invocation_ms']} ms, each rounded up to "
        "the 1 ms Lambda bills in"
    )


def markdown(results: dict[str, Any], png_name: str) -> str:
    meta, models, prices = results["meta"], results["cost_model"], results["prices"]
    jm, sm = models["jobsync"], models["seed"]
    m = meta["machine"]
    cross = results.get("crosscheck")
    lam = results["lambda"]
    default = results.get("default")
    fifty_ms = ""
    if default:
        gb_s = default["lambda_invocations_per_job"] * 0.050 * prices["lambda_memory_mb"] / 1024
        fifty_ms = (
            f" Even at 50 ms billed per invocation (a slow round trip to EKS), `default`'s Lambda compute would "
            f"be {gb_s:.3f} GB-s per job, USD {1000 * gb_s * prices['lambda_usd_per_gb_second_x86']:.3f} per "
            "1,000 jobs: Step Functions transitions dominate the cost."
        )
    parts = [
        "# Performance: how fast jobsync notices a finished job, and what it costs",
        "",
        "Generated by `make bench` (`python -m bench`); do not edit by hand. "
        "The numbers behind it are in `bench/results.json`.",
        "",
        "## Detection delay and cost per policy",
        "",
        f"{meta['jobs']:,} simulated jobs (seed {meta['seed']}): a third each running 10-30 min, 1-3 h and "
        "3-24 h (uniform within the class), each after 0-10 min PENDING. A fifth of them fail (every fifth job, "
        "evenly over the classes): half of those in the first tenth of their run (configuration errors, out of "
        "memory), half uniformly over it; a failing job's hint is still its planned length. "
        "The real `jobsync.run.policy.next_wait` decides every wait, fed as `jobsync.run.poll` feeds it; "
        "a finished job is noticed at the first poll at or after its end. Deadline 7 days (no job reaches it).",
        "",
        policy_table(results),
        "",
        f"![mean detection delay against state transitions per job]({png_name})",
        "",
        "By job length (mean delay / polls per job):",
        "",
        class_table(results),
        "",
        "- `seed-600`: the hand-written loop jobsync replaces (the seed article's `eks:call` loop): GET (`eks:call`), "
        "Choice, Pass, Wait 600 s; its first GET right after creating the job. No Lambda.",
        "- `fixed-60`: jobsync's state machine with a constant 60 s Wait (no policy, no poll budget).",
        "- `default`: jobsync's policy with `WaitBounds()` and no hint.",
        "- `default-hint20`: the same, given `expectedDurationSeconds` = (pending + run) x U(0.8, 1.2), "
        "since the policy measures elapsed time from submission.",
        f"- `watch`: {WATCH_NOTE}.",
        f"- `callback`: {CALLBACK_NOTE}.",
        f"- `learned-hint30`: {LEARNED_NOTE}.",
        "- Longest job within 25,000 events: the longest run (after 10 min PENDING) whose execution stays "
        "under the cap, with deadlines of 8 and 30 days; with a hint, hints 0.8x and 1.2x the truth. "
        '"unbounded": every length up to the 30-day maximum deadline fits (a longer job ends TIMED_OUT).',
        "",
        "## Targets",
        "",
        targets_table(results["targets"]),
        "",
        *end_to_end_section(results),
        *scale_section(results),
        *throughput_section(results),
        "## The Lambdas",
        "",
        lambda_table(results),
        "",
        "The status handler ran against the in-process Kubernetes API (harness/kubeapi/) over loopback HTTP, "
        "with POWERTOOLS_TRACE_DISABLED=true and INFO logging as template.yaml sets it; the bare GET is "
        "`CustomObjectsApi.get_namespaced_custom_object` on a plain `kubernetes` client, timed alternately "
        "with the handler in the same fresh process. Import times are `python -c` in fresh processes, "
        "interleaved, after one warm-up of each.",
        "",
        *container.section(results),
        "## Cost model",
        "",
        "State transitions and history events come from walking `statemachine/run_job.asl.json` (and a "
        "reconstruction of the seed loop, bench/statemachine.py) for executions that poll once, twice and "
        "three times. History events per state: Task 5 (Entered, Scheduled, Started, Succeeded, Exited), "
        "Wait/Choice/Pass/Succeed 2, Fail 1, plus ExecutionStarted and the execution's end.",
        "",
        _table(
            ["machine", "states entered per poll", "transitions", "history events", "Lambda invocations"],
            [
                [
                    name,
                    " -> ".join(mm["states_per_poll"]),
                    f"{mm['transitions_fixed']} + {mm['transitions_per_poll']} x polls",
                    f"{mm['history_events_fixed']} + {mm['history_events_per_poll']} x polls "
                    f"(cap reached after {mm['max_polls_within_history_cap']:,} polls)",
                    f"{mm['lambda_invocations_fixed']} + {mm['lambda_invocations_per_poll']} x polls",
                ]
                for name, mm in (("jobsync", jm), ("seed-600", sm))
            ],
        ),
        "",
    ]
    if cross:
        rows = [
            [
                f"{r['pending_s']} s + {r['run_s']} s",
                str(r["expected_duration_s"] or "-"),
                str(r["polls"]),
                "yes" if r["poll_times_match"] else "NO",
                f"{r['states_entered']} / {r['states_entered_model']:g}",
                f"{r['history_events']} / {r['history_events_model']:g}",
            ]
            for r in cross["runs"]
        ]
        parts += [
            "Checked end to end: these jobs ran through the real state machine (moto's interpreter, the real "
            "handlers, the local Kubernetes API and operator simulator; harness/local.py). The simulator, given "
            "each job's real start and end, predicted the execution's poll times; the execution's history "
            "held the states and events the model gives for its polls.",
            "",
            _table(
                [
                    "job (pending + run)",
                    "expectedDurationSeconds",
                    "polls",
                    "simulated poll times match",
                    "states entered (history / model)",
                    "history events (history / model)",
                ],
                rows,
            ),
            "",
        ]
    parts += [
        "## Prices",
        "",
        f"List prices, {prices['region']}, free tier not applied: Step Functions Standard USD "
        f"{prices['step_functions_standard_usd_per_1000_transitions']} per 1,000 state transitions; Lambda USD "
        f"{prices['lambda_usd_per_1m_requests']} per 1M requests and USD {prices['lambda_usd_per_gb_second_x86']:.10f} "
        f"per GB-second (x86_64), at {prices['lambda_memory_mb']} MB (template.yaml Globals). Each invocation "
        f"(Submit, every Status, Cleanup) is billed {_billed(prices, lam)}.{fifty_ms} `eks:call` in the seed loop "
        "costs only its transitions.",
        "",
        f"Callback mode's notifier is not in its USD per 1,000 jobs: it is one pod per cluster, "
        f"{NOTIFIER_VCPU:g} vCPU and {int(NOTIFIER_GB * 1024)} MiB requested on a node the cluster already runs, "
        f"priced as that share of a node at the Fargate rates (us-east-1, Linux x86: USD {VCPU_HOUR_USD} per "
        f"vCPU-hour, USD {GB_HOUR_USD} per GB-hour): USD {notifier_month_usd():.2f} a month ({HOURS_PER_MONTH} h), "
        f"USD {notifier_month_usd() / 10:.3f} per 1,000 jobs at 10,000 jobs a month. DynamoDB (a token put "
        "per Await, a get and a delete per resume) is left out: USD 1.25 per million on-demand writes is "
        "under a US cent per 1,000 jobs.",
        "",
        "## Assumptions",
        "",
        "- Poll times leave out execution latency (a Lambda call and three transitions, well under a second).",
        "- A failure is noticed as a success is (one GET sees the terminal phase); the failed poll's extra "
        "requests (pods, log tail) are in the Lambda table, not in the delay.",
        "- No retries: a retried Task adds transitions and events the table does not count.",
        "- The seed's own job creation is counted as one Task (its article creates the PyTorchJob through a "
        "ConfigMap-templated Kubernetes Job), so its fixed cost is if anything low.",
        "",
        "## Machine",
        "",
        f"{m['platform']}; {m['cpu'] or 'CPU model unknown'}; {m['cpu_count']} CPUs; Python {m['python']}. "
        f"The whole benchmark took {meta['run_seconds']:.0f} s.",
        "",
    ]
    return "\n".join(parts)


def end_to_end_section(results: dict[str, Any]) -> list[str]:
    e2e = results.get("end_to_end") or {}
    if not e2e:
        return ["## Watch and callback mode end to end", "", "Not measured in this run.", ""]
    rows = [
        [
            f"`{mode}`",
            str(r["runs"]),
            f"{1000 * r['p50_delay_s']:.0f}",
            f"{1000 * r['p95_delay_s']:.0f}",
            f"{1000 * r['max_delay_s']:.0f}",
            ", ".join(f"{k}={v}" for k, v in r["env"].items()),
        ]
        for mode, r in e2e.items()
    ]
    timings = next(iter(e2e.values()))["timings"]
    return [
        "## Watch and callback mode end to end",
        "",
        "Measured, not assumed: `harness.local.LocalJobsync` on the wall clock (`WallClock`) runs the real state "
        "machine (moto's interpreter), the real handlers, the local Kubernetes API and the operator simulator "
        "(stepping every 5 ms on its thread); in callback mode also the notifier on its threads, publishing to "
        "moto's EventBridge, whose rule invokes the resume Lambda, which calls SendTaskSuccess. Each job is "
        f"{timings['pending_s']:g} s PENDING and {timings['run_s']:g} s RUNNING, one after another. The delay runs "
        "from the simulator's status write that ends the job (the time taken just before it) to the execution's "
        "last history event. The table's `watch` and `callback` rows use these delays job by job. Everything "
        "runs in one process: a deployment adds the network and the services' own latency (the EventBridge "
        "delivery, Lambda's invoke, a Step Functions task token's resume), none of which this measures.",
        "",
        _table(["mode", "jobs", "p50 (ms)", "p95 (ms)", "max (ms)", "settings"], rows),
        "",
    ]


def scale_section(results: dict[str, Any]) -> list[str]:
    from bench.scale import CONCURRENT, QUOTAS

    sc = results.get("scale")
    if not sc:
        return []
    rows = []
    for mode, m in sc["modes"].items():
        for n in CONCURRENT:
            row = m["rows"][str(n)]
            rows.append(
                [
                    f"`{mode}`",
                    f"{n:,}",
                    f"{row['lambda_concurrency']:,.2f}",
                    f"{row['api_requests_per_s']:,.2f}"
                    + (f" + {row['open_watches']:,.0f} open watches" if row["open_watches"] else ""),
                    f"{row['state_transitions_per_s']:,.2f}",
                    f"{row['start_execution_per_s']:,.3f}",
                ]
            )
    first = [
        f"`{mode}`: {QUOTAS[m['first_quota']][0]} at {m['jobs_at_first_quota']:,.0f} concurrent jobs"
        for mode, m in sc["modes"].items()
    ]
    quotas = "; ".join(f"{name} = {value:,g}" for name, value in QUOTAS.values())
    return [
        "## Scale: jobs running at once",
        "",
        "Steady state: N jobs always running, each as long as the workload's mean (submission to the execution's "
        "end), so N / that many executions start a second. Per-job rates from the simulation above; Kubernetes "
        "API requests: one per Lambda invocation that looks at the job (Submit's create and Cleanup's delete "
        "included) and the pod LIST of the poll that sees the end (the job's result), the seed's one "
        "`eks:call` GET per check; callback mode adds the notifier's one watch per "
        "cluster. Lambda concurrency is billed Lambda time per second.",
        "",
        _table(
            [
                "mode",
                "jobs at once",
                "Lambda concurrency",
                "Kubernetes API requests / s",
                "state transitions / s",
                "StartExecution / s",
            ],
            rows,
        ),
        "",
        f"Quotas assumed (defaults, us-east-1): {quotas}. The first each mode meets:",
        "",
        *(f"- {line}" for line in first),
        "",
    ]


def _outcomes(row: dict[str, Any]) -> str:
    phases = ", ".join(f"{count:,} {phase}" for phase, count in sorted(row["phases"].items()))
    runs = row.get("runs", 1)  # rows measured before RunJobs' limit ran every job in one run
    return (
        f"{phases} ({row['children']:,} {'child' if row['children'] == 1 else 'children'}"
        f"{f', {runs:,} runs' if runs > 1 else ''})"
    )


def _payload(row: dict[str, Any]) -> str:
    from bench.throughput import PAYLOAD_LIMIT

    over = [name for name in ("input", "output") if row[f"{name}_bytes"] > PAYLOAD_LIMIT]
    return f" ({' and '.join(over)} over 256 KB)" if over else ""


def throughput_lines(rows: list[dict[str, Any]]) -> list[str]:
    """What limits each mode, read off its largest measured run (and, for callback mode, its smallest)."""
    by_mode: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_mode.setdefault(row["mode"], []).append(row)
    lines = []
    if "poll" in by_mode:
        r = max(by_mode["poll"], key=lambda row: row["jobs"])
        n = r["lambda_held_peak"]
        held = (
            "no invocation stayed open while virtual time passed"
            if n == 0
            else f"at most {n:,} were still open when the local run's clock stepped, an artefact of that clock"
        )
        lines.append(
            f"`poll`: every look is a Lambda invocation, a GET and 3 transitions, so the cost grows with jobs x "
            f"looks: {r['lambda_invocations_per_job']:,.1f} invocations, {r['api_requests_per_job']:,.1f} API "
            f"requests and {r['transitions_per_job']:,.1f} transitions per job at {r['jobs']:,} jobs. Its limits "
            f"are the StateTransition bucket and the API server's request rate, not Lambda concurrency: a poll "
            f"answers within its GET ({held})."
        )
    if "watch" in by_mode:
        r = max(by_mode["watch"], key=lambda row: row["jobs"])
        lines.append(
            f"`watch`: a Status invocation holds a watch open while its job runs: at {r['jobs']:,} jobs "
            f"{r['lambda_held_peak']:,} were open at once, each also an open watch on the API server. Lambda "
            "concurrency (1,000 per account and region by default) is the limit; "
            f"{r['lambda_invocations_per_job']:,.1f} invocations and {r['transitions_per_job']:,.1f} transitions "
            "per job are few, but each invocation is billed for the time it waits."
        )
    if "callback" in by_mode:
        small = min(by_mode["callback"], key=lambda row: row["jobs"])
        r = max(by_mode["callback"], key=lambda row: row["jobs"])
        peers = [row for row in rows if row["jobs"] == r["jobs"]]
        least = min(peers, key=lambda row: row["transitions_per_job"])
        fewest = "the fewest transitions"
        held_open = r["lambda_held_peak"]
        held = "no Lambda held open" if held_open == 0 else f"{held_open:,} Lambdas open at once"
        per_job = f"{r['transitions_per_job']:,.1f} per job at {r['jobs']:,} jobs"
        lines.append(
            f"`callback`: {f'{fewest} ({per_job})' if r is least else f'{per_job} transitions'} "
            f"and {held}. The notifier watches every job through one watch per kind: "
            f"{r['api_by_verb'].get('watch', 0):,} watch requests at {r['jobs']:,} jobs against "
            f"{small['api_by_verb'].get('watch', 0):,} at {small['jobs']:,} (a watch lasts 5 virtual seconds "
            f"here), and its events ran the resume function {r['lambda_by_function'].get('resume', 0):,} times. "
            "The notifier, one pod, is the limit: every job's end goes through its watch and its publishing."
        )
    return lines


def throughput_table(rows: list[dict[str, Any]]) -> str:
    """Mode x jobs: wall and virtual time, invocations, the API's peak rate, transitions and outcomes."""
    table = [
        [
            f"`{r['mode']}`",
            f"{r['jobs']:,}",
            f"{r['wall_s']:,.1f}",
            f"{r['virtual_s']:,.0f}",
            f"{r['lambda_invocations']:,} ({r['lambda_invocations_per_job']:,.1f})",
            f"{r['api_peak']['per_s']:,.0f} (at {r['api_peak']['at_s']:,.0f} s)",
            f"{r['transitions']['total']:,} ({r['transitions_per_job']:,.1f})",
            _outcomes(r) + _payload(r),
        ]
        for r in rows
    ]
    header = [
        "mode",
        "jobs",
        "wall (s)",
        "virtual (s)",
        "Lambda invocations (per job)",
        "peak API requests / s",
        "state transitions (per job)",
        "outcomes",
    ]
    return _table(header, table)


def wall_time_line(rows: list[dict[str, Any]]) -> str:
    """Where the wall time goes, from the largest run's time steps."""
    r = max(rows, key=lambda row: row["wall_s"])
    steps = r.get("time_steps")
    if steps is None:
        return ""
    settle_ms = 1000 * r["settle_s"]
    return (
        "Wall time is the local run's own cost, not the service's: the virtual clock moves in steps, each once "
        "every execution waits (in a Wait, a Task, or for its children) and none has begun or ended a wait for "
        f"{settle_ms:.0f} ms of wall time (so every execution woken reaches its next wait first), and every "
        "handler, state and request runs in this one Python process. "
        f"The slowest run, {r['jobs']:,} job{'' if r['jobs'] == 1 else 's'} in `{r['mode']}` mode, "
        f"took {steps:,} steps "
        f"({steps * r['settle_s']:,.0f} s of them waiting for quiet) in {r['wall_s']:,.0f} s. Poll mode steps at "
        "every distinct moment a job looks; in watch and callback mode the open watches (the jobs' own, or the "
        "notifier's) move time in shared 5-second steps."
    )


def throughput_section(results: dict[str, Any]) -> list[str]:
    tp = results.get("throughput")
    if not tp or not tp.get("rows"):
        return []
    rows = tp["rows"]
    sizes = [f"{n:,}" for n in sorted({r["jobs"] for r in rows})]
    left_out = list(tp.get("sizes_not_run", []))
    from bench.throughput import MAX_JOBS_PER_RUN

    largest = max(rows, key=lambda row: row["jobs"])
    per_run = math.ceil(largest["jobs"] / largest.get("runs", 1))  # the largest run's jobs (runs differ by one)
    # Rows measured before RunJobs took at most MAX_JOBS_PER_RUN jobs a run hold more in their one run.
    in_one = sorted({r["jobs"] for r in rows if r["jobs"] > MAX_JOBS_PER_RUN and r.get("runs", 1) == 1})
    in_one_text = " and ".join(f"{n:,}" for n in in_one)
    peak = (
        "The peak is the start: every job is submitted in the same virtual second. "
        if all(r["api_peak"]["at_s"] == 0 for r in rows)
        else ""
    )
    return [
        "## Throughput: jobs started together",
        "",
        "Measured, not modelled: `python -m bench --throughput` (`make bench-throughput`) starts "
        f"{', '.join(sizes[:-1]) + ' and ' + sizes[-1] if len(sizes) > 1 else sizes[0]} jobs together through "
        "`RunJobs` (a Map of `startExecution.sync:2` child `RunJob` executions, `maxConcurrency` 0, `failFast` "
        f"false; past {MAX_JOBS_PER_RUN} jobs, the most a run takes, as several runs of at most {MAX_JOBS_PER_RUN} "
        "started together and counted together) in the local run: `harness.local.LocalJobsync`, moto's "
        "interpreter, the real handlers, the local Kubernetes API and the operator simulator, on virtual time "
        "(every Wait passes at once, in step with the other executions). The jobs mix the simulator's scenarios "
        "that end in success: 3 in 5 plain runs, 1 in 5 with a worker restart half-way, 1 in 5 waiting for GPUs "
        "while the autoscaler adds a node; each 10 to 60 virtual minutes from creation to the end, derived from "
        "its index (bench/throughput.py). Wall time is the whole measurement on this machine; virtual time runs "
        "from the start to the last parent's last history event. Lambda invocations are every handler call the "
        "harness made (Submit, Status, Await, Resume, Cleanup); API requests are the local API server's request "
        "log (the notifier's included), the peak is the busiest virtual second; transitions are the states "
        "entered in the histories of every parent (its Map's "
        "iterations included) and of every child."
        + (f" The {in_one_text}-job rows predate that limit: all their jobs ran in one run." if in_one else ""),
        "",
        throughput_table(rows),
        "",
        *(f"- {line}" for line in throughput_lines(rows)),
        "",
        wall_time_line(rows),
        "",
        f"{peak}What the local run does not impose, and AWS does: an Inline Map runs at most 40 iterations at "
        "once, whatever `maxConcurrency` says"
        + (
            f", so the service would run the {in_one_text} jobs of one run in rounds and their virtual time above "
            "is a lower bound"
            if in_one
            else ", no more than a run holds"
        )
        + "; and an execution's input and a state's output are capped at 256 KB, which the table flags where "
        "a run passes it (each job's input here is "
        f"{largest['input_bytes'] / per_run / 1024:.1f} KB, each outcome in the output "
        f"{largest['output_bytes'] / per_run / 1024:.1f} KB)."
        + (
            f" Not run this time: {', '.join(f'{n:,}' for n in left_out)} jobs (opt-in with `--throughput-max`)."
            if left_out
            else ""
        ),
        "",
    ]


def write(results: dict[str, Any], md_path: Path, png_path: Path, progress: Callable[[str], None]) -> None:
    plot(results, png_path)
    md_path.write_text(markdown(results, png_path.name))
    progress(f"wrote {md_path.name} and {png_path.name}")
