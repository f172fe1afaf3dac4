"""``make sam-local``: a Docker daemon, the Lambda image, ``sam build``, then a command run against them.

    python -m lambda_runtime check [pytest args]   the checks in lambda_runtime/tests (make sam-local)
    python -m lambda_runtime run -- COMMAND ...    any command, with DOCKER_HOST set (the e2e tier, the benchmark)
    python -m lambda_runtime image                 only the daemon and the image

The daemon is the one that answers, or one started here and stopped again when the command ends
(SIGINT, SIGTERM and SIGHUP end it the same way). Prints how long each step took.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from lambda_runtime.daemon import DaemonError, docker_daemon
from lambda_runtime.image import IMAGE, ImageError, build_image
from lambda_runtime.sam import ROOT, SamError, sam_build

TESTS = Path(__file__).resolve().parent / "tests"


def say(line: str) -> None:
    print(f"sam-local: {line}", file=sys.stderr, flush=True)


def _exit_on_signal(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds the context managers: the daemon started here is stopped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lambda_runtime", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("check", help="the sam local checks (lambda_runtime/tests); other arguments go to pytest")
    run = sub.add_parser("run", help="a command with the daemon, the image and the build ready")
    run.add_argument(
        "--if-available",
        action="store_true",
        help="when no daemon can be had, run the command anyway (its container tests then skip, saying why)",
    )
    run.add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser("image", help="only the daemon and the image")
    args, extra = parser.parse_known_args(argv)
    if extra and args.what != "check":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on_signal)

    began = time.monotonic()
    try:
        with docker_daemon(say) as daemon:
            built = build_image(daemon, say)
            doing = ", ".join(built.steps) if built.steps else "up to date"
            say(f"image {IMAGE} = {built.image_id[7:19]} ({doing}) in {built.seconds:.1f}s")
            if args.what == "image":
                return 0
            say(f"sam build in {sam_build(daemon):.1f}s")
            env = {**daemon.env(), "JOBSYNC_SAM_LOCAL_REQUIRED": "1"}
            if args.what == "check":
                chosen = [] if any(Path(arg.split("::")[0]).exists() for arg in extra) else [str(TESTS)]
                command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *chosen, *extra]
            else:
                command = [part for part in args.command if part != "--"]
            ready = time.monotonic() - began
            code = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
            took = time.monotonic() - began
            say(f"ready in {ready:.0f}s; {' '.join(command[:4])} ... exited {code} after {took:.0f}s")
            return code
    except (DaemonError, ImageError, SamError) as exc:
        say(str(exc))
        if args.what == "run" and args.if_available and not isinstance(exc, SamError):
            say("running the command without the Lambda runtime")
            command = [part for part in args.command if part != "--"]
            return subprocess.run(command, cwd=ROOT, check=False).returncode
        return 1
    finally:
        say(f"total {time.monotonic() - began:.0f}s")


if __name__ == "__main__":
    os.environ.setdefault("SAM_CLI_TELEMETRY", "0")
    sys.exit(main())
