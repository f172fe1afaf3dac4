"""`make demo`: one jobsync execution, end to end, on this machine.

    python -m harness.demo [--scenario success|failure|restarting|image-pull-backoff|gpu-scale-up|never-schedulable|
                                      bad-image|timeout|operator-down]
                           [--input events/run-job-input.json] [--kinds KINDS] [--kubeconfig PATH]
                           [--mode poll|watch|callback] [--verdict-file PATH]

Prints one line per look (virtual time since submission, phase, reason, what
changed, what comes next) and, last, one JSON object: the execution's status,
error, cause, output, and the jobs left in the cluster. In callback mode the
notifier's log lines and the event that woke the wait are among the lines, at
their time on the story's clock. A ``{"jobs": [...]}`` input runs RunJobs: a
line per job as it changes, each naming its job (as ``jobsync run`` prints
them), then the table of every job in input order. Any kind the deployment
allows runs: ``--kinds`` (the input's own kinds by default); the simulator
plays every Kubeflow training-operator v1 kind and batch/v1 Job.

Exits with the code ``jobsync run`` gives the same end: 0 succeeded, 3 JobFailed,
... (the worst job's for RunJobs), 2 for an input that cannot run at all.
``--verdict-file`` gets the verdict as one line (``make demo`` ends a failing
story with it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from pathlib import Path
from typing import Any

from harness.local import LocalJobsync, RunResult
from harness.story import Entry, notifier_entries, run_jobs_lines, story_lines
from jobsync.core.outcome import EXIT_OTHER_ERROR, EXIT_SUCCEEDED, JOB_ERRORS

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
# The notifier's log as deployed (its Deployment's POWERTOOLS_LOG_LEVEL): its info lines are part of the story.
NOTIFIER_ENV = {"POWERTOOLS_LOG_LEVEL": "INFO"}


def clock_text(seconds: float) -> str:
    seconds = int(seconds)
    return f"+{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def summary(result: RunResult) -> dict[str, Any]:
    """The result line: a JSON Cause as an object, not a string inside a string; a Lambda error's message and
    type without its stack trace (a refusal is the story, not a fault)."""
    out = result.summary()
    if isinstance(out["cause"], str):
        with contextlib.suppress(ValueError):
            out["cause"] = json.loads(out["cause"])
    if isinstance(out["cause"], dict) and "stackTrace" in out["cause"]:
        out["cause"] = {k: v for k, v in out["cause"].items() if k in ("errorType", "errorMessage")}
    return out


def quiet_interpreter() -> None:
    """moto's ASL interpreter logs every Fail state (FailureEventException ... StateType.Fail) as an ERROR on
    stderr: a failing job is the demo's story, not an interpreter fault. Its result line says it all."""
    logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL + 1)


