"""`jobsync run`, `status` and `list` as real subprocesses against moto in server mode (``tests.support.cli``)."""

from __future__ import annotations

import json
import re

from harness.demo import clock_text
from jobsync_cli import follow
from tests.support.cli import INPUT, Service, cli_env, jobsync, service

LINE = re.compile(r"^\+\d{2}:\d{2}:\d{2}  (\S+)\s+(\S*)\s+(next wait \d+s|done|\S+ failed)$")


def expected_lines(svc: Service, arn: str) -> list[str]:
    """The lines `make demo` would print for the Status calls the harness recorded, after Submit's."""
    started = svc.sfn.describe_execution(executionArn=arn)["startDate"].timestamp()
    submit = next(
        call.result
        for call in svc.local.sfn.invocations
        if call.function_name == "jobsync-submit" and call.result and call.result.get("execution") == arn
    )
    lines = [f"+00:00:00  {submit['phase']:<10} {submit['reason']:<28} next wait {submit['waitSeconds']}s"]
    for poll in svc.local.polls(arn):
        wait = f"next wait {poll.wait_seconds}s" if poll.wait_seconds else "done"
        lines.append(f"{clock_text(poll.at - started)}  {poll.phase:<10} {poll.reason:<28} {wait}")
    return lines


def _split(stdout: str) -> tuple[str, list[str], list[str]]:
    """The execution line, the poll lines, and the result lines of `jobsync run`."""
    lines = stdout.splitlines()
    assert lines and lines[0].startswith("execution arn:aws:states:"), stdout
    end = next(index for index, line in enumerate(lines) if line.startswith("result: "))
    return lines[0].removeprefix("execution "), lines[1:end], lines[end:]


def test_success_prints_a_line_per_poll_then_the_output():
    with service("success") as svc:
        proc = svc.run("--name", "run-success")

        assert proc.returncode == follow.EXIT_SUCCEEDED, proc.stderr
        arn, polls, result = _split(proc.stdout)
        assert arn.endswith(":execution:jobsync-run-job:run-success")
        assert "\r" not in proc.stdout  # not a TTY: no progress lines
        assert all(LINE.match(line) for line in polls), polls
        assert polls == expected_lines(svc, arn)
        assert polls[0].split()[1:3] == ["PENDING", "NoStatus"]
        assert "RUNNING" in {line.split()[1] for line in polls}
        assert polls[-1].split()[1:] == ["SUCCEEDED", "PyTorchJobSucceeded", "done"]
        assert result[0] == "result: SUCCEEDED"
        output = json.loads("\n".join(result[1:]))
        assert output["phase"] == "SUCCEEDED"
        assert output["polls"] == len(polls) - 1
        assert proc.stderr == ""


def test_failure_prints_the_error_and_the_cause_and_exits_job_failed():
    with service("failure") as svc:
        proc = svc.run()

        assert proc.returncode == follow.EXIT_JOB_FAILED, proc.stderr
        arn, polls, result = _split(proc.stdout)
        assert polls == expected_lines(svc, arn)
        assert polls[-1].split()[1:] == ["FAILED", "PyTorchJobFailed", "done"]
        assert result[:2] == ["result: FAILED  error: JobFailed", "cause:"]
        end = result.index("log tail:")
        cause = json.loads("\n".join(result[2:end]))  # pretty-printed over several lines
        assert len(result[2:end]) > 1
        assert cause["reason"] == "PyTorchJobFailed"
        assert cause["deleted"] is True
        assert "CUDA error: out of memory" in "\n".join(result[end + 1 :])

        status = svc.jobsync("status", arn)
        assert status.returncode == follow.EXIT_JOB_FAILED, status.stderr
        assert f"execution  {arn}" in status.stdout
        assert "status     FAILED" in status.stdout
        assert re.search(r"^last poll  \+\d\d:\d\d:\d\d  FAILED +PyTorchJobFailed +done$", status.stdout, re.M)
        assert "result: FAILED  error: JobFailed" in status.stdout
        assert status.stdout.count("CUDA error: out of memory") == 1  # the log tail once
        assert proc.stdout.count("CUDA error: out of memory") == 1


def test_status_takes_the_region_from_the_arn():
    with service("success") as svc:
        proc = svc.run("--no-follow")
        arn = proc.stdout.strip()
        svc.local.sfn.wait(arn, timeout_s=30)
        env = {k: v for k, v in cli_env(svc.endpoint).items() if k not in ("AWS_REGION", "AWS_DEFAULT_REGION")}

        status = jobsync(svc.endpoint, "status", arn, env=env)

        assert status.returncode == follow.EXIT_SUCCEEDED, status.stderr
        assert "status     SUCCEEDED" in status.stdout


