"""docs/performance.md and its plot from the benchmark's results (tables: bench.tables; targets: bench.targets;
the plot: bench.plot)."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import container
from bench.notifier_report import notifier_section
from bench.plot import plot
from bench.tables import _table, class_table, lambda_table, policy_table, targets_table
from bench.targets import (
    GB_HOUR_USD,
    HOURS_PER_MONTH,
    NOTIFIER_GB,
    NOTIFIER_VCPU,
    VCPU_HOUR_USD,
    notifier_month_usd,
    sweeper_month_usd,
    targets,
)
from bench.throughput_report import throughput_section, throughput_table

__all__ = [
    "CALLBACK_NOTE",
    "CALLBACK_NO_SWEEPER_NOTE",
    "LEARNED_NOTE",
    "WATCH_NOTE",
    "lambda_table",
    "machine",
    "markdown",
    "policy_table",
    "resume_lines",
    "targets",
    "targets_table",
    "throughput_section",
    "throughput_table",
    "write",
]

WATCH_NOTE = (
    "each Status holds a Kubernetes watch up to 840 s (the template's largest WatchSeconds) and answers "
    "when the phase changes, after the delays measured end to end (below), job by job in turn; billed for "
    "the time it holds the watch; the Wait after it keeps the poll budget"
)
CALLBACK_NOTE = (
    "the stack as the template deploys callback mode (Sweeper=ENABLED, SweepMinutes 2): the notifier's event "
    "wakes the execution, whose Await looks once and resumes it, after the delays measured end to end (below; "
    "the wake's own cost: bench/resume.py). The sweeper, every 120 s, takes a starting job's checks "
    "(jobsync.core.wait.sweep_due: the first pod check 121 s after submission, then every shortest grace) and "
    "looks once when its LIST shows the job started; its looks are billed inside its own invocations. The Await "
    "times out only at the 6-hour backstop. Lambda: Submit, every Await (stores the token, looks once), every "
    "backstop's Status, Cleanup, and the resume function"
)
CALLBACK_NO_SWEEPER_NOTE = (
    "callback mode with Sweeper=DISABLED: while PENDING each Await times out when a stuck start could first be "
    "decided (jobsync.core.wait.callback_wait: the first pod check 121 s after submission, then every shortest "
    "grace, 120 s) and runs one Status, while RUNNING once every 3,600 s (SafetyPollSeconds' default)"
)
LEARNED_NOTE = (
    "the policy given a learned hint: each job's family runs its typical length x U(0.7, 1.3), and the hint "
    "is the median of the family's last 5 runs (jobsync.aws.hints)"
)
# The notifier: one pod on a node the cluster already runs. Priced at the Fargate rates (us-east-1, Linux x86)
# as the share of a node it takes: USD 0.04048 per vCPU-hour and USD 0.004445 per GB-hour.


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
        f"import. Assumed (bench/prices.py LambdaAssumptions, never measured): {assumed['assumed_vpc_rtt_ms']:g} ms "
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
        "The real `jobsync.core.wait.next_wait` decides every wait, fed as `jobsync.run.poll` feeds it; "
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
        f"- `callback-no-sweeper`: {CALLBACK_NO_SWEEPER_NOTE}.",
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
        *callback_at_scale_section(results),
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
        agreement = cross.get("delay_agreement")
        if agreement:
            parts += [
                f"The simulator's mean detection delay against the real state machine's (default policy, poll "
                f"mode; `bench.crosscheck.delay_agreement`): {agreement['jobs']} jobs of the throughput workload "
                f"ran as RunJob executions, each replayed with its pending and run time and its uid (the status "
                f"step's jitter hashes it): real {agreement['real_mean_delay_s']:.1f} s, simulated "
                f"{agreement['simulated_mean_delay_s']:.1f} s, {100 * agreement['relative_difference']:.1f} % apart "
                f"(the target: within 5 %; without the jitter the simulator gave "
                f"{agreement['simulated_without_jitter_mean_delay_s']:.1f} s).",
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
        f"USD {notifier_month_usd() / 10:.3f} per 1,000 jobs at 10,000 jobs a month; the sweeper's own runs are "
        "priced the same way (below). DynamoDB (a token put "
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
        *resume_lines(results),
    ]


def callback_at_scale_section(results: dict[str, Any]) -> list[str]:
    """What callback mode does at a cluster's size (docs/notifier.md), and the notifier's figures
    (``make bench-notifier``: bench/notifier.py)."""
    return [
        "### Callback mode at a cluster's size",
        "",
        "The notifier reads its LIST in pages of 500 jobs and keeps, per job that has not ended, its uid, name, "
        "execution and last phase (of ended jobs, the last 4,096 uids): its memory follows the jobs that run, not "
        "the history the default cleanup keeps. It is ready once its LIST is read, and puts events with PutEvents "
        "in batches of up to 10 entries and 256 KB, 8 calls at once, with the entries a call did not take put again "
        "(docs/notifier.md). The stack's sweeper (`Sweeper=ENABLED`, every `SweepMinutes`) replaces each "
        "execution's safety poll and the starting job's Await timeouts: with the notifier dead, a job's end is "
        "noticed within one sweep interval, and the Await's own timeout is a 6-hour backstop. The `callback` row "
        "above is that stack; `callback-no-sweeper` the one with `Sweeper=DISABLED`, whose safety polls and "
        "PENDING looks are Await timeouts.",
        "",
        *sweeper_lines(results),
        *notifier_section(results),
    ]


def sweeper_lines(results: dict[str, Any]) -> list[str]:
    """What the sweeper does and costs, and how late it notices a job's end with the notifier dead."""
    callback = results.get("callback") or {}
    if "sweeper_looks_per_job" not in callback:
        return []
    lines = [
        f"The sweeper looks at a job {callback['sweeper_looks_per_job']:.2f} times on average (a starting job's "
        "checks, and once when its LIST shows the job running), inside its own invocations: USD "
        f"{callback['cost_per_1000_jobs_breakdown_usd']['sweeper_looks']:.4f} per 1,000 jobs, in the `callback` row. "
        "With the notifier dead (simulated over the workload, each job's submission at its own point of the "
        f"interval): a job's end is noticed {callback['notifier_down_simulated']['mean_delay_s']:.0f} s late on "
        f"average, {callback['notifier_down_simulated']['max_delay_s']:.0f} s at most.",
    ]
    down = callback.get("notifier_down")
    month = sweeper_month_usd(results)
    if down and month is not None:
        idle = down["idle_sweep"]
        lines += [
            "",
            f"Measured in the local run (bench/dead_notifier.py: the real state machine, handlers and sweep function "
            f"on virtual time, no notifier): {down['jobs']} jobs, each ended by the sweeper alone, noticed "
            f"{down['mean_delay_s']:.0f} s late on average, {down['max_delay_s']:g} s at most (the run's clock moves "
            f"in {down['clock_step_s']:g} s steps, so a sweep runs up to that late). A sweep with nothing waiting "
            f"takes {idle['median_ms']:.1f} ms here (median of {idle['runs']}) and makes one DynamoDB Scan and no "
            "Kubernetes request; with the assumed VPC round trip, its "
            f"{HOURS_PER_MONTH * 3600 // down['sweep_seconds']:,} runs a month cost USD {month:.3f}.",
        ]
    return [*lines, ""]


