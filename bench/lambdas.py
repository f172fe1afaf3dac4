"""The Lambdas themselves: cold import, memory, Kubernetes API requests per poll, warm latency.

Everything talks to the in-process Kubernetes API (harness.kubeapi) with the
operator simulator moving the job, through the real ``kubernetes`` client.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.clock import VirtualClock
from harness.operator_sim import OperatorSim
from jobsync import clock as jobsync_clock
from jobsync import cluster as jobsync_cluster
from jobsync.cluster.connection import ClusterSettings, get_api_client
from jobsync.cluster.jobs import KubeJobs
from jobsync.run.inputs import LoopState, SubmitRequest
from jobsync.run.poll import poll
from jobsync.run.submit import submit
from jobsync.settings import Settings
from tests.support.kube import NAMESPACE, start_kube_api
from tests.support.lambdas import load_event

ROOT = Path(__file__).resolve().parent.parent
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:bench-{}"
LAMBDA_ENV = {
    "POWERTOOLS_SERVICE_NAME": "jobsync",
    "POWERTOOLS_METRICS_NAMESPACE": "jobsync",
    "POWERTOOLS_TRACE_DISABLED": "true",  # no X-Ray daemon here
    "POWERTOOLS_LOG_LEVEL": "INFO",  # as template.yaml sets it: the log line is part of a poll
    "AWS_DEFAULT_REGION": "us-east-1",
    "JOBSYNC_NAMESPACE": NAMESPACE,
    "JOBSYNC_ALLOWED_KINDS": "PyTorchJob",
    "JOBSYNC_CLUSTER_MODE": "url",
}


class LocalCluster:
    """A KubeAPI with the PyTorchJob CRD and the operator simulator, on a clock the caller moves."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.api = start_kube_api(clock=clock.now)
        self.sim = OperatorSim(self.api, clock.now)
        clock.on_advance(lambda _now: self.sim.step())
        self.jobs = KubeJobs(get_api_client(ClusterSettings(mode="url", url=self.api.url)))
        self.settings = Settings()
        self._count = 0

    def submit(self, scenario: str, **timings: float) -> LoopState:
        """Create a job through the real submit path; the simulator plays ``scenario`` for it."""
        self._count += 1
        request = SubmitRequest(execution=EXECUTION.format(self._count), job=load_event("run-job-input.json")["job"])
        state = submit(request, self.jobs, self.settings, lambda uri: "")
        self.sim.plan(NAMESPACE, state.job.name, scenario, **timings)
        self.sim.step()
        return state

    def poll(self, state: LoopState) -> tuple[LoopState, list[str]]:
        """One status poll, and the API requests it made ("GET pytorchjobs", "LIST pods", ...)."""
        before = len(self.api.requests)
        new = poll(state, self.jobs, self.settings)
        made = [f"{r.verb.upper() if r.verb else r.method} {r.resource}" for r in self.api.requests[before:]]
        return new, made

    def close(self) -> None:
        self.sim.stop()
        self.api.stop()


@contextlib.contextmanager
def local_cluster(clock: VirtualClock, jobsync_time: bool) -> Iterator[LocalCluster]:
    """A LocalCluster; with ``jobsync_time`` jobsync reads ``clock`` too (virtual time for everyone)."""
    if jobsync_time:
        jobsync_clock.set_clock(clock.now)
    local = None
    try:
        local = LocalCluster(clock)
        yield local
    finally:
        if local:
            local.close()
        jobsync_clock.set_clock(None)
        jobsync_cluster.reset_cache()


# --------------------------------------------------------------------------- API requests per poll


@dataclass(frozen=True)
class Scenario:
    name: str
    simulator: str
    timings: dict[str, float]
    advance_s: float  # virtual time between submission and the measured poll
    expect_phase: str


SCENARIOS = (
    Scenario("running", "success", {"pending_s": 60, "run_s": 6 * 3600}, 600, "RUNNING"),
    # Pending past diagnose_after_seconds (120 s), pods in ErrImagePull/ImagePullBackOff, not yet stuck_grace long.
    Scenario("pending_with_diagnostics", "image-pull-backoff", {"backoff_s": 20}, 300, "PENDING"),
    Scenario("failed_with_logs", "failure", {"pending_s": 60, "run_s": 600}, 900, "FAILED"),
    Scenario("succeeded", "success", {"pending_s": 60, "run_s": 600}, 900, "SUCCEEDED"),
)


def api_requests_per_poll(running_polls: int = 5) -> dict[str, Any]:
    """Requests each kind of poll makes, counted at the local API; the RUNNING case over several polls."""
    out: dict[str, Any] = {}
    with local_cluster(VirtualClock(), jobsync_time=True) as local:
        for scenario in SCENARIOS:
            state = local.submit(scenario.simulator, **scenario.timings)
            local.clock.advance(scenario.advance_s)
            state, made = local.poll(state)
            if state.phase != scenario.expect_phase:
                raise RuntimeError(f"{scenario.name}: expected {scenario.expect_phase}, the poll saw {state.phase}")
            counts = [len(made)]
            for _ in range(running_polls - 1 if scenario.name == "running" else 0):
                local.clock.advance(state.waitSeconds)
                state, more = local.poll(state)
                counts.append(len(more))
            out[scenario.name] = {
                "phase": state.phase,
                "reason": state.reason,
                "requests": made,
                "requests_per_poll": statistics.fmean(counts),
                "polls": len(counts),
            }
    return out


