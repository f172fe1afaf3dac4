"""Throughput: 1 to 1,000 jobs started together through RunJobs, per completion mode, in the local run.

    python -m bench --throughput [--throughput-max N]

``harness.local.LocalJobsync`` runs the real RunJobs parent
(statemachine/run_jobs.asl.json: a Map of ``startExecution.sync:2`` child
RunJob executions, ``maxConcurrency`` 0, ``failFast`` false) in moto's
interpreter, on the harness's virtual clock: every child's Wait states pass at
once, in step with the others (``LocalStepFunctions.cooperative_waits``).
Each run takes at most ``MAX_JOBS_PER_RUN`` jobs inline (RunJobs takes more,
through S3, past what fits its input), so a size past that starts several runs
together in the same local run (``batches``). Each measurement counts, over all its runs, from what the
harness records:

- wall time (``perf_counter``) of the whole measurement, and virtual time from
  the start to the last parent's end (its last history event);
- Lambda invocations (``LocalStepFunctions.invocations``), in total and by function;
- Kubernetes API requests (the local API server's request log, each stamped
  with the virtual clock), in total and at the peak: the busiest virtual second;
- Step Functions state transitions, one per state entered, read off the
  histories of every parent and every child (``bench.statemachine.states_entered``);
- every run's status and every child's outcome;
- the largest run's input and output, in bytes (Step Functions caps each run's).

The jobs are a mix of the operator simulator's scenarios that end in success
(plain runs, a worker restart half-way, a wait for GPUs while the autoscaler
scales up), each 10 to 60 virtual minutes long, all derived from the job's index.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from bench.statemachine import ROOT, states_entered
from tests.support.lambdas import QUIET

SIZES = (1, 10, 100, 1_000)
QUICK_SIZES = (1, 10)
MODES = ("poll", "watch", "callback")
NOTIFIER = ROOT / "notifier"
# The inline jobs of one run: what fits an execution's 256 KB input with room, and what every recorded
# throughput row was measured with (tests/bench/test_throughput_runs.py holds it within what RunJobs takes).
MAX_JOBS_PER_RUN = 40
PAYLOAD_LIMIT = 256 * 1024  # Step Functions: an execution's input and a state's output, in UTF-8 bytes
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"


def job_plan(index: int) -> tuple[str, dict[str, float]]:
    """The simulator scenario and timings of job ``index``: 10 to 60 virtual minutes from creation to the end.

    Three in five run plainly; one in five has its worker restart half-way (two minutes lost); one in five
    waits for GPUs while the Cluster Autoscaler adds a node, for a quarter of its time.
    """
    if index < 0:
        raise ValueError(f"job index must be >= 0, got {index}")
    total = 600 + (index * 37 % 51) * 60  # 10..60 min, spread over the range by a stride coprime with 51
    pending = 30 + (index * 13 % 10) * 10  # 30..120 s
    kind = index % 5
    if kind == 3:
        return "restarting", {"pending_s": pending, "restart_at": total / 2, "restart_s": 120, "run_s": total - pending}
    if kind == 4:
        return "gpu-scale-up", {"scale_up_s": total / 4, "run_s": total - total / 4}
    return "success", {"pending_s": pending, "run_s": total - pending}


def job_input(index: int) -> dict[str, Any]:
    """One RunJob input: a PyTorchJob (a master and a worker) naming its scenario with the test-only annotations."""
    scenario, timings = job_plan(index)
    replica = {
        "replicas": 1,
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": [{"name": "pytorch", "image": IMAGE}]}},
    }
    return {
        "job": {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {
                "name": f"throughput-{index}",
                "annotations": {
                    "jobsync.local/scenario": scenario,
                    "jobsync.local/timings": json.dumps(timings),
                },
            },
            "spec": {"pytorchReplicaSpecs": {"Master": replica, "Worker": replica}},
        },
        "timeoutSeconds": 6 * 3600,
        "cleanup": "onFailure",
    }


def run_jobs_input(jobs: int, first: int = 0) -> dict[str, Any]:
    """One RunJobs input: ``jobs`` jobs, indexed from ``first`` (the jobs of several runs have names of their own)."""
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    return {"jobs": [job_input(i) for i in range(first, first + jobs)], "maxConcurrency": 0, "failFast": False}


def batches(jobs: int, maximum: int = MAX_JOBS_PER_RUN) -> list[range]:
    """The job indices of each run when ``jobs`` jobs need runs of at most ``maximum``: as few runs as
    that allows, sizes within one of each other, in index order."""
    if jobs < 1 or maximum < 1:
        raise ValueError(f"jobs and maximum must be >= 1, got jobs={jobs}, maximum={maximum}")
    runs = math.ceil(jobs / maximum)
    size, extra = divmod(jobs, runs)  # the first ``extra`` runs take one job more
    starts = [i * size + min(i, extra) for i in range(runs + 1)]
    return [range(start, end) for start, end in itertools.pairwise(starts)]


# --------------------------------------------------------------------------- aggregation


def peak_rate(times: Iterable[float], origin: float, bucket_s: float = 1.0) -> dict[str, float]:
    """The busiest ``bucket_s``-long bucket of ``times`` (buckets from ``origin``): its count per second and start.

    A time before ``origin`` is a bug in whoever stamped it: it raises.
    """
    if bucket_s <= 0:
        raise ValueError(f"bucket_s must be positive, got {bucket_s}")
    counts: Counter[int] = Counter()
    for at in times:
        if at < origin:
            raise ValueError(f"a request at {at} is before the run's start {origin}")
        counts[math.floor((at - origin) / bucket_s)] += 1
    if not counts:
        return {"per_s": 0.0, "at_s": 0.0, "count": 0}
    bucket, count = max(counts.items(), key=lambda kv: (kv[1], -kv[0]))  # the earliest of equal peaks
    return {"per_s": count / bucket_s, "at_s": bucket * bucket_s, "count": count}


def held_peak(spans: Iterable[tuple[float, float | None]]) -> int:
    """The most invocations open at once among those that held virtual time (answered later than called).

    On virtual time a Lambda that only computes answers at the instant it was called; one that holds
    a watch stays open for the watch's virtual seconds. An interval is [called, answered): one that
    ends as another begins does not overlap it. Unanswered invocations (errors) held nothing.
    """
    edges: list[tuple[float, int]] = []
    for called, answered in spans:
        if answered is not None and answered > called:
            edges += [(called, 1), (answered, -1)]
    peak = open_now = 0
    for _, change in sorted(edges):  # at equal times -1 sorts first: an end frees its place before a start
        open_now += change
        peak = max(peak, open_now)
    return peak


def transitions(parent: Sequence[dict[str, Any]], children: Iterable[Sequence[dict[str, Any]]]) -> dict[str, int]:
    """State transitions of a RunJobs run: its own (the Map's iterations included) and its children's."""
    own = states_entered(parent)
    theirs = sum(states_entered(history) for history in children)
    return {"parent": own, "children": theirs, "total": own + theirs}


def _seconds(event: dict[str, Any]) -> float:
    return float(event["timestamp"].timestamp())


# --------------------------------------------------------------------------- one measurement


def measure(
    mode: str, jobs: int, timeout_s: float = 3600, raw: dict[str, Any] | None = None, per_run: int = MAX_JOBS_PER_RUN
) -> dict[str, Any]:
    """``jobs`` jobs through RunJobs in ``mode``, in one LocalJobsync; what the runs cost and how they ended.

    Past ``per_run`` jobs (RunJobs' limit, unless a test asks for fewer) the runs (``batches``) start
    together and every figure counts all of them; the input and output bytes are the largest run's.
    ``raw``, when given, receives what the figures were counted from: the parents' and the children's
    histories, the invocations, the API requests, and the virtual time the runs started at.
    """
    from harness.demo import MODES as MODE_ENV
    from harness.demo import quiet_interpreter
    from harness.local import LocalJobsync  # moto: only when this measurement runs

    if mode not in MODE_ENV:
        raise ValueError(f"unknown completion mode {mode!r}; known: {sorted(MODE_ENV)}")
    if mode == "callback" and str(NOTIFIER) not in sys.path:  # the notifier is a package of its own
        sys.path.insert(0, str(NOTIFIER))
    quiet_interpreter()
    inputs = [run_jobs_input(len(run), run.start) for run in batches(jobs, per_run)]
    local = LocalJobsync(env={**QUIET, **MODE_ENV[mode]}, execution_events=True)
    with contextlib.redirect_stdout(io.StringIO()), local:
        assert local.sfn and local.api
        origin = local.clock.now()
        local.api.clear_requests()  # the set-up's own requests (the CRD, the notifier's first list) are not the run's
        started = time.perf_counter()
        results = local.run_jobs_together(inputs, timeout_s=timeout_s)
        wall_s = time.perf_counter() - started
        parents = [local.sfn.history(result.execution_arn) for result in results]
        arns = [local.children(result.execution_arn) for result in results]
        children = [[local.sfn.history(arn) for arn in run] for run in arns]
        statuses = Counter(local.sfn.wait(arn)["status"] for run in arns for arn in run)
        invocations_list = list(local.sfn.invocations)
        invocations = Counter(call.function_name.removeprefix("jobsync-") for call in invocations_list)
        held = held_peak((call.at, call.answered) for call in invocations_list)
        time_steps, settle_s = local.sfn.time_steps, local.sfn.wait_settle_seconds
        requests = [r for r in local.api.requests if r.at is not None and r.at >= origin]
    outcomes = [job for result in results for job in _outcomes(result.status, result.output, result.cause)]
    all_children = [history for run in children for history in run]
    if raw is not None:
        raw.update(
            parents=parents, children=all_children, invocations=invocations_list, requests=requests, origin=origin
        )
    each_run = [transitions(parent, run) for parent, run in zip(parents, children, strict=True)]
    counted = {key: sum(t[key] for t in each_run) for key in ("parent", "children", "total")}
    run_status = Counter(result.status for result in results)
    n_invocations = sum(invocations.values())
    return {
        "mode": mode,
        "jobs": jobs,
        "runs": len(results),
        "max_concurrency": inputs[0]["maxConcurrency"],
        "status": next((r.status for r in results if r.status != "SUCCEEDED"), "SUCCEEDED"),
        "run_status": dict(run_status),
        "wall_s": wall_s,
        "virtual_s": max(_seconds(parent[-1]) for parent in parents) - origin,
        "time_steps": time_steps,
        "settle_s": settle_s,
        "lambda_invocations": n_invocations,
        "lambda_invocations_per_job": n_invocations / jobs,
        "lambda_by_function": dict(sorted(invocations.items())),
        "lambda_held_peak": held,
        "api_requests": len(requests),
        "api_requests_per_job": len(requests) / jobs,
        "api_by_verb": dict(sorted(Counter(r.verb or r.method for r in requests).items())),
        "api_peak": peak_rate((r.at for r in requests if r.at is not None), origin),
        "transitions": counted,
        "transitions_per_job": counted["total"] / jobs,
        "history_events": sum(len(h) for h in [*parents, *all_children]),
        "children": len(all_children),
        "child_status": dict(statuses),
        "phases": dict(Counter(str(job.get("phase")) for job in outcomes)),
        "scenarios": dict(Counter(job_plan(i)[0] for i in range(jobs))),
        "input_bytes": max(len(json.dumps(execution_input).encode()) for execution_input in inputs),
        "output_bytes": max(len(json.dumps(r.output).encode()) if r.output is not None else 0 for r in results),
    }


def _outcomes(status: str, output: Any, cause: str | None) -> list[dict[str, Any]]:
    """A run's outcome per job: its output's, or its JobsFailed Cause's; none from a run refused or cut short."""
    if status == "SUCCEEDED":
        return list(output["jobs"])
    try:
        summary = json.loads(cause or "{}")
    except ValueError:
        return []
    return list(summary.get("jobs", [])) if isinstance(summary, dict) else []


def measure_all(
    sizes: Sequence[int] = SIZES,
    modes: Sequence[str] = MODES,
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every (mode, size): the rows of bench/results.json's ``throughput`` key."""
    rows = []
    for mode in modes:
        for jobs in sizes:
            progress(f"throughput: {jobs:,} jobs in {mode} mode")
            row = measure(mode, jobs)
            progress(
                f"  {row['runs']} run{'' if row['runs'] == 1 else 's'}, {row['wall_s']:.1f} s wall, "
                f"{row['virtual_s']:.0f} s virtual, {row['lambda_invocations']} invocations, "
                f"{row['api_requests']} API requests, {row['transitions']['total']} transitions"
            )
            rows.append(row)
    return {"sizes": list(sizes), "modes": list(modes), "rows": rows}


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], int(sys.argv[2])), indent=2, default=str))
