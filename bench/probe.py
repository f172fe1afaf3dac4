"""Run in a fresh process: the status handler's first invocation and its warm per-poll latency.

    python -m bench.probe EVENT_JSON CALLS OUT_JSON      (env: JOBSYNC_KUBE_URL and the Lambda's settings)

Imports the handler as Lambda does (functions/status/app.py as ``app``),
invokes it once and reads the process's peak RSS, then times ``CALLS``
invocations interleaved with as many bare ``CustomObjectsApi`` GETs of the same
job. Its stdout takes the handler's log lines; the numbers go to OUT_JSON.
Imports nothing of the benchmark or the harness, so the RSS is the handler's
(the Lambda context is tests/support's, a plain dataclass).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.lambdas import FakeLambdaContext

ROOT = Path(__file__).resolve().parent.parent


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p95_ms": ordered[max(0, -(-95 * len(ordered) // 100) - 1)] * 1000,
    }


def main(argv: list[str]) -> None:
    event_path, calls, out_path = argv[0], int(argv[1]), argv[2]
    event: dict[str, Any] = json.loads(Path(event_path).read_text())
    sys.path.insert(0, str(ROOT / "functions" / "status"))
    import app  # the handler module, as Lambda imports it

    context = FakeLambdaContext(function_name="jobsync-status", log_stream_name="bench")
    started = time.perf_counter()
    first = app.lambda_handler(event, context)
    first_s = time.perf_counter() - started
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux

    from kubernetes import client as k8s

    config = k8s.Configuration()
    config.host = os.environ["JOBSYNC_KUBE_URL"]
    bare = k8s.CustomObjectsApi(k8s.ApiClient(config))
    job = event["job"]
    group, version = job["apiVersion"].split("/")

    def get() -> None:
        bare.get_namespaced_custom_object(group, version, job["namespace"], "pytorchjobs", job["name"])

    handler_s: list[float] = []
    bare_s: list[float] = []
    for i in range(calls + 5):  # the first five of each warm connection pools and caches
        started = time.perf_counter()
        app.lambda_handler(event, context)
        handler = time.perf_counter() - started
        started = time.perf_counter()
        get()
        plain = time.perf_counter() - started
        if i >= 5:
            handler_s.append(handler)
            bare_s.append(plain)

    Path(out_path).write_text(
        json.dumps(
            {
                "first_phase": first["phase"],
                "first_invocation_ms": first_s * 1000,
                "peak_rss_mb": rss_kb / 1024,
                "calls": calls,
                "handler": _ms(handler_s),
                "bare_get": _ms(bare_s),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
