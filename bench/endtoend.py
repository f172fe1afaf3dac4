"""Detection delay of watch and callback mode, measured end to end on the wall clock.

``harness.local.LocalJobsync`` runs the whole service in this process on the
real clock (``WallClock``): the real state machine in moto's interpreter, the
real handlers, the local Kubernetes API and the operator simulator stepping on
a thread of its own. In callback mode the notifier runs as its own process
(``python -m jobsync_notifier``), watches the API over HTTP and publishes over
HTTP to moto's EventBridge in this process, whose rule invokes the resume
Lambda, which calls SendTaskSuccess; in watch mode each Status holds a real
(wall-clock) watch.

The delay of one job runs from the simulator's status write that ends the job
(the time taken just before the write, so the delay is if anything overstated)
to the execution's last history event (ExecutionSucceeded). Jobs are short (a
second PENDING, a few seconds RUNNING) and run one after another.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import sys
import time
from typing import Any

from bench.simulate import p95
from bench.statemachine import ROOT
from tests.support.lambdas import QUIET, load_event

MODES: dict[str, dict[str, str]] = {
    # Watches a few seconds long: a job of a few seconds ends inside the second one.
    "watch": {"JOBSYNC_COMPLETION_MODE": "watch", "JOBSYNC_WATCH_SECONDS": "20"},
    "callback": {"JOBSYNC_COMPLETION_MODE": "callback"},
}
NOTIFIER = ROOT / "notifier"
TIMINGS = {"pending_s": 1.0, "run_s": 3.0}


def measure_mode(mode: str, runs: int) -> dict[str, Any]:
    """``runs`` jobs in ``mode`` through the whole local service on the wall clock; their detection delays."""
    from harness.local import LocalJobsync, WallClock  # moto: only when this measurement runs

    if str(NOTIFIER) not in sys.path:  # the notifier is a package of its own (notifier/), as the tests load it
        sys.path.insert(0, str(NOTIFIER))

    delays: list[float] = []
    local = LocalJobsync("success", TIMINGS, env={**QUIET, **MODES[mode]})
    local.clock = WallClock()  # before __enter__: the API, the simulator and the interpreter all read it
    ends: dict[str, float] = {}
    with contextlib.redirect_stdout(io.StringIO()), local:
        assert local.sim and local.sfn and local.api
        local.api.virtual_watch = None  # a watch lasts its timeoutSeconds of real time
        local.sfn.callback_step_seconds = 0.001  # a token wait sleeps in 1 ms steps, not 30 s ones
        sim = local.sim
        write = sim._write

        def recorded_write(track: Any, job: Any, status: Any, now: float) -> None:
            if status.get("completionTime") and track.name not in ends:
                ends[track.name] = time.time()
            write(track, job, status, now)

        sim._write = recorded_write  # type: ignore[method-assign]
        sim.run_in_background(interval=0.005)
        for i in range(runs):
            arn = local.start(load_event("run-job-input.json"), name=f"e2e-{mode}-{i}")
            description = local.sfn.wait(arn, timeout_s=120)
            if description["status"] != "SUCCEEDED":
                raise RuntimeError(f"{mode} run {i} ended {description['status']}: {description.get('cause')}")
            history = local.sfn.history(arn)
            name = local.result(arn, description).output["job"]["name"]
            delays.append(history[-1]["timestamp"].timestamp() - ends[name])
    return {
        "runs": runs,
        "timings": TIMINGS,
        "env": MODES[mode],
        "delays_s": delays,
        "p50_delay_s": statistics.median(delays),
        "p95_delay_s": p95(delays),
        "mean_delay_s": statistics.fmean(delays),
        "max_delay_s": max(delays),
    }


def measure(runs: int) -> dict[str, Any]:
    return {mode: measure_mode(mode, runs) for mode in MODES}


if __name__ == "__main__":
    import json

    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 3), indent=2, default=str))
