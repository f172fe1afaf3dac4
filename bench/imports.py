"""A handler's cold import, timed in fresh processes: bare, as Lambda imports it, and by package."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.support.kube import NAMESPACE
from tests.support.lambdas import lambda_like_env

ROOT = Path(__file__).resolve().parent.parent
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


# --------------------------------------------------------------------------- API requests per poll


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


def subprocess_env() -> dict[str, str]:
    skip = ("JOBSYNC_", "POWERTOOLS_", "PYTHONDONTWRITEBYTECODE")  # bytecode caches stay on, as in a Lambda package
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    return {**env, **LAMBDA_ENV, "PYTHONPATH": "layers/jobsync"}


def import_times(runs_each: int) -> dict[str, Any]:
    """Import time of the status handler against a bare ``import kubernetes.client``, fresh processes, interleaved."""
    env = subprocess_env()
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


def _import_breakdown(env: dict[str, str], top: int = 6, runs: int = 1) -> dict[str, float]:
    """What the status handler imports on top of the bare client: milliseconds by package, largest first.

    With ``runs`` > 1, each package's median over that many runs of each.
    """
    status = [_import_self_ms(IMPORT_STATUS, env) for _ in range(runs)]
    bare = [_import_self_ms(IMPORT_BARE, env) for _ in range(runs)]
    names = set().union(*status)
    extra = {
        name: statistics.median(s.get(name, 0.0) for s in status) - statistics.median(b.get(name, 0.0) for b in bare)
        for name in names
    }
    ranked = sorted(extra.items(), key=lambda item: -item[1])[:top]
    return {name: round(ms, 1) for name, ms in ranked}


# --------------------------------------------------------------------------- cold import and cold start, Lambda-like

COLDSTART = ROOT / "bench" / "coldstart.py"
STATUS_DIR = ROOT / "functions" / "status"
EKS_CLUSTER = "training"
# The status function's settings as template.yaml's Globals set them (EKS mode, the stack's table).
DEPLOYED_SETTINGS = {
    "JOBSYNC_CLUSTER_MODE": "eks",
    "JOBSYNC_CLUSTER_NAME": EKS_CLUSTER,
    "JOBSYNC_NAMESPACE": NAMESPACE,
    "JOBSYNC_ALLOWED_KINDS": "PyTorchJob",
    "JOBSYNC_COMPLETION_MODE": "poll",
    "JOBSYNC_TABLE_NAME": "jobsync-table",
}


def coldstart(env: dict[str, str], *args: str) -> dict[str, Any]:
    """One fresh process of bench/coldstart.py, from the function's directory as Lambda runs it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "out.json")
        subprocess.run(
            [sys.executable, str(COLDSTART), *args, str(out)],
            cwd=STATUS_DIR,
            env=env,
            stdout=subprocess.DEVNULL,  # the handler's log and EMF lines
            stderr=subprocess.PIPE,
            text=True,
            check=True,
        )
        result: dict[str, Any] = json.loads(out.read_text())
    return result


def lambda_like_imports(runs_each: int, memory_mb: int = 256) -> dict[str, Any]:
    """Cold import of the status handler against a bare ``import kubernetes.client``, Lambda-like, interleaved.

    Three fresh processes a round, in turn: the bare client, the handler with
    tracing as deployed (Active), the handler with tracing disabled.
    """
    kinds = {
        "bare": (
            lambda_like_env("status", tracing=True, settings=DEPLOYED_SETTINGS, memory_mb=memory_mb),
            "kubernetes.client",
        ),
        "tracing_active": (
            lambda_like_env("status", tracing=True, settings=DEPLOYED_SETTINGS, memory_mb=memory_mb),
            "app",
        ),
        "tracing_disabled": (
            lambda_like_env("status", tracing=False, settings=DEPLOYED_SETTINGS, memory_mb=memory_mb),
            "app",
        ),
    }
    for env, module in kinds.values():  # warm-up, not counted: bytecode caches and the page cache
        coldstart(env, "import", module)
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in kinds}
    for _ in range(runs_each):
        for name, (env, module) in kinds.items():
            samples[name].append(coldstart(env, "import", module))

    def median(name: str, key: str) -> float:
        return statistics.median(s[key] for s in samples[name])

    out: dict[str, Any] = {"runs_each": runs_each}
    for name in kinds:
        out[f"{name}_ms"] = median(name, "import_ms")
        out[f"{name}_cpu_ms"] = median(name, "import_cpu_ms")
    # -X importtime in the deployed environment (tracing Active); IMPORT_STATUS's sys.path entry is already there.
    out["import_extra_ms_by_package"] = _import_breakdown(kinds["tracing_active"][0], runs=3)
    for name in ("tracing_active", "tracing_disabled"):
        out[f"ratio_{name}"] = out[f"{name}_ms"] / out["bare_ms"]
        out[f"ratio_{name}_cpu"] = out[f"{name}_cpu_ms"] / out["bare_cpu_ms"]
        out[f"loaded_after_import_{name}"] = samples[name][-1]["loaded_after_import"]
    return out


# --------------------------------------------------------------------------- memory and warm latency
