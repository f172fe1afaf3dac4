"""Callback mode with the notifier dead: how late the stack's sweeper notices a job's end, and what a sweep costs.

Jobs run one after another through the local service (the real state machine,
handlers and sweep function, on virtual time) in callback mode with the
template's sweep interval and no notifier: nothing announces a job's end, and
only the sweeper's LIST sees it. Each job runs a little longer than the one
before, so that its end falls at another point of the sweep interval. The
delay is the execution's ``noticedAt`` less the job's ``finishedAt`` (the
operator's completion time), as the output reports them.

The local run plays the schedule on its own clock, which moves in steps of at
most ``STEP`` seconds: a sweep runs up to one step after its moment, where
EventBridge Scheduler invokes it on time. Time stands still while a sweep runs,
so its own duration is measured apart: the sweep function invoked with no
execution waiting, timed on the wall clock, with the Kubernetes requests it makes.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from typing import Any

from bench.simulate import SWEEP_SECONDS, p95
from jobsync import clock
from tests.support.lambdas import QUIET, load_event

STEP = 5.0  # the local run's clock step: a sweep runs up to this late
PENDING_S = 60
RUN_S = 1800
SWEEP_ENV = {**QUIET, "JOBSYNC_COMPLETION_MODE": "callback", "JOBSYNC_SWEEP_SECONDS": str(SWEEP_SECONDS)}


def _seconds(stamp: str) -> float:
    value = clock.parse(stamp)
    if value is None:
        raise ValueError(f"not a timestamp: {stamp!r}")
    return value


def measure(jobs: int = 12, idle_sweeps: int = 20) -> dict[str, Any]:
    """``jobs`` callback jobs with the notifier dead, each ended by the sweeper; then ``idle_sweeps`` timed sweeps."""
    from harness.local import LocalJobsync  # moto: only when this measurement runs

    delays: list[float] = []
    with (
        contextlib.redirect_stdout(io.StringIO()),
        LocalJobsync("success", env=SWEEP_ENV, notifier=False, max_step=STEP) as local,
    ):
        assert local.sweeps and local.api
        for index in range(jobs):
            # Ends spread over the interval: the run grows by an interval's share plus a prime's worth of seconds.
            local.timings = {"pending_s": PENDING_S, "run_s": RUN_S + index * (SWEEP_SECONDS // jobs + 7)}
            result = local.run(load_event("run-job-input.json"), name=f"bench-dead-notifier-{index}", timeout_s=300)
            if result.status != "SUCCEEDED" or result.output["timesFrom"]["finishedAt"] != "job":
                raise RuntimeError(f"job {index} ended {result.status}: {result.cause}")
            delays.append(_seconds(result.output["noticedAt"]) - _seconds(result.output["finishedAt"]))
        resumed = sum(
            1
            for call in local.sfn.invocations
            if call.function_name == "jobsync-sweep" and call.result and call.result.get("resumed")
        )
        local.api.clear_requests()
        durations = []
        for _ in range(idle_sweeps):
            started = time.perf_counter()
            local.sweeps.run_now()
            durations.append(1000 * (time.perf_counter() - started))
        requests: dict[str, int] = {}
        for record in local.api.requests:
            key = f"{record.verb} {record.resource}"
            requests[key] = requests.get(key, 0) + 1
    return {
        "jobs": jobs,
        "sweep_seconds": SWEEP_SECONDS,
        "clock_step_s": STEP,
        "delays_s": delays,
        "mean_delay_s": statistics.fmean(delays),
        "p95_delay_s": p95(delays),
        "max_delay_s": max(delays),
        "executions_resumed_by_the_sweeper": resumed,
        "idle_sweep": {
            "runs": idle_sweeps,
            "median_ms": statistics.median(durations),
            # Per sweep with nothing waiting, as the local API logged them: none, the LISTs are of the kinds the
            # waiting executions' jobs are.
            "kubernetes_requests": {key: count / idle_sweeps for key, count in sorted(requests.items())},
            # Not logged here: the sweep's code reads the waiting executions with one Scan of the token table
            # (jobsync.aws.tokens, one page while the table is small).
            "aws_requests": {"dynamodb Scan": 1},
        },
    }
