"""The command line reads its input within the bounds an execution accepts: 256 KiB, 100 levels of nesting.

`jobsync run` through ``main()`` against the local run (nothing may reach StartExecution), `jobsync
evaluate` as a real subprocess (tests/cli/test_cli.py's ``run``), both from a file and from stdin: one
line naming the input and the bound, exit 2, never a traceback.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator

import boto3
import pytest

from harness.local import LocalJobsync
from jobsync_cli import follow, input_file
from jobsync_cli.main import main
from tests.cli.test_cli import run as evaluate
from tests.support.lambdas import EVENTS

QUIET = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}
DEEPEST = 200_000  # the file the defect was found with: 1.2 MB of {"a": ...}
DEEP = 100_000  # [[[...]]] in 200 KB: under the size bound, so the depth bound answers


def deepest() -> str:
    return '{"a":' * DEEPEST + "1" + "}" * DEEPEST


def deep() -> str:
    return "[" * DEEP + "]" * DEEP


def nested(levels: int) -> dict:
    """An execution input whose deepest value lies ``levels`` levels down (the input itself is level 1)."""
    value: object = "leaf"
    for _ in range(levels - 2):
        value = {"a": value}
    return {"context": value}


def of_size(size: int) -> str:
    """A valid execution input of exactly ``size`` bytes: the real example input with a large context."""
    document = json.loads((EVENTS / "run-job-input.json").read_text())
    document["context"] = {"notes": ""}
    document["context"]["notes"] = "x" * (size - len(json.dumps(document).encode()))
    text = json.dumps(document)
    assert len(text.encode()) == size
    return text


def oversized() -> str:
    return of_size(input_file.MAX_BYTES + 1)


@contextlib.contextmanager
def local_run() -> Iterator[tuple[LocalJobsync, str]]:
    with LocalJobsync("success", env=QUIET) as local:
        sfn = boto3.client("stepfunctions")
        arn = next(m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"] if "run-job" in m["name"])
        yield local, arn


def started(state_machine: str) -> list[str]:
    return [
        e["executionArn"]
        for e in boto3.client("stepfunctions").list_executions(stateMachineArn=state_machine)["executions"]
    ]


def jobsync_run(capsys, state_machine: str, path: str) -> tuple[int, str, str]:
    code = main(["run", path, "--state-machine-arn", state_machine, "--no-follow"])
    captured = capsys.readouterr()
    return code, command_output(captured.out), captured.err


def command_output(text: str) -> str:
    """What the command printed: the Lambdas run in this process, and print their metrics (EMF) there too."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith('{"_aws"'))


CASES = {
    "deepest": (deepest, "more than 262,144 bytes (256 KiB"),
    "deep": (deep, "nested deeper than 100 levels"),
    "one level too deep": (lambda: json.dumps(nested(101)), "nested deeper than 100 levels"),
    "oversized": (oversized, "more than 262,144 bytes (256 KiB"),
}


@pytest.mark.parametrize("case", CASES)
def test_run_refuses_input_past_the_bounds_in_one_line_and_starts_nothing(tmp_path, capsys, monkeypatch, case):
    make, message = CASES[case]
    path = tmp_path / "input.json"
    path.write_text(make())
    with local_run() as (_, state_machine):
        code, out, err = jobsync_run(capsys, state_machine, str(path))
        assert (code, out) == (follow.EXIT_BAD_INPUT, ""), err
        assert err.startswith(f"jobsync run: {path}: {message}"), err
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert started(state_machine) == []

        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
        code, out, err = jobsync_run(capsys, state_machine, "-")
        assert (code, out) == (follow.EXIT_BAD_INPUT, ""), err
        assert err.startswith(f"jobsync run: stdin: {message}") and len(err.splitlines()) == 1, err
        assert started(state_machine) == []


def test_run_takes_input_at_the_bounds_and_sends_it_as_it_is(tmp_path, capsys):
    at_depth = tmp_path / "deep.json"
    at_depth.write_text(json.dumps(nested(100), indent=1))
    at_size = tmp_path / "large.json"
    at_size.write_text(of_size(input_file.MAX_BYTES))
    with local_run() as (_, state_machine):
        for path in (at_depth, at_size):
            code, out, err = jobsync_run(capsys, state_machine, str(path))

            assert code == follow.EXIT_SUCCEEDED, err
            sent = boto3.client("stepfunctions").describe_execution(executionArn=out.strip())["input"]
            assert sent == path.read_text()


@pytest.mark.parametrize("case", CASES)
def test_evaluate_refuses_input_past_the_bounds_with_a_json_error(tmp_path, case):
    make, message = CASES[case]
    path = tmp_path / "job.json"
    path.write_text(make())

    code, result, stderr = evaluate("evaluate", str(path))
    assert code == 2 and stderr == "", stderr
    assert result["error"] == ("too large" if "bytes" in message else "too deep")
    assert result["detail"].startswith(f"{path}: {message}"), result

    code, result, stderr = evaluate("evaluate", "-", stdin=path.read_bytes())
    assert code == 2 and stderr == "", stderr
    assert result["detail"].startswith(f"stdin: {message}"), result


def test_evaluate_refuses_yaml_nested_too_deep_by_indentation_or_by_an_alias(tmp_path):
    indented = "kind: PyTorchJob\napiVersion: kubeflow.org/v1\nstatus:\n" + "".join(
        " " * level + f"l{level}:\n" for level in range(1, 120)
    )
    loop = "kind: PyTorchJob\napiVersion: kubeflow.org/v1\nstatus: &s {conditions: [*s]}\n"
    for name, text in (("indented.yaml", indented), ("alias.yaml", loop)):
        path = tmp_path / name
        path.write_text(text)

        code, result, stderr = evaluate("evaluate", str(path))

        assert (code, result) == (2, {"error": "too deep", "detail": f"{path}: nested deeper than 100 levels"})
        assert "Traceback" not in stderr


def test_evaluate_takes_an_object_nested_100_levels(tmp_path):
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j"}}
    job.update(nested(100))  # job["context"] holds a value 100 levels down
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))

    code, result, _ = evaluate("evaluate", str(path))

    assert (code, result["phase"]) == (0, "PENDING")
