"""The Lambdas themselves: cold import, cold start, memory, Kubernetes API requests per poll, warm latency.

Everything talks to the in-process Kubernetes API (harness.kubeapi) with the
operator simulator moving the job, through the real ``kubernetes`` client. The
cold import and cold start are measured in fresh processes with the
environment the Lambda runtime sets (tests.support.lambdas.lambda_like_env);
EKS mode's cold start goes to moto's EKS over HTTP for DescribeCluster, signs
its STS token, and GETs over HTTPS from a local API with its own CA.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.imports import (
    DEPLOYED_SETTINGS,
    EKS_CLUSTER,
    coldstart,
    import_times,
    lambda_like_imports,
    subprocess_env,
)
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
from tests.support.lambdas import lambda_like_env, load_event

ROOT = Path(__file__).resolve().parent.parent
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:bench-{}"


class LocalCluster:
    """A KubeAPI with the PyTorchJob CRD and the operator simulator, on a clock the caller moves.

    With ``tls`` the API serves HTTPS with its own CA (``ca_file``) and takes
    only EKS-style bearer tokens, as EKS does.
    """

    def __init__(self, clock: VirtualClock, tls: bool = False) -> None:
        self.clock = clock
        self.api = start_kube_api(clock=clock.now, tls=tls)
        self.sim = OperatorSim(self.api, clock.now)
        clock.on_advance(lambda _now: self.sim.step())
        self._tmp = tempfile.TemporaryDirectory(prefix="jobsync-bench-")
        self.ca_file: str | None = None
        if tls:
            from kubernetes import client as k8s

            from jobsync.cluster.eks_token import TOKEN_PREFIX

            assert self.api.ca_pem is not None
            self.ca_file = str(Path(self._tmp.name, "ca.pem"))
            Path(self.ca_file).write_bytes(self.api.ca_pem)
            self.api.accepted_tokens = lambda token: token.startswith(TOKEN_PREFIX)
            config = k8s.Configuration()
            config.host, config.ssl_ca_cert = self.api.url, self.ca_file
            config.api_key, config.api_key_prefix = (
                {"authorization": f"{TOKEN_PREFIX}bench"},
                {"authorization": "Bearer"},
            )
            self.jobs = KubeJobs(k8s.ApiClient(config))
        else:
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
        self._tmp.cleanup()


@contextlib.contextmanager
def local_cluster(clock: VirtualClock, jobsync_time: bool, tls: bool = False) -> Iterator[LocalCluster]:
    """A LocalCluster; with ``jobsync_time`` jobsync reads ``clock`` too (virtual time for everyone)."""
    if jobsync_time:
        jobsync_clock.set_clock(clock.now)
    local = None
    try:
        local = LocalCluster(clock, tls=tls)
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


# ----------------------------------------------------- cold start, Lambda-like (the imports: bench.imports)


class _MotoEksHandler(BaseHTTPRequestHandler):
    """moto's EKS over HTTP: each request, as botocore sent it, answered by moto's EKS backend."""

    def _answer(self) -> None:
        from botocore.awsrequest import AWSPreparedRequest
        from moto.core.models import botocore_stubber

        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        region = self.server.region  # type: ignore[attr-defined]
        request = AWSPreparedRequest(
            method=self.command,
            url=f"https://eks.{region}.amazonaws.com{self.path}",
            headers=dict(self.headers.items()),
            body=body or None,
            stream_output=False,
        )
        answer = botocore_stubber.process_request(request)
        status, headers, payload = answer if answer is not None else (404, {}, b"")
        data = payload.encode() if isinstance(payload, str) else payload
        self.send_response(int(status))
        for name, value in (headers or {}).items():
            if name.lower() not in {"content-length", "server", "date"}:
                self.send_header(name, str(value))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def moto_eks(local: LocalCluster, region: str = "us-east-1") -> Iterator[str]:
    """An EKS endpoint (for AWS_ENDPOINT_URL_EKS) whose cluster ``training`` is ``local``'s HTTPS API."""
    import boto3
    from moto import mock_aws
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.eks.models import eks_backends

    assert local.api.ca_pem is not None
    with mock_aws():
        boto3.client("eks", region_name=region).create_cluster(
            name=EKS_CLUSTER,
            roleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/eks",
            resourcesVpcConfig={"subnetIds": []},
        )
        record = eks_backends[DEFAULT_ACCOUNT_ID][region].clusters[EKS_CLUSTER]
        record.endpoint = local.api.url
        record.certificate_authority = {"data": base64.b64encode(local.api.ca_pem).decode()}
        server = ThreadingHTTPServer(("127.0.0.1", 0), _MotoEksHandler)
        server.region = region  # type: ignore[attr-defined]
        thread = threading.Thread(target=server.serve_forever, name="moto-eks", daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()


def cold_starts(runs: int, calls: int, memory_mb: int = 256) -> dict[str, Any]:
    """Cold start (import + first invocation) and warm latency of the status handler, per cluster mode.

    Tracing as deployed. ``url``: plain HTTP to the local API, no AWS call.
    ``eks``: DescribeCluster over HTTP to moto's EKS, an STS-presigned token,
    the client with the cluster's CA, then GETs over HTTPS with the token; the
    API's requests are counted to check every poll went there.
    """
    out: dict[str, Any] = {"runs": runs, "calls": calls}
    for mode in ("url", "eks"):
        sim_clock = VirtualClock(start=jobsync_clock.wall())
        with (
            local_cluster(sim_clock, jobsync_time=False, tls=mode == "eks") as local,
            tempfile.TemporaryDirectory() as tmp,
        ):
            state = local.submit("success", pending_s=1, run_s=30 * 86_400)
            sim_clock.advance(5)
            state, _ = local.poll(state)  # the loop state Status receives for a RUNNING job
            event = Path(tmp, "event.json")
            event.write_text(json.dumps(state.model_dump(exclude_none=True)))
            with contextlib.ExitStack() as stack:
                settings = dict(DEPLOYED_SETTINGS)
                if mode == "eks":
                    settings["AWS_ENDPOINT_URL_EKS"] = stack.enter_context(moto_eks(local))
                else:
                    settings |= {"JOBSYNC_CLUSTER_MODE": "url", "JOBSYNC_KUBE_URL": local.api.url}
                env = lambda_like_env("status", tracing=True, settings=settings, memory_mb=memory_mb)
                env["PYTHONPATH"] += os.pathsep + str(ROOT)  # bench/coldstart.py's own imports: none before the handler
                before = len(local.api.requests)
                samples = [coldstart(env, "invoke", str(event), str(calls)) for _ in range(runs)]
                made = len(local.api.requests) - before
        if any(s["first_phase"] != "RUNNING" for s in samples):
            raise RuntimeError(f"{mode} mode: the first poll saw {[s['first_phase'] for s in samples]}, not RUNNING")
        if made < runs * (calls + 4):
            raise RuntimeError(f"{mode} mode: the API saw {made} requests, fewer than one per poll")

        def median(key: str, of: list[dict[str, Any]] = samples) -> float:
            return statistics.median(s[key] for s in of)

        out[mode] = {
            "import_ms": median("import_ms"),
            "first_invocation_ms": median("first_invocation_ms"),
            "first_invocation_cpu_ms": median("first_invocation_cpu_ms"),
            "cold_start_ms": statistics.median(s["import_ms"] + s["first_invocation_ms"] for s in samples),
            "warm_median_ms": median("warm_median_ms"),
            "warm_p95_ms": median("warm_p95_ms"),
            "loaded_after_import": samples[-1]["loaded_after_import"],
            "loaded_after_first_call": samples[-1]["loaded_after_first_call"],
        }
    return out


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
        env = {**subprocess_env(), "JOBSYNC_KUBE_URL": local.api.url, "PYTHONPATH": "layers/jobsync:."}
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
    like: dict[str, Any] = {}
    if import_runs:
        progress(f"lambda: import times outside Lambda ({import_runs} runs each)")
        imports = import_times(import_runs)
        progress(f"lambda: import times, Lambda-like environment ({import_runs} runs each)")
        like = lambda_like_imports(import_runs)
    cold_runs, cold_calls = max(1, (import_runs + 1) // 2), max(5, latency_calls // 4)
    progress(f"lambda: cold start per cluster mode, Lambda-like ({cold_runs} processes each)")
    cold = cold_starts(cold_runs, cold_calls)
    eks, url = cold["eks"], cold["url"]
    return {
        **imports,
        # Lambda-like (tests.support.lambdas.lambda_like_env), tracing as deployed (Active) unless named.
        "cold_import_lambda_like_ms": like.get("tracing_active_ms", eks["import_ms"]),
        "cold_import_lambda_like_tracing_disabled_ms": like.get("tracing_disabled_ms"),
        "bare_kubernetes_client_lambda_like_ms": like.get("bare_ms"),
        "ratio_lambda_like": like.get("ratio_tracing_active"),
        "ratio_lambda_like_tracing_disabled": like.get("ratio_tracing_disabled"),
        "ratio_lambda_like_cpu": like.get("ratio_tracing_active_cpu"),
        "ratio_lambda_like_tracing_disabled_cpu": like.get("ratio_tracing_disabled_cpu"),
        "lambda_like_imports": like,
        "first_invocation_url_ms": url["first_invocation_ms"],
        "first_invocation_eks_ms": eks["first_invocation_ms"],
        "cold_start_url_ms": url["cold_start_ms"],
        "cold_start_eks_ms": eks["cold_start_ms"],
        "warm_eks_https_ms": eks["warm_median_ms"],
        "warm_eks_https_p95_ms": eks["warm_p95_ms"],
        "cold_starts": cold,
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
