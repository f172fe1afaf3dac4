"""RunJobs' throughput in the local run (bench/throughput.py), as docs/performance.md shows it."""

from __future__ import annotations

import math
from typing import Any

from bench.tables import _table


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
        f"false; past {MAX_JOBS_PER_RUN} jobs, the most a run is given inline, as several runs of at most "
        f"{MAX_JOBS_PER_RUN} "
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
