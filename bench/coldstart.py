"""Run as the Lambda runtime runs a handler: a fresh process, the function's directory first on sys.path.

    python bench/coldstart.py import MODULE OUT_JSON             (time ``import MODULE`` only)
    python bench/coldstart.py invoke EVENT_JSON CALLS OUT_JSON   (import app, one call, CALLS warm calls)

The caller (bench.lambdas) gives the environment Lambda sets
(tests.support.lambdas.lambda_like_env) and the function's directory as the
working directory. Nothing of the benchmark, the harness or the tests is
imported before the handler: the clock starts at the process's first line that
is not the standard library's ``os``, ``sys`` or ``time``. Wall and CPU time are
both recorded; CPU time is the steadier on a shared machine.
"""

import os
import sys
import time

# Lambda's bootstrap puts LAMBDA_TASK_ROOT (/var/task) first; a script's own folder would be.
sys.path[0] = os.environ["LAMBDA_TASK_ROOT"]
WATCHED = ("boto3", "botocore.client", "aws_xray_sdk.core")


def _loaded() -> list[str]:
    return [name for name in WATCHED if name in sys.modules]


def _import(module: str) -> dict[str, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    __import__(module)
    return {
        "import_ms": (time.perf_counter() - wall) * 1000,
        "import_cpu_ms": (time.process_time() - cpu) * 1000,
        "loaded_after_import": _loaded(),
    }


class _Context:
    """What Powertools reads of Lambda's context object."""

    function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "jobsync-status")
    function_version = "$LATEST"
    invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
    memory_limit_in_mb = int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"))
    aws_request_id = "00000000-0000-0000-0000-000000000000"
    log_group_name = f"/aws/lambda/{function_name}"
    log_stream_name = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def _invoke(event_path: str, calls: int) -> dict[str, object]:
    out = _import("app")
    import json
    import statistics

    import app

    event = json.loads(open(event_path).read())  # noqa: SIM115 - one read, the process ends soon
    context = _Context()
    wall, cpu = time.perf_counter(), time.process_time()
    first = app.lambda_handler(event, context)
    out |= {
        "first_invocation_ms": (time.perf_counter() - wall) * 1000,
        "first_invocation_cpu_ms": (time.process_time() - cpu) * 1000,
        "first_phase": first["phase"],
        "loaded_after_first_call": _loaded(),
    }
    warm: list[float] = []
    for i in range(calls + 3):  # the first three settle pools and caches
        wall = time.perf_counter()
        app.lambda_handler(event, context)
        if i >= 3:
            warm.append((time.perf_counter() - wall) * 1000)
    warm.sort()
    out |= {
        "calls": calls,
        "warm_median_ms": statistics.median(warm) if warm else None,
        "warm_p95_ms": warm[max(0, -(-95 * len(warm) // 100) - 1)] if warm else None,
    }
    return out


def main(argv: list[str]) -> None:
    if argv[0] == "import":
        result, out_path = _import(argv[1]), argv[2]
    else:
        result, out_path = _invoke(argv[1], int(argv[2])), argv[3]
    import json

    with open(out_path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1:])
