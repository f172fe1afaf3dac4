"""`make demo`: one jobsync execution, end to end, on this machine.

    python -m harness.demo [--scenario success|failure|restarting|image-pull-backoff|gpu-scale-up|never-schedulable|
                                      bad-image|timeout|operator-down]
                           [--input events/run-job-input.json] [--kubeconfig PATH] [--mode poll|watch|callback]

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
import logging
import os
import sys
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from pathlib import Path
from typing import Any

from harness.local import LocalJobsync, RunResult

# Each scenario: the simulator's timeline and, where the story needs it, settings.
SCENARIOS: dict[str, dict[str, Any]] = {
    "success": {"sim": "success", "timings": {"pending_s": 90, "run_s": 2 * 3600}},
    "failure": {"sim": "failure", "timings": {"pending_s": 90, "run_s": 1200}},
    # The restart lasts five minutes, so a poll (or the watch) sees the Restarting the story is named for.
    "restarting": {
        "sim": "restarting",
        "timings": {"pending_s": 90, "restart_at": 1800, "restart_s": 300, "run_s": 3600},
    },
    "image-pull-backoff": {"sim": "image-pull-backoff", "timings": {}},
    "operator-down": {"sim": "operator-down", "timings": {}},
    # GPUs on their way: the Cluster Autoscaler scales up for 40 minutes, then the job runs and succeeds.
    "gpu-scale-up": {"sim": "gpu-scale-up", "timings": {"scale_up_s": 2400, "run_s": 1800}},
    # No node group can ever fit the pod: FAILED after UnschedulableGraceSeconds, saying why.
    "never-schedulable": {"sim": "never-schedulable", "timings": {}},
    # The image's tag does not exist: FAILED within minutes, the Cause naming the pull error.
    "bad-image": {"sim": "bad-image", "timings": {}},
    # The job would run ten hours; the execution input gives it six.
    "timeout": {"sim": "success", "timings": {"pending_s": 90, "run_s": 10 * 3600}},
}

QUIET = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}
# The settings each completion mode (template.yaml's CompletionMode) gives the Lambdas.
MODES: dict[str, dict[str, str]] = {
    "poll": {"JOBSYNC_COMPLETION_MODE": "poll"},
    "watch": {"JOBSYNC_COMPLETION_MODE": "watch", "JOBSYNC_WATCH_SECONDS": "840"},
    "callback": {"JOBSYNC_COMPLETION_MODE": "callback"},
}


def clock_text(seconds: float) -> str:
    seconds = int(seconds)
    return f"+{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def poll_lines(result: RunResult) -> list[str]:
    """One line per Status answer: when it answered, the phase and reason, what changed, what comes next.

    In watch mode a poll answers when the job changed (or the watch ran out), with no wait after it:
    the line says what changed since the last answer instead of a wait.
    """
    lines, before = [], None
    for i, poll in enumerate(result.polls):
        now = (poll.phase, poll.reason)
        if before is None:
            changed = "first look"
        elif now != before:
            changed = f"was {before[0]} {before[1]}".rstrip() if now[0] != before[0] else f"was {before[1]}"
        else:
            changed = "no change"
        if poll.wait_seconds:
            after = f"next wait {poll.wait_seconds}s"
        elif i == len(result.polls) - 1:
            after = "done"
        else:
            after = "watching again"
        answered = poll.answered if poll.answered is not None else poll.at
        lines.append(
            f"{clock_text(answered - result.started_at)}  {poll.phase:<10} {poll.reason:<28} {changed}; {after}"
        )
        before = now
    return lines


def summary(result: RunResult) -> dict[str, Any]:
    """The result line: a JSON Cause (every Job* failure's) as an object, not a string inside a string."""
    out = result.summary()
    if isinstance(out["cause"], str):
        with contextlib.suppress(ValueError):
            out["cause"] = json.loads(out["cause"])
    return out


def print_run(result: RunResult, out: Any = None, children: list[dict[str, Any]] | None = None) -> None:
    out = out or sys.stdout
    for line in poll_lines(result):
        print(line, file=out)
    line = summary(result)
    if children is not None:  # RunJobs: each job's phase, from the run's output or its JobsFailed cause
        line["jobs"] = run_jobs_phases(result, children)
    print(json.dumps(line), file=out)


def quiet_interpreter() -> None:
    """moto's ASL interpreter logs every Fail state (FailureEventException ... StateType.Fail) as an ERROR on
    stderr: a failing job is the demo's story, not an interpreter fault. Its result line says it all."""
    logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL + 1)


