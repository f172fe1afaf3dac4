"""The jobsync command line: ``jobsync <command> ...`` (or ``python -m jobsync_cli``).

Each command lives in a module of its own and is registered here in one line.

``evaluate FILE`` (``-`` for stdin) reads one object as JSON or YAML, in
any form the Lambda accepts (the object, ``{"object": ...}``, an
``eks:call`` response), and prints its evaluation as one JSON line; a
``List`` (what ``kubectl get pytorchjobs -o yaml`` prints) gives one line per
item, each naming its item. Exit status 0 means a verdict was printed
(NOT_FOUND included); 2 means the input, or an item of it, could not be
evaluated, and the line printed is ``{"error": ..., "detail": ...}``. The
input is held to the bounds of a state's payload (``jobsync_cli.input_file``):
at most 256 KiB, nested at most 100 levels.

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
    code, results = evaluate_texts(text, source)
    return code, results[0]


def evaluate_texts(text: str, source: str = "stdin") -> tuple[int, list[dict[str, Any]]]:
    """As ``evaluate_text``, with a ``List`` (``kubectl get ... -o yaml``) giving one object per item.

    Each item's object names the item (``name``, ``namespace``); an item that cannot be evaluated
    gives its error object and exit status 2, the others their verdicts.
    """
    try:
        document = _load(text, source)
    except input_file.TooDeep as err:
        return EXIT_BAD_INPUT, [{"error": "too deep", "detail": str(err)}]
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError) as err:
        # ValueError: YAML timestamps such as 2019-13-45 that are no dates.
        return EXIT_BAD_INPUT, [{"error": "unparseable", "detail": _one_line(err)}]
    items = _list_items(document)
    if items is None:
        code, result = _evaluate_one(document)
        return code, [result]
    results: list[dict[str, Any]] = []
    code = EXIT_OK
    for item in items:
        item_code, result = _evaluate_one(item)
        meta = item.get("metadata") if isinstance(item, dict) else None
        named = {key: meta.get(key) for key in ("name", "namespace")} if isinstance(meta, dict) else {}
        results.append({**named, **result})
        code = max(code, item_code)
    return code, results


def _list_items(document: Any) -> list[Any] | None:
    """The items of a Kubernetes list (``kind: List`` or ``PyTorchJobList``), None for anything else.

    An ``eks:call`` response (``ResponseBody``) stays the evaluator's: there a list holds one job at most.
    """
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        return None
    kind = document.get("kind")
    if not (isinstance(kind, str) and kind.endswith("List")):
        return None
    item_kind = kind.removesuffix("List")
    if not item_kind:
        return list(document["items"])
    # Built-in kinds (batch/v1 JobList) leave apiVersion and kind off their items.
    defaults = {"apiVersion": document.get("apiVersion"), "kind": item_kind}
    return [
        {**{k: v for k, v in defaults.items() if v}, **item} if isinstance(item, dict) else item
        for item in document["items"]
    ]


def _evaluate_one(document: Any) -> tuple[int, dict[str, Any]]:
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
        code, results = evaluate_texts(text, input_file.source_name(args.file))
        for line in results:
            print(json.dumps(line))
        if not results:
            print(f"jobsync evaluate: {input_file.source_name(args.file)}: the list has no items", file=sys.stderr)
        return code
    print(json.dumps(result))
    return code


def version() -> str:
    """The installed distribution's version (``pip install .``), else the source tree's (its pyproject.toml)."""
    from importlib import metadata
    from pathlib import Path

    try:
        return metadata.version("jobsync")
    except metadata.PackageNotFoundError:
        import tomllib

        try:
            project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
            return f"{project['project']['version']} (source tree)"
        except (OSError, KeyError, ValueError):
            return "(unknown: not installed)"


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; each command is a subparser whose ``func`` runs it."""
    parser = argparse.ArgumentParser(prog="jobsync", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"jobsync {version()}")
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

    from jobsync_cli import follow, logs, stop, submit, wait  # each command's module registers it, one line each

    follow.add_commands(commands)  # run, status, list: start and follow executions
    wait.add_command(commands)  # wait: a job on a cluster, without AWS
    logs.add_command(commands)  # logs: a job's leading replica's log, -f until it ends
    stop.add_command(commands)  # stop: an execution, then what its cleanup did
    submit.add_command(commands)  # submit: start a run; --dry-run: the job Submit would create
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
