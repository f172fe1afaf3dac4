"""The jobsync command line: ``jobsync <command> ...`` (or ``python -m jobsync_cli``).

``evaluate FILE`` (``-`` for stdin) reads one object as JSON or YAML, in
any form the Lambda accepts (the object, ``{"object": ...}``, an
``eks:call`` response), and prints its evaluation as one JSON line. Exit
status 0 means a verdict was printed (NOT_FOUND included); 2 means the input
could not be evaluated, and the line printed is ``{"error": ..., "detail":
...}``. The input is held to the bounds of a state's payload
(``jobsync_cli.input_file``): at most 256 KiB, nested at most 100 levels.

Ctrl-C ends any command with exit status 130 and one line, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import yaml

from jobsync.errors import EvaluationError
from jobsync.evaluation.evaluator import evaluate_event
from jobsync_cli import input_file
from jobsync_cli.follow import EXIT_INTERRUPTED

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def evaluate_text(text: str, source: str = "stdin") -> tuple[int, dict[str, Any]]:
    """Exit status and the JSON object to print for one input document (``source`` names it in errors).

    JSON is parsed as JSON (C speed: a large eks:call response in a fraction
    of a second); only text that is not JSON goes to YAML's pure-Python safe
    loader. Never raises for any text.
    """
    try:
        document = _load(text, source)
    except input_file.TooDeep as err:
        return EXIT_BAD_INPUT, {"error": "too deep", "detail": str(err)}
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError) as err:
        # ValueError: YAML timestamps such as 2019-13-45 that are no dates.
        return EXIT_BAD_INPUT, {"error": "unparseable", "detail": _one_line(err)}
    try:
        return EXIT_OK, evaluate_event(document)
    except EvaluationError as err:
        return EXIT_BAD_INPUT, {"error": "cannot evaluate", "detail": str(err)}
    except (OverflowError, ValueError) as err:  # a value no check foresaw: still one clear line
        return EXIT_BAD_INPUT, {"error": "cannot evaluate", "detail": _one_line(err)}


def _load(text: str, source: str) -> Any:
    try:
        return input_file.load_json(text, source)
    except json.JSONDecodeError:
        return input_file.load_yaml(text, source)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    try:
        text = input_file.read_text(args.file)
    except input_file.TooLarge as err:
        code, result = EXIT_BAD_INPUT, {"error": "too large", "detail": str(err)}
    except (OSError, UnicodeDecodeError) as err:
        code, result = EXIT_BAD_INPUT, {"error": "unreadable", "detail": _one_line(err)}
    else:
        code, result = evaluate_text(text, input_file.source_name(args.file))
    print(json.dumps(result))
    return code


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; each command is a subparser whose ``func`` runs it."""
    parser = argparse.ArgumentParser(prog="jobsync", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    evaluate_cmd = commands.add_parser(
        "evaluate", help="print the phase of a job object (JSON or YAML) as one JSON line"
    )
    evaluate_cmd.add_argument("file", metavar="FILE", help="the object, an eks:call response, or - for stdin")
    evaluate_cmd.set_defaults(func=_cmd_evaluate)

    try:  # preflight lives beside the library (cli/), which the Lambda layer does not ship
        from jobsync_cli.preflight import command as preflight
    except ImportError:
        preflight = None  # type: ignore[assignment]
    if preflight is not None:
        preflight.add_command(commands)

    from jobsync_cli import follow  # run, status, list: start and follow executions (jobsync_cli.follow)

    follow.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:  # `run` says more itself: what it started and how to find it
        print(f"jobsync {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return code


if __name__ == "__main__":
    sys.exit(main())
