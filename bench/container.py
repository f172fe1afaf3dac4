"""Cold start in the Lambda runtime: each function's first invocation after ``sam local start-lambda`` starts.

    python -m lambda_runtime run -- python -m bench --container      (make bench-container)

``--warm-containers EAGER``: SAM builds each function's image (the base, its emulator, the layer
under /opt) and starts its container before it listens; the first invocation then pays what a
Lambda cold start pays here, the emulator starting the python3.11 runtime (awslambdaric), the
handler's imports from the build artifact and the layer, and the call itself, and the second is
warm. Times are the caller's, at the Invoke API, so SAM's own hop (Flask, then HTTP to the
emulator) is in both. Each function answers its sample event (lambda_runtime/tests) against the
local Kubernetes API and moto, through the bridge relays; the median of ``runs`` fresh servers.
Beside it, the Lambda-like in-process figure of the status handler (bench.lambdas).
"""

from __future__ import annotations

import os
import re
import statistics
from collections.abc import Callable
from typing import Any

#: The emulator's REPORT line: its Duration of the first call includes starting the runtime (its "Init
#: Duration" does not: it is not measured outside Lambda).
REPORTED = re.compile(r"REPORT RequestId: \S+\s+(?:Init Duration: [\d.]+ ms\s+)?Duration: ([\d.]+) ms")
FUNCTIONS = ("evaluate", "submit", "status", "cleanup", "await", "resume")
EVENTS = {
    "evaluate": "evaluate-pytorchjob-succeeded-index5.json",
    "submit": "submit-inline.json",
    "status": "status-running.json",
    "cleanup": "cleanup-failed.json",
    "await": "await-running.json",
    "resume": "resume-job-ended.json",
}


def measure(runs: int = 3, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """First and second invocation of each function, ``runs`` times over; needs a daemon and the image."""
    from lambda_runtime import relay, sam
    from lambda_runtime.daemon import answering
    from lambda_runtime.image import IMAGE
    from lambda_runtime.service import service_error
    from lambda_runtime.tests.stack import stack
    from lambda_runtime.tests.test_sample_events import prepared

    daemon = answering()
    if daemon is None or not sam.built():
        raise RuntimeError("no Docker daemon answers or no sam build: run through python -m lambda_runtime run")
    gateway = relay.gateway(daemon)
    cold: dict[str, list[float]] = {name: [] for name in FUNCTIONS}
    warm: dict[str, list[float]] = {name: [] for name in FUNCTIONS}
    reported: dict[str, list[float]] = {name: [] for name in FUNCTIONS}  # the emulator's Duration, first call
    started: list[float] = []
    load = [os.getloadavg()[0]]
    for run in range(runs):
        progress(f"container cold start: run {run + 1} of {runs}")
        with (
            stack(daemon, gateway) as backing,
            sam.StartLambda(daemon, backing.template, backing.env_vars, warm="EAGER") as server,
        ):
            started.append(server.started_seconds)
            for name in FUNCTIONS:
                for times in (cold, warm):
                    answer = server.invoke(name, prepared(backing.local, EVENTS[name]))
                    log = server.log()
                    if service_error(answer.payload, "bench", log) is not None:
                        raise RuntimeError(f"{name} failed in the container: {answer.payload}")
                    times[name].append(answer.seconds * 1000)
                    if times is cold:
                        reported[name].append(float(REPORTED.findall(log)[-1]))
    load.append(os.getloadavg()[0])
    return {
        "runs": runs,
        "load_average": [round(v, 1) for v in load],  # 1-minute load before and after: the machine is shared
        "image": IMAGE,
        "warm_containers": "EAGER",
        "start_lambda_ready_s": statistics.median(started),
        "functions": {
            name: {
                "event": EVENTS[name],
                "first_invoke_ms": statistics.median(cold[name]),
                "second_invoke_ms": statistics.median(warm[name]),
                "first_invoke_emulator_duration_ms": statistics.median(reported[name]),
                "first_invoke_samples_ms": [round(v, 1) for v in cold[name]],
            }
            for name in FUNCTIONS
        },
    }


def section(results: dict[str, Any]) -> list[str]:
    """docs/performance.md's lines for it, the in-process Lambda-like figure beside."""
    measured = results.get("container_cold_start")
    lines = ["## Cold start in the Lambda runtime (sam local)", ""]
    if not measured:
        return [*lines, "Not measured yet: `make bench-container` (needs Docker; see lambda_runtime/).", ""]
    in_process = ((results.get("lambda") or {}).get("cold_starts") or {}).get("url") or {}
    lines += [
        f"Each function's first invocation after `sam local start-lambda --warm-containers "
        f"{measured['warm_containers']}` started its container, and its second, at the Invoke API (median of "
        f"{measured['runs']} fresh servers; a server was ready in {measured['start_lambda_ready_s']:.1f} s). "
        "The container runs the `sam build` artifact on the image `lambda_runtime/` builds (Debian bookworm, "
        "python3.11, awslambdaric, the Runtime Interface Emulator) with 256 MB as the template says; the first "
        "invocation includes starting the runtime and the handler's imports. Beside it, the Lambda-like "
        "in-process figure (a fresh process with Lambda's environment: import + first invocation). "
        f"Measured with a 1-minute load average of {' then '.join(str(v) for v in measured.get('load_average', []))} "
        f"on {(measured.get('machine') or {}).get('cpu_count', '?')} cores: other work shared the machine.",
        "",
        "| function | sample event | first invocation | of which in the container (emulator's Duration) | "
        "second invocation |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, row in measured["functions"].items():
        inside = row.get("first_invoke_emulator_duration_ms")
        lines.append(
            f"| {name} | `{row['event']}` | {row['first_invoke_ms']:.0f} ms | "
            f"{'-' if inside is None else f'{inside:.0f} ms'} | {row['second_invoke_ms']:.0f} ms |"
        )
    if in_process:
        lines += [
            "",
            f"In-process, Lambda-like (status handler, url mode): {in_process['cold_start_ms']:.0f} ms "
            f"({in_process['import_ms']:.0f} ms import + {in_process['first_invocation_ms']:.0f} ms first "
            "invocation).",
        ]
    return [*lines, ""]