def resume_lines(results: dict[str, Any]) -> list[str]:
    """What callback mode's end costs with Resume waking the execution for a look (bench/resume.py)."""
    measured = (results.get("callback") or {}).get("resume")
    if not measured:
        return []
    end, more = measured["job_end"], measured["more_than_trusting_the_event"]
    requests = ", ".join(f"{n} {what}" for what, n in end["kubernetes_requests"].items())
    return [
        "### Callback mode: the event wakes a look",
        "",
        "Resume does not take the notifier's event as the verdict: it checks the claim (the execution waits, for "
        "this job, and the job has ended: one GET) and wakes the execution, whose next look, the same as every "
        "poll's, gives the verdict with the pods' diagnostics, the log tail and the result, none of which the "
        'event carries (docs/state-machine.md, "Callback mode"). Measured on one job in the local run (virtual '
        f"time), from the event to the execution's end: {end['states_entered']} states entered, "
        f"{end['history_events']} history events, Kubernetes requests: {requests}. Against a Resume that trusted "
        f"the event (and still read the pods for the result): {more['transitions']} state transitions, "
        f"{more['history_events']} history events, {more['lambda_invocations']} Lambda invocation and "
        f"{more['kubernetes_requests']} Kubernetes requests more per job; they are in the `callback` row above.",
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


def write(results: dict[str, Any], md_path: Path, png_path: Path, progress: Callable[[str], None]) -> None:
    plot(results, png_path)
    md_path.write_text(markdown(results, png_path.name))
    progress(f"wrote {md_path.name} and {png_path.name}")
