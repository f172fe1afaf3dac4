"""``jobsync wait JOB``: wait for a job on a cluster, without AWS, as a run waits for it (``jobsync.run.wait``).

One line per look (time since the job was created, phase, reason, the wait
until the next look), then the result as ``jobsync run`` prints it, and the
exit code a run of that end would give.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from jobsync.core.state import LoopState, seconds
from jobsync.errors import JobsyncError
from jobsync_cli import cluster
from jobsync_cli.aws import FollowError
from jobsync_cli.follow import EXIT_BAD_INPUT, EXIT_CODES_HELP, EXIT_INTERRUPTED
from jobsync_cli.history import Outcome, Poll


def look_line(state: LoopState) -> str:
    """A look as ``jobsync run`` prints one, its time counted from the job's creation (a run's: its start)."""
    from jobsync import clock

    poll = Poll(
        at=clock.now() - seconds(state.submittedAt),
        state="Status",
        phase=str(state.phase),
        reason=state.reason,
        wait_seconds=state.waitSeconds,
        terminal=state.terminal,
        polls=state.polls,
    )
    return poll.line()


def cmd_wait(args: argparse.Namespace) -> int:
    from jobsync.run.wait import wait_for, wait_settings

    out = sys.stdout
    try:
        spec, name = cluster.job(args.job, args)
        namespace = cluster.namespace(args)
        jobs = cluster.connect(args)
        settings = wait_settings(namespace, spec, watch=not args.poll)
        print(f"waiting for {spec.kind} {namespace}/{name}", file=out, flush=True)
        result = wait_for(
            jobs,
            spec,
            namespace,
            name,
            settings,
            timeout_seconds=args.timeout,
            on_look=lambda state: print(look_line(state), file=out, flush=True),
        )
    except FollowError as err:
        print(f"jobsync wait: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except JobsyncError as err:
        print(f"jobsync wait: {' '.join(str(err).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("\njobsync wait: stopped waiting; the job goes on", file=sys.stderr)
        return EXIT_INTERRUPTED
    output: dict[str, Any] = result.output()
    if result.succeeded:
        outcome = Outcome("SUCCEEDED", output)
    else:
        outcome = Outcome("FAILED", None, result.error, json.dumps(output))
    for line in outcome.lines():
        print(line, file=out)
    return result.exit_code


def add_command(commands: Any) -> None:
    from jobsync_cli.follow import _HelpFormatter, _positive_int

    parser = commands.add_parser(
        "wait",
        help="wait for a job on a cluster, without AWS: the verdict, waits and result a run gives",
        description="Wait for a job on a cluster (a kubeconfig's), without AWS, as a jobsync run waits for it:\n"
        "the same verdict, stuck-start rules (their graces counted from the job's creation), waits between\n"
        "looks and result. A line per look, then the result; the exit code a run of that end would give.\n"
        "The job is only read, never changed. The library call is jobsync.wait(name, namespace, kind, ...).",
        epilog=EXIT_CODES_HELP.replace("(status) the execution is still running", "(not given by wait)"),
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("job", metavar="JOB", help="the job: NAME (of --kind) or KIND/NAME, e.g. pytorchjob/mnist")
    cluster.add_options(parser)
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_positive_int,
        default=86400,
        help="the deadline, from now: past it the job is TIMED_OUT (exit 5), as a run's timeoutSeconds",
    )
    parser.add_argument(
        "--poll",
        action="store_true",
        help="look at the job at the poll policy's waits instead of holding a watch (for a cluster that allows "
        "get but not watch)",
    )
    parser.set_defaults(func=cmd_wait)
