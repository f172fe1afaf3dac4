"""Ctrl-C while `jobsync run` starts an execution: what was started is said, so a rerun starts no second job.

``main()`` runs in-process against the local run; KeyboardInterrupt is raised inside the boto3 call the
command makes, by a botocore event hook on its client: before the request is built
(``before-parameter-build``), when it is about to leave (``before-send``, ahead of moto's handler, which
answers in the service's place), after the service took it but before its answer was read
(``before-parse``), and after the answer (``after-call``). Each time: exit 130, no traceback, and either
"no execution was started" or the execution's ARN, with what the service's own list of executions has.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator

import boto3
import pytest

from harness.local import LocalJobsync
from jobsync_cli import follow
from jobsync_cli.main import main
from tests.support.lambdas import EVENTS

QUIET = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}
INPUT = EVENTS / "run-job-input.json"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.fixture
def state_machine() -> Iterator[str]:
    with LocalJobsync("success", env=QUIET) as local:
        sfn = boto3.client("stepfunctions")
        machines = sfn.list_state_machines()["stateMachines"]
        machine = next(m["stateMachineArn"] for m in machines if "run-job" in m["name"])
        yield machine
        # An execution a test left running would go on in its thread after the local run is gone, and its
        # Lambdas' failing requests would log into the next test's output: each test's executions end with it.
        assert local.sfn is not None
        for arn in executions(machine):
            if sfn.describe_execution(executionArn=arn)["status"] == "RUNNING":
                local.sfn.stop(arn)
            local.sfn.wait(arn, timeout_s=60)


def executions(state_machine: str) -> list[str]:
    listed = boto3.client("stepfunctions").list_executions(stateMachineArn=state_machine)["executions"]
    return [execution["executionArn"] for execution in listed]


def interrupt(*_: object, **__: object) -> None:
    raise KeyboardInterrupt


def interrupting(monkeypatch: pytest.MonkeyPatch, event: str) -> None:
    """The command's client raises KeyboardInterrupt at ``event`` (handlers of a named operation come before
    moto's, which answers every ``before-send``)."""
    real = follow._client

    def client(service: str, region: str | None) -> object:
        made = real(service, region)
        made.meta.events.register(event, interrupt)
        return made

    monkeypatch.setattr(follow, "_client", client)


def run(capsys: pytest.CaptureFixture[str], state_machine: str, *args: str) -> tuple[int, str, str]:
    code = main(["run", str(INPUT), "--state-machine-arn", state_machine, "--poll-interval", "0.1", *args])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, command_output(captured.out), captured.err


def command_output(text: str) -> str:
    """What the command printed: the Lambdas run in this process, and print their metrics (EMF) there too."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith('{"_aws"'))


def test_ctrl_c_before_the_request_is_built_says_none_was_started(monkeypatch, capsys, state_machine):
    interrupting(monkeypatch, "before-parameter-build.sfn.StartExecution")

    code, out, err = run(capsys, state_machine)

    assert (code, out) == (follow.EXIT_INTERRUPTED, "")
    assert err == "jobsync run: interrupted: no execution was started\n"
    assert executions(state_machine) == []


def may_have_started(err: str, arn: str) -> bool:
    name = arn.rsplit(":", 1)[1]
    return err.splitlines() == [
        f"jobsync run: interrupted while starting execution {arn}: it may have started.",
        f"jobsync status {arn} tells (no such execution: it did not); run again with --name {name} to start it"
        " at most once",
    ]


@pytest.mark.parametrize("event", ["before-send", "before-parse"])
def test_ctrl_c_once_the_request_may_have_left_names_the_arn_and_a_rerun_starts_at_most_one(
    monkeypatch, capsys, state_machine, event
):
    interrupting(monkeypatch, f"{event}.sfn.StartExecution")

    code, out, err = run(capsys, state_machine)

    assert (code, out) == (follow.EXIT_INTERRUPTED, "")
    arn = re.match(r"jobsync run: interrupted while starting execution (\S+): it may have started", err)[1]
    name = arn.rsplit(":", 1)[1]
    assert re.fullmatch(UUID, name), err  # chosen by the command, so known before any answer
    assert arn.startswith(state_machine.replace(":stateMachine:", ":execution:") + ":")
    assert may_have_started(err, arn), err
    # before-send: it never left; before-parse: the service started it.
    assert executions(state_machine) == ([] if event == "before-send" else [arn])

    monkeypatch.setattr(follow, "_client", lambda service, region: boto3.client(service, region_name=region))
    assert main(["status", arn]) == (follow.EXIT_BAD_INPUT if event == "before-send" else follow.EXIT_RUNNING)
    capsys.readouterr()
    code, out, err = run(capsys, state_machine, "--name", name, "--no-follow")

    # A start of an execution that is running answers with it; of one that ended, with an error; none is added.
    assert (code, out) in ((0, arn + "\n"), (follow.EXIT_BAD_INPUT, "")), err
    assert executions(state_machine) == [arn]


def test_ctrl_c_after_the_answer_names_the_arn_and_how_to_follow_and_stop_it(monkeypatch, capsys, state_machine):
    interrupting(monkeypatch, "after-call.sfn.StartExecution")

    code, out, err = run(capsys, state_machine, "--region", "us-east-1")

    assert (code, out) == (follow.EXIT_INTERRUPTED, "")
    [arn] = executions(state_machine)
    assert err.splitlines() == [
        f"jobsync run: interrupted; execution {arn} started and goes on: jobsync status {arn} --follow"
        " --region us-east-1",
        f"to stop it: aws stepfunctions stop-execution --execution-arn {arn} --region us-east-1",
    ]

    # The line it printed follows the execution to its end.
    code = main(["status", arn, "--follow", "--poll-interval", "0.1", "--region", "us-east-1"])
    lines = command_output(capsys.readouterr().out).splitlines()
    assert code == follow.EXIT_SUCCEEDED
    assert lines[0] == f"execution {arn}"
    end = lines.index("result: SUCCEEDED")
    assert json.loads("\n".join(lines[end + 1 :]))["phase"] == "SUCCEEDED"
    assert lines[end - 1].split()[1:] == ["SUCCEEDED", "PyTorchJobSucceeded", "done"]


def test_ctrl_c_while_following_names_the_arn_and_exits_130(monkeypatch, capsys, state_machine):
    interrupting(monkeypatch, "before-send.sfn.GetExecutionHistory")

    code, out, err = run(capsys, state_machine)

    [arn] = executions(state_machine)
    assert code == follow.EXIT_INTERRUPTED
    assert out.splitlines()[0] == f"execution {arn}"
    assert err.splitlines() == [
        "",
        f"stopped following; the execution goes on: jobsync status {arn} --follow",
        f"to stop it: aws stepfunctions stop-execution --execution-arn {arn}",
    ]


def test_ctrl_c_in_any_other_command_is_one_line_and_exit_130(monkeypatch, capsys):
    class Interrupted(io.BytesIO):
        read = interrupt  # Ctrl-C while it waits for its input

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(Interrupted()))

    assert main(["evaluate", "-"]) == follow.EXIT_INTERRUPTED
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "jobsync evaluate: interrupted\n")
