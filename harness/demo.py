"""`make demo`: one jobsync execution, end to end, on this machine.

    python -m harness.demo [--scenario success|failure|restarting|image-pull-backoff|timeout|operator-down]
                           [--input events/run-job-input.json] [--kubeconfig PATH]

Prints one line per poll (virtual time since submission, phase, reason, next
wait) and, last, one JSON object: the execution's status, error, cause,
output, and the jobs left in the cluster. Exits 0 only when the execution
succeeded.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from harness.local import LocalJobsync, RunResult

# Each scenario: the simulator's timeline and, where the story needs it, settings.
SCENARIOS: dict[str, dict[str, Any]] = {
    "success": {"sim": "success", "timings": {"pending_s": 90, "run_s": 2 * 3600}},
    "failure": {"sim": "failure", "timings": {"pending_s": 90, "run_s": 1200}},
    "restarting": {"sim": "restarting", "timings": {"pending_s": 90, "restart_at": 1800, "run_s": 3600}},
    "image-pull-backoff": {"sim": "image-pull-backoff", "timings": {}},
    "operator-down": {"sim": "operator-down", "timings": {}},
    # The job would run ten hours; the execution input gives it six.
    "timeout": {"sim": "success", "timings": {"pending_s": 90, "run_s": 10 * 3600}},
}

QUIET = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}


def clock_text(seconds: float) -> str:
    seconds = int(seconds)
    return f"+{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def print_run(result: RunResult, out: Any = sys.stdout) -> None:
    for poll in result.polls:
        wait = f"next wait {poll.wait_seconds}s" if poll.wait_seconds else "done"
        print(f"{clock_text(poll.at - result.started_at)}  {poll.phase:<10} {poll.reason:<28} {wait}", file=out)
    print(json.dumps(result.summary()), file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="success")
    parser.add_argument("--input", default="events/run-job-input.json", help="the execution input (JSON)")
    parser.add_argument("--kubeconfig", help="run against the cluster of this kubeconfig instead of the simulator")
    args = parser.parse_args(argv)

    try:
        execution_input = json.loads(Path(args.input).read_text())
    except (OSError, ValueError) as exc:
        print(json.dumps({"error": "InvalidInput", "cause": f"{args.input}: {exc}"}))
        return 2
    scenario = SCENARIOS[args.scenario]
    kubeconfig = args.kubeconfig or None
    if kubeconfig:
        print(f"running against {kubeconfig} on the wall clock; the scenario is the cluster's", file=sys.stderr)
    env = {**QUIET, **({"KUBECONFIG": os.path.abspath(kubeconfig)} if kubeconfig else {})}
    if kubeconfig:
        # A real cluster's deployment: its namespace, allowed kinds and bounds come from the environment
        # (JOBSYNC_NAMESPACE, JOBSYNC_ALLOWED_KINDS, ...), not the simulator's defaults.
        env.update({key: value for key, value in os.environ.items() if key.startswith("JOBSYNC_")})
    with LocalJobsync(scenario["sim"], scenario["timings"], env=env, kubeconfig=kubeconfig) as local:
        name = f"demo-{args.scenario}-{uuid.uuid4().hex[:8]}"
        # Powertools prints its cold-start metric even when metrics are off: keep it out of the output.
        with contextlib.redirect_stdout(io.StringIO()):
            result = local.run(execution_input, name=name, timeout_s=None if kubeconfig else 600)
    print_run(result)
    return 0 if result.status == "SUCCEEDED" else 1


if __name__ == "__main__":
    sys.exit(main())