# --------------------------------------------------------------------------- cold import


def _python(code: str, env: dict[str, str], extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *extra, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )


IMPORT_BARE = "import time; t = time.perf_counter(); import kubernetes.client; print(time.perf_counter() - t)"
IMPORT_STATUS = (
    "import sys, time; sys.path.insert(0, 'functions/status'); "
    "t = time.perf_counter(); import app; print(time.perf_counter() - t)"
)


def _subprocess_env() -> dict[str, str]:
    skip = ("JOBSYNC_", "POWERTOOLS_", "PYTHONDONTWRITEBYTECODE")  # bytecode caches stay on, as in a Lambda package
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    return {**env, **LAMBDA_ENV, "PYTHONPATH": "layers/jobsync"}


def import_times(runs_each: int) -> dict[str, Any]:
    """Import time of the status handler against a bare ``import kubernetes.client``, fresh processes, interleaved."""
    env = _subprocess_env()
    # Warm-up, not counted: bytecode caches and the page cache.
    _python(IMPORT_BARE, env)
    _python(IMPORT_STATUS, env)
    bare, status = [], []
    for _ in range(runs_each):
        bare.append(float(_python(IMPORT_BARE, env).stdout))
        status.append(float(_python(IMPORT_STATUS, env).stdout))
    bare_ms, status_ms = statistics.median(bare) * 1000, statistics.median(status) * 1000
    return {
        "runs_each": runs_each,
        "status_handler_import_ms": status_ms,
        "bare_kubernetes_client_import_ms": bare_ms,
        "import_ratio": status_ms / bare_ms,
        "import_extra_ms_by_package": _import_breakdown(env),
    }


def _import_self_ms(code: str, env: dict[str, str]) -> dict[str, float]:
    """Self time of every module ``python -X importtime`` lists, summed by top-level package."""
    report = _python(code, env, ("-X", "importtime")).stderr
    totals: dict[str, float] = {}
    for line in report.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if not line.startswith("import time:") or len(fields) != 3 or not fields[0].strip().isdigit():
            continue  # the header, or anything else on stderr
        package = fields[2].strip().split(".")[0]
        totals[package] = totals.get(package, 0.0) + int(fields[0]) / 1000
    return totals


def _import_breakdown(env: dict[str, str], top: int = 6) -> dict[str, float]:
    """What the status handler imports on top of the bare client: milliseconds by package, largest first."""
    status, bare = _import_self_ms(IMPORT_STATUS, env), _import_self_ms(IMPORT_BARE, env)
    extra = {name: ms - bare.get(name, 0.0) for name, ms in status.items()}
    ranked = sorted(extra.items(), key=lambda item: -item[1])[:top]
    return {name: round(ms, 1) for name, ms in ranked}


# --------------------------------------------------------------------------- memory and warm latency


def handler_probe(calls: int) -> dict[str, Any]:
    """Peak RSS of one invocation and the warm latency of ``calls`` more, in a fresh process (bench.probe).

    The job is RUNNING in a KubeAPI served from this process; jobsync in the
    probe reads the wall clock, so the simulator runs on a clock of its own.
    """
    sim_clock = VirtualClock(start=jobsync_clock.wall())
    with local_cluster(sim_clock, jobsync_time=False) as local, tempfile.TemporaryDirectory() as tmp:
        state = local.submit("success", pending_s=1, run_s=30 * 86_400)
        sim_clock.advance(5)
        state, _ = local.poll(state)  # the loop state Status receives for a RUNNING job
        event, out = Path(tmp, "event.json"), Path(tmp, "out.json")
        event.write_text(json.dumps(state.model_dump(exclude_none=True)))
        env = {**_subprocess_env(), "JOBSYNC_KUBE_URL": local.api.url, "PYTHONPATH": "layers/jobsync:."}
        subprocess.run(
            [sys.executable, "-m", "bench.probe", str(event), str(calls), str(out)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,  # the handler's log lines
            check=True,
        )
        result = json.loads(out.read_text())
    result["latency_ratio"] = result["handler"]["median_ms"] / result["bare_get"]["median_ms"]
    return result


def measure(import_runs: int, latency_calls: int, progress: Callable[[str], None] = lambda _m: None) -> dict[str, Any]:
    progress("lambda: API requests per poll")
    requests = api_requests_per_poll()
    progress(f"lambda: handler memory and latency ({latency_calls} calls)")
    probe = handler_probe(latency_calls)
    imports: dict[str, Any] = {"import_ratio": None, "runs_each": 0}
    if import_runs:
        progress(f"lambda: import times ({import_runs} runs each)")
        imports = import_times(import_runs)
    return {
        **imports,
        "api_requests_per_running_poll": requests["running"]["requests_per_poll"],
        "api_requests_per_poll": requests,
        "peak_rss_mb_one_invocation": probe["peak_rss_mb"],
        "first_invocation_ms": probe["first_invocation_ms"],
        "handler_median_ms": probe["handler"]["median_ms"],
        "handler_p95_ms": probe["handler"]["p95_ms"],
        "bare_get_median_ms": probe["bare_get"]["median_ms"],
        "bare_get_p95_ms": probe["bare_get"]["p95_ms"],
        "latency_ratio": probe["latency_ratio"],
        "latency_calls": probe["calls"],
    }