def input_kinds(execution_input: Any) -> str:
    """The kinds an input's jobs are (``apiVersion/Kind``, comma-separated), "" when it names none."""
    entries = execution_input.get("jobs") if isinstance(execution_input, dict) else None
    jobs = [e.get("job") for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    if isinstance(execution_input, dict) and "job" in execution_input:
        jobs = [execution_input["job"]]
    kinds = []
    for job in jobs:
        if isinstance(job, dict) and isinstance(job.get("apiVersion"), str) and isinstance(job.get("kind"), str):
            kind = f"{job['apiVersion']}/{job['kind']}"
            kinds += [] if kind in kinds else [kind]
    return ",".join(kinds)


def exit_code(status: str, error: str | None, children: list[int] | None = None) -> int:
    """``jobsync run``'s code for this end; for RunJobs the worst job's (``jobsync_cli.runjobs.worst``)."""
    if children:
        from jobsync_cli.runjobs import worst

        return worst(children)
    if status == "SUCCEEDED":
        return EXIT_SUCCEEDED
    return JOB_ERRORS.get(error or "", EXIT_OTHER_ERROR)


def verdict(result: RunResult, code: int) -> str:
    """The story's end in one line: how it ended, why, and the exit code."""
    if result.status == "SUCCEEDED":
        return f"the story ended SUCCEEDED (exit {code})"
    cause = summary(result)["cause"]
    why = ""
    if isinstance(cause, dict):
        why = str(cause.get("message") or cause.get("errorMessage") or "")
        if not why and isinstance(cause.get("summary"), dict):
            why = ", ".join(f"{k} {v}" for k, v in cause["summary"].items() if v)
    elif isinstance(cause, str):
        why = cause
    return f"the story ended {result.status}: {result.error}" + (f": {why}" if why else "") + f" (exit {code})"


def main(argv: list[str] | None = None, around: Callable[[LocalJobsync], ContextManager[Any]] | None = None) -> int:
    """``around``: entered with the started LocalJobsync, for the run (e2e.demo: the functions in containers)."""
    parser = argparse.ArgumentParser(prog="python -m harness.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="success")
    parser.add_argument("--input", default="events/run-job-input.json", help="the execution input (JSON)")
    parser.add_argument("--kinds", default="", help="the kinds allowed (default: the input's own kinds)")
    parser.add_argument("--kubeconfig", help="run against the cluster of this kubeconfig instead of the simulator")
    parser.add_argument(
        "--mode",
        choices=sorted(MODES),
        default="poll",
        help="how the execution learns the job ended (callback runs the notifier as a process beside the cluster's "
        "API; its log lines are printed with the story's)",
    )
    parser.add_argument("--verdict-file", default=None, help="write the verdict here as one line")
    args = parser.parse_args(argv)

    def refuse(what: str) -> int:
        print(json.dumps({"error": "InvalidInput", "cause": what}))
        if args.verdict_file:
            Path(args.verdict_file).write_text(f"the story did not run: {what} (exit 2)\n")
        return 2

    try:
        execution_input = json.loads(Path(args.input).read_text())
    except (OSError, ValueError) as exc:
        return refuse(f"{args.input}: {exc}")
    kinds = args.kinds or os.environ.get("JOBSYNC_ALLOWED_KINDS") or input_kinds(execution_input) or "PyTorchJob"
    from jobsync.settings import parse_allowed_kinds

    try:
        parse_allowed_kinds(kinds, source="KINDS")
    except ValueError as exc:
        return refuse(str(exc))
    kubeconfig = os.path.abspath(args.kubeconfig) if args.kubeconfig else None
    if kubeconfig:
        failure = _unreachable(kubeconfig)
        if failure:
            return refuse(failure)
        print(f"running against {kubeconfig} on the wall clock; the scenario is the cluster's", file=sys.stderr)
    scenario = SCENARIOS[args.scenario]
    quiet_interpreter()
    # Quiet unless the caller asks for more (POWERTOOLS_LOG_LEVEL=DEBUG make demo).
    quiet = {name: value for name, value in QUIET.items() if name not in os.environ}
    env = {**quiet, **MODES[args.mode], **({"KUBECONFIG": kubeconfig} if kubeconfig else {})}
    if kubeconfig:
        # A real cluster's deployment: its namespace and bounds come from the environment
        # (JOBSYNC_NAMESPACE, ...), not the simulator's defaults.
        env.update({key: value for key, value in os.environ.items() if key.startswith("JOBSYNC_")})
    env["JOBSYNC_ALLOWED_KINDS"] = kinds
    # A {"jobs": [...]} input runs RunJobs; each job names its scenario (the test-only jobsync.local/scenario
    # annotation), and the status change events of its children reach the cleanup function, as in the stack.
    several = isinstance(execution_input, dict) and "jobs" in execution_input
    with tempfile.TemporaryDirectory(prefix="jobsync-demo-") as tmp:
        log = Path(tmp) / "notifier.log"
        with (
            LocalJobsync(
                scenario["sim"],
                scenario["timings"],
                env=env,
                kubeconfig=kubeconfig,
                execution_events=several,
                notifier_log=log,
                notifier_env=NOTIFIER_ENV,
            ) as local,
            around(local) if around else contextlib.nullcontext(),
        ):
            # The story's clock against the wall's, so the notifier's log lines (wall time) find their place.
            samples: list[tuple[float, float]] = [(time.time(), local.clock.now())]
            local.clock.on_advance(lambda now: samples.append((time.time(), now)))
            name = f"demo-{args.scenario}-{uuid.uuid4().hex[:8]}"
            # Powertools prints its cold-start metric even when metrics are off: keep it out of the output.
            with contextlib.redirect_stdout(io.StringIO()):
                if several:
                    result = local.run_jobs(execution_input, name=name, timeout_s=None if kubeconfig else 600)
                else:
                    result = local.run(execution_input, name=name, timeout_s=None if kubeconfig else 600)
            assert local.sfn is not None
            if several:
                lines, reader = run_jobs_lines(local.sfn, result.execution_arn, execution_input)
                children = [c.exit_code for c in reader.ordered() if c.exit_code is not None]
            else:
                extra: list[Entry] = notifier_entries(local.notifier.log_lines() if local.notifier else [], samples)
                lines, reader, children = story_lines(local.sfn.invocations, result, extra), None, None
    for line in lines:
        print(line)
    line = summary(result)
    if reader is not None:  # RunJobs: each job in input order, by its job's name, and the run's summary
        line["jobs"] = _jobs_report(result, reader)
    print(json.dumps(line))
    code = exit_code(result.status, result.error, children)
    if args.verdict_file:
        Path(args.verdict_file).write_text(verdict(result, code) + "\n")
    return code


def _jobs_report(result: RunResult, reader: Any) -> dict[str, Any]:
    report: dict[str, Any] = {
        "children": [
            {
                "index": child.index,
                "job": child.job,
                "execution": child.execution,
                "status": child.outcome.status if child.outcome else None,
                "phase": child.phase,
                "error": child.outcome.error if child.outcome else None,
            }
            for child in reader.ordered()
        ]
    }
    source = result.output
    if source is None and result.error == "JobsFailed" and result.cause:
        source = json.loads(result.cause) if isinstance(result.cause, str) else result.cause
    if isinstance(source, dict):
        report["phases"] = [job.get("phase") for job in source.get("jobs", [])]
        report["summary"] = source.get("summary")
    return report


def _unreachable(kubeconfig: str) -> str | None:
    """Why the kubeconfig's API server cannot be reached, at once; None when it answers."""
    from jobsync.cluster.connection import check_reachable
    from jobsync.errors import JobsyncError
    from jobsync.run.wait import kubeconfig_settings

    try:
        check_reachable(kubeconfig_settings(kubeconfig))
    except JobsyncError as exc:
        return str(exc)
    return None


if __name__ == "__main__":
    sys.exit(main())