def run_jobs_phases(result: RunResult, children: list[dict[str, Any]]) -> dict[str, Any]:
    """Each child execution's status and error, and the run's summary when it has one."""
    report: dict[str, Any] = {
        "children": [{"name": c["name"], "status": c["status"], "error": c.get("error")} for c in children]
    }
    source = result.output
    if source is None and result.error == "JobsFailed" and result.cause:
        source = json.loads(result.cause) if isinstance(result.cause, str) else result.cause
    if isinstance(source, dict):
        report["phases"] = [job.get("phase") for job in source.get("jobs", [])]
        report["summary"] = source.get("summary")
    return report


def main(argv: list[str] | None = None, around: Callable[[LocalJobsync], ContextManager[Any]] | None = None) -> int:
    """``around``: entered with the started LocalJobsync, for the run (e2e.demo: the functions in containers)."""
    parser = argparse.ArgumentParser(prog="python -m harness.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="success")
    parser.add_argument("--input", default="events/run-job-input.json", help="the execution input (JSON)")
    parser.add_argument("--kubeconfig", help="run against the cluster of this kubeconfig instead of the simulator")
    parser.add_argument(
        "--mode",
        choices=sorted(MODES),
        default="poll",
        help="how the execution learns the job ended (callback runs the notifier as a process beside the cluster's "
        "API; its log goes to standard error)",
    )
    args = parser.parse_args(argv)

    try:
        execution_input = json.loads(Path(args.input).read_text())
    except (OSError, ValueError) as exc:
        print(json.dumps({"error": "InvalidInput", "cause": f"{args.input}: {exc}"}))
        return 2
    scenario = SCENARIOS[args.scenario]
    quiet_interpreter()
    kubeconfig = args.kubeconfig or None
    if kubeconfig:
        print(f"running against {kubeconfig} on the wall clock; the scenario is the cluster's", file=sys.stderr)
    # Quiet unless the caller asks for more (POWERTOOLS_LOG_LEVEL=DEBUG make demo).
    quiet = {name: value for name, value in QUIET.items() if name not in os.environ}
    env = {**quiet, **MODES[args.mode], **({"KUBECONFIG": os.path.abspath(kubeconfig)} if kubeconfig else {})}
    if kubeconfig:
        # A real cluster's deployment: its namespace, allowed kinds and bounds come from the environment
        # (JOBSYNC_NAMESPACE, JOBSYNC_ALLOWED_KINDS, ...), not the simulator's defaults.
        env.update({key: value for key, value in os.environ.items() if key.startswith("JOBSYNC_")})
    # A {"jobs": [...]} input runs RunJobs; each job names its scenario (the test-only jobsync.local/scenario
    # annotation), and the status change events of its children reach the cleanup function, as in the stack.
    several = isinstance(execution_input, dict) and "jobs" in execution_input
    with (
        LocalJobsync(
            scenario["sim"], scenario["timings"], env=env, kubeconfig=kubeconfig, execution_events=several
        ) as local,
        around(local) if around else contextlib.nullcontext(),
    ):
        name = f"demo-{args.scenario}-{uuid.uuid4().hex[:8]}"
        # Powertools prints its cold-start metric even when metrics are off: keep it out of the output.
        with contextlib.redirect_stdout(io.StringIO()):
            if several:
                result = local.run_jobs(execution_input, name=name, timeout_s=None if kubeconfig else 600)
                children = [local.sfn.wait(arn, timeout_s=60) for arn in local.children(result.execution_arn)]
            else:
                result = local.run(execution_input, name=name, timeout_s=None if kubeconfig else 600)
    print_run(result, children=children if several else None)
    return 0 if result.status == "SUCCEEDED" else 1


if __name__ == "__main__":
    sys.exit(main())
