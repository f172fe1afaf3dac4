"""How each mode scales: 1 to 10,000 jobs running at once, against the AWS quotas it meets first.

Steady state: N jobs always running, each lasting the workload's mean (submission
to the execution's end), so N / that many executions start every second. Rates
per job come from the simulation (bench.simulate): state transitions, Lambda
time as billed, Kubernetes API requests (one per Lambda invocation that looks
at the job, plus Submit's create and Cleanup's delete, plus the pod LIST of the
poll that sees the end, which reads the job's result; the seed's one eks:call
GET per check). The sweeper's own LIST, one per kind every SweepMinutes while
executions wait, is per cluster, not per job, and left out.
"""

from __future__ import annotations

from typing import Any

CONCURRENT = (1, 100, 1_000, 10_000)
# Default quotas, Step Functions Standard and Lambda, us-east-1 (other regions: smaller buckets).
QUOTAS: dict[str, tuple[str, float]] = {
    "lambda_concurrency": ("Lambda concurrent executions (account, per region)", 1_000),
    "state_transitions_per_s": ("Step Functions StateTransition token bucket: refill 5,000/s (bucket 5,000)", 5_000),
    "start_execution_per_s": ("Step Functions StartExecution token bucket: refill 300/s (bucket 1,300)", 300),
    "open_executions": ("Step Functions open executions (Standard, per account and region)", 1_000_000),
}
MODES = ("seed-600", "default", "default-hint20", "watch", "callback")


def per_job_rates(r: dict[str, Any], watch: bool = False) -> dict[str, float]:
    """Per running job, per second: what one job of the workload asks of each service on average."""
    seconds = r["execution_seconds_mean"]
    # Seed: one eks:call GET a check, and the create. jobsync: Submit creates, Status/Await/resume GET, Cleanup
    # deletes, and the poll that sees the end lists the pods once (the result; a failed job's diagnostics).
    api = r["polls_per_job"] + 1 if r["machine"] == "seed" else r["lambda_invocations_per_job"] + 1
    api += r.get("sweeper_looks_per_job", 0.0)  # callback with the sweeper: its looks, one GET each
    return {
        "lambda_concurrency": r["lambda_seconds_per_job"] / seconds,
        "state_transitions_per_s": r["transitions_per_job"] / seconds,
        "start_execution_per_s": 1 / seconds,
        "open_executions": 1.0,
        "api_requests_per_s": api / seconds,
        "open_watches": r["lambda_seconds_per_job"] / seconds if watch else 0.0,
    }


def scale(results: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"quotas": {k: {"name": n, "value": v} for k, (n, v) in QUOTAS.items()}, "modes": {}}
    for mode in MODES:
        if mode not in results:
            continue
        rates = per_job_rates(results[mode], watch=mode == "watch")
        first = min(QUOTAS, key=lambda q: QUOTAS[q][1] / rates[q] if rates[q] else float("inf"))
        out["modes"][mode] = {
            "per_job": rates,
            "rows": {str(n): {k: n * v for k, v in rates.items()} for n in CONCURRENT},
            "first_quota": first,
            "jobs_at_first_quota": QUOTAS[first][1] / rates[first],
        }
    return out