def test_timeout_exits_job_timed_out(tmp_path):
    execution_input = json.loads(INPUT.read_text())
    execution_input["timeoutSeconds"] = 900  # the simulated job runs 31 minutes
    path = tmp_path / "input.json"
    path.write_text(json.dumps(execution_input))
    with service("success") as svc:
        proc = svc.run(input_path=path)

        assert proc.returncode == follow.EXIT_JOB_TIMED_OUT, proc.stdout + proc.stderr
        _, polls, result = _split(proc.stdout)
        assert polls[-1].split()[1] == "TIMED_OUT"
        assert result[0] == "result: FAILED  error: JobTimedOut"


def test_a_step_error_exits_other_error(tmp_path):
    path = tmp_path / "input.json"
    path.write_text(json.dumps({"job": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}}))
    with service("success") as svc:
        proc = svc.run()  # a good run first, so list has both
        assert proc.returncode == 0, proc.stderr
        bad = svc.run("--name", "bad-input", input_path=path)

        assert bad.returncode == follow.EXIT_OTHER_ERROR, bad.stdout + bad.stderr
        _, polls, result = _split(bad.stdout)
        assert [line.split()[1:] for line in polls] == [["ERROR", "InvalidInput", "Submit", "failed"]]
        assert result[0] == "result: FAILED  error: InvalidInput"
        assert "is not allowed here" in json.loads("\n".join(result[2:]))["errorMessage"]

        listing = svc.jobsync("list", "--state-machine-arn", svc.state_machine_arn)
        assert listing.returncode == 0, listing.stderr
        rows = listing.stdout.splitlines()
        assert len(rows) == 2
        assert re.match(r"^bad-input +FAILED +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  \S+$", rows[0]), rows
        assert re.match(r"^\S+ +SUCCEEDED +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", rows[1]), rows

        only_failed = svc.jobsync("list", "--state-machine-arn", svc.state_machine_arn, "--status", "FAILED")
        assert [row.split()[0] for row in only_failed.stdout.splitlines()] == ["bad-input"]


def test_no_follow_prints_the_arn_and_status_follows_up():
    with service("success") as svc:
        svc.create_stack("jobsync")

        proc = svc.jobsync("run", str(INPUT), "--stack", "jobsync", "--no-follow", "--name", "detached")

        assert proc.returncode == 0, proc.stderr
        arn = proc.stdout.strip()
        assert re.fullmatch(r"arn:aws:states:us-east-1:\d{12}:execution:jobsync-run-job:detached", arn)
        svc.local.sfn.wait(arn, timeout_s=30)
        status = svc.jobsync("status", arn)
        assert status.returncode == follow.EXIT_SUCCEEDED, status.stderr
        assert "status     SUCCEEDED" in status.stdout
        assert "result: SUCCEEDED" in status.stdout

        listing = svc.jobsync("list", "--stack", "jobsync")
        assert listing.stdout.split()[:2] == ["detached", "SUCCEEDED"]


SM = "arn:aws:states:us-east-1:123456789012:stateMachine:"
BAD_INPUTS = [
    (["run", "no-such-file.json", "--state-machine-arn", SM + "x"], "no-such-file.json: no such file"),
    (["run", "README.md", "--state-machine-arn", SM + "x"], "README.md: not JSON"),
    (["run", str(INPUT), "--stack", "no-such-stack"], "no such stack: no-such-stack"),
    (["run", str(INPUT), "--state-machine-arn", SM + "nope"], "no such state machine"),
    (["run", str(INPUT), "--state-machine-arn", "not-an-arn"], "cannot start the execution: InvalidArn"),
    (["status", "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:nope"], "no such execution"),
    (["list", "--stack", "no-such-stack"], "no such stack: no-such-stack"),
]


def test_bad_input_is_one_line_on_stderr_and_exit_2():
    with service("success") as svc:
        for args, message in BAD_INPUTS:
            proc = svc.jobsync(*args)

            assert proc.returncode == follow.EXIT_BAD_INPUT, (args, proc.stdout + proc.stderr)
            assert proc.stdout == "", args
            assert len(proc.stderr.splitlines()) == 1, (args, proc.stderr)
            assert message in proc.stderr, (args, proc.stderr)
            assert "Traceback" not in proc.stderr and "testing" not in proc.stderr, args


def test_unreachable_endpoint_is_one_line_and_exit_2():
    proc = jobsync("http://127.0.0.1:9", "status", "arn:aws:states:us-east-1:123456789012:execution:x:y")

    assert proc.returncode == follow.EXIT_BAD_INPUT
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
