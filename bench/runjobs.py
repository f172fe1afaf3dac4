"""RunJobs at its largest: one run of 1,000 jobs, in the local run (opt-in: minutes of wall time).

    PYTHONPATH=layers/jobsync:notifier:. python -m bench.runjobs [--jobs N] [--no-write]

The jobs are the throughput benchmark's (``bench.throughput.job_input``: 10 to 60 virtual minutes
each), put under the runs bucket's ``inputs/`` and named by ``jobsFrom``, as a caller with more jobs
than fit an execution's 256 KB input does. ``harness.local.LocalJobsync`` runs the real RunJobs
(its Distributed Map, one Map Run child per job, each starting its RunJob execution), the real
handlers, the local Kubernetes API and the operator simulator, on virtual time, each Wait's end rounded
up to the next ``WAIT_QUANTUM_S`` of it (``LocalStepFunctions.wait_quantum_seconds``): a thousand
executions with jittered waits would otherwise step the shared clock once per Wait, at a settle of
wall time each. A look is then up to that much later than it asked, so ``virtual_s`` is an upper
bound on the run's length by as much per look. Recorded under
``runjobs_<N>`` in bench/results.json (only that key): the run's status, its jobs' outcomes, its
output's size against the payload limit, wall and virtual seconds, and the command that measured it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from collections import Counter
from typing import Any

from bench.throughput import job_input
from tests.support.lambdas import QUIET

PAYLOAD_LIMIT = 256 * 1024  # Step Functions: a state's input or output, in UTF-8 bytes
INPUT_KEY = "inputs/bench-runjobs.json"
WAIT_QUANTUM_S = 10.0


def measure(jobs: int, timeout_s: float = 7200) -> dict[str, Any]:
    """One RunJobs run of ``jobs`` jobs given by ``jobsFrom``; what it did."""
    import boto3

    from harness.demo import quiet_interpreter
    from harness.local import RUNS_BUCKET, LocalJobsync

    quiet_interpreter()
    started = time.perf_counter()
    with LocalJobsync(env=QUIET, execution_events=True) as local, contextlib.redirect_stdout(io.StringIO()):
        assert local.sfn
        local.sfn.wait_quantum_seconds = WAIT_QUANTUM_S
        body = json.dumps([job_input(i) for i in range(jobs)]).encode()
        boto3.client("s3").put_object(Bucket=RUNS_BUCKET, Key=INPUT_KEY, Body=body)
        result = local.run_jobs({"jobsFrom": f"s3://{RUNS_BUCKET}/{INPUT_KEY}"}, timeout_s=timeout_s)
        description = local.sfn.wait(result.execution_arn)
        children = [local.sfn.wait(child)["status"] for child in local.children(result.execution_arn)]
        clock_steps = local.sfn.time_steps
    wall_s = time.perf_counter() - started
    output = result.output if isinstance(result.output, dict) else {}
    output_bytes = len(json.dumps(output, separators=(",", ":"), ensure_ascii=False).encode())
    return {
        "jobs": jobs,
        "jobs_from_bytes": len(body),
        "status": result.status,
        "error": result.error,
        "summary": output.get("summary"),
        "outcomes_inline": "jobs" in output,
        "output_bytes": output_bytes,
        "output_within_payload_limit": output_bytes <= PAYLOAD_LIMIT,
        "child_status": dict(Counter(children)),
        "virtual_s": round((description["stopDate"] - description["startDate"]).total_seconds(), 1),
        "wall_s": round(wall_s, 1),
        "wait_quantum_s": WAIT_QUANTUM_S,
        "clock_steps": clock_steps,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.runjobs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs in the run (default 1000)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave bench/results.json alone")
    args = parser.parse_args(argv)
    if not 1 <= args.jobs <= 1000:
        parser.error(f"--jobs must be 1 to 1000 (what one run takes), got {args.jobs}")
    figures = measure(args.jobs)
    figures["command"] = "make bench-runjobs" + (f" RUNJOBS_JOBS={args.jobs}" if args.jobs != 1000 else "")
    print(json.dumps(figures, indent=2))
    if not args.no_write:
        from bench.__main__ import RESULTS, read_results

        results = read_results(RESULTS)
        results[f"runjobs_{args.jobs}"] = figures
        RESULTS.write_text(json.dumps(results, indent=2, default=str) + "\n")
    return 0 if figures["status"] == "SUCCEEDED" else 1


if __name__ == "__main__":
    sys.exit(main())
