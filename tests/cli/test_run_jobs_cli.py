"""`jobsync run` and `status --follow` of RunJobs: job by job, each line naming its job, a table, the worst outcome.

The command runs as a subprocess against the local run (``tests.support.cli``); the live table is
checked as a person sees it, under a pseudo-terminal; piped, the output is plain lines.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from jobsync_cli import follow
from jobsync_cli.runjobs import WORST_FIRST, worst
from tests.support.cli import INPUT, RUN_JOBS_INPUT, in_terminal, service
from tests.support.lambdas import EVENTS

FAILFAST_INPUT = EVENTS / "run-jobs-failfast-input.json"
# +HH:MM:SS  [index] job  PHASE  Reason  tail
CHILD_LINE = re.compile(r"^\+\d{2}:\d{2}:\d{2}  \[(\d)\] (\S+)\s+([A-Z_]+)\s+(\S*)\s+(.*)$")
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def asked_names(path: Any) -> list[str]:
    return [job["job"]["metadata"]["name"] for job in json.loads(path.read_text())["jobs"]]


def split(stdout: str) -> tuple[list[str], list[str], list[str]]:
    """The job lines, the summary table (header first), and what follows it."""
    lines = stdout.splitlines()
    assert lines[0].startswith("execution arn:aws:states:"), stdout
    head = next(i for i, line in enumerate(lines) if line.startswith("#  job"))
    end = next(i for i in range(head, len(lines)) if not lines[i])
    return [line for line in lines[1:head] if line], lines[head:end], lines[end + 1 :]


def test_worst_outcome_order():
    assert worst([]) == 0
    assert worst([0, 0]) == 0
    assert worst([0, 7, 3]) == 3  # failFast: the failure, not the siblings it stopped
    assert worst([4, 7]) == 7
    assert worst([4, 0]) == 4
    assert worst([6, 5]) == 5
    assert WORST_FIRST[0] == follow.EXIT_JOB_FAILED


def test_a_run_of_several_jobs_is_followed_job_by_job_in_input_order():
    with service("success", several=True) as svc:
        svc.create_stack("jobsync")
        proc = svc.jobsync("run", str(RUN_JOBS_INPUT), "--stack", "jobsync", "--poll-interval", "0.2", timeout=300)

        assert proc.returncode == follow.EXIT_JOB_FAILED, proc.stdout + proc.stderr
        assert proc.stderr == ""
        assert "\x1b" not in proc.stdout and "\r" not in proc.stdout  # piped: plain lines
        arn = proc.stdout.splitlines()[0].removeprefix("execution ")
        assert ":execution:jobsync-run-jobs:" in arn  # --stack picked RunJobs for an input with jobs
        lines, table, rest = split(proc.stdout)
        asked = asked_names(RUN_JOBS_INPUT)
        matched = [CHILD_LINE.match(line) for line in lines]
        assert all(matched), lines
        by_job: dict[int, list[tuple[str, str, str]]] = {}
        for match in matched:
            assert match is not None
            index, job, phase, reason, tail = match.groups()
            assert job.startswith(asked[int(index)] + "-")  # each line names its job: the created one
            by_job.setdefault(int(index), []).append((phase, reason, tail))
        assert sorted(by_job) == [0, 1, 2]
        for seen in by_job.values():
            # a line per change: never the same phase and reason twice in a row
            assert all(a[:2] != b[:2] for a, b in itertools.pairwise(seen)), seen
            assert seen[0][:2] == ("PENDING", "NoStatus")
            assert seen[-1][2] == "done"
        assert [s[-1][0] for _, s in sorted(by_job.items())] == ["SUCCEEDED", "FAILED", "SUCCEEDED"]
        clocks = [line.split()[0] for line in lines]
        assert clocks == sorted(clocks)  # in the order they happened

        # The table: input order, the created jobs, their phases, the failed one's error.
        rows = [row.split() for row in table[1:]]
        assert [row[0] for row in rows] == ["0", "1", "2"]
        assert [row[1].rsplit("-", 1)[0] for row in rows] == asked
        assert [row[2] for row in rows] == ["SUCCEEDED", "FAILED", "SUCCEEDED"]
        assert "JobFailed" in rows[1]
        assert rest[0] == "result: FAILED  error: JobsFailed  (1 FAILED, 2 SUCCEEDED of 3)"
        failed = "\n".join(rest)
        assert f"[1] {rows[1][1]}: result: FAILED  error: JobFailed" in failed
        assert failed.count("CUDA error: out of memory") == 1  # the failed job's log tail, once

        # status --follow of the same run reads it the same way, from its history alone.
        again = svc.jobsync("status", arn, "--follow", "--poll-interval", "0.2", timeout=120)
        assert again.returncode == follow.EXIT_JOB_FAILED, again.stderr
        assert split(again.stdout)[1] == table


def test_fail_fast_exits_with_the_failure_and_shows_the_stopped_jobs():
    with service("success", several=True) as svc:
        proc = svc.jobsync(
            "run", str(FAILFAST_INPUT), "--state-machine-arn", svc.run_jobs_arn, "--poll-interval", "0.2", timeout=300
        )

        assert proc.returncode == follow.EXIT_JOB_FAILED, proc.stdout + proc.stderr
        lines, table, rest = split(proc.stdout)
        phases = [row.split()[2] for row in table[1:]]
        assert phases == ["ABORTED", "FAILED", "ABORTED"]
        assert rest[0].startswith("result: FAILED  error: JobFailed")
        assert any(line.split()[3] == "ABORTED" and line.endswith("ended ABORTED") for line in lines), lines


def test_an_input_sent_to_the_wrong_state_machine_is_refused_saying_which_to_use():
    with service("success", several=True) as svc:
        several = svc.jobsync("run", str(RUN_JOBS_INPUT), "--state-machine-arn", svc.state_machine_arn)
        one = svc.jobsync("run", str(INPUT), "--state-machine-arn", svc.run_jobs_arn)

        for proc in (several, one):
            assert proc.returncode == follow.EXIT_BAD_INPUT, proc.stdout + proc.stderr
            assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1
        assert "has 'jobs': it is RunJobs' input" in several.stderr and "--stack" in several.stderr
        assert "is one job's input (no 'jobs')" in one.stderr and "RunJobs" in one.stderr
        assert svc.sfn.list_executions(stateMachineArn=svc.state_machine_arn)["executions"] == []
        assert svc.sfn.list_executions(stateMachineArn=svc.run_jobs_arn)["executions"] == []


def test_stack_without_a_run_jobs_output_says_so():
    with service("success", several=True) as svc:
        svc.create_stack("old", {"StateMachineArn": svc.state_machine_arn})

        proc = svc.jobsync("run", str(RUN_JOBS_INPUT), "--stack", "old")

        assert proc.returncode == follow.EXIT_BAD_INPUT
        assert "stack old has no RunJobsStateMachineArn output" in proc.stderr


def test_on_a_terminal_a_live_table_shows_every_job_and_the_lines_scroll_above_it():
    with service("success", several=True) as svc:
        shown = in_terminal(
            svc.endpoint, "run", str(RUN_JOBS_INPUT), "--state-machine-arn", svc.run_jobs_arn, "--poll-interval", "0.5"
        )

    assert shown.code == follow.EXIT_JOB_FAILED, shown.raw[-2000:]
    text = ESCAPE.sub("", shown.raw).replace("\r\n", "\n")
    # A frame of the live table: the run's name and time, one row a job in input order, box drawn.
    frames = re.findall(r"RunJobs \S+  \+\d\d:\d\d:\d\d  .*?\n(?:.*\n){3}((?:│.*│\n){3})", text)
    assert frames, text[:3000]
    rows = [[cell.strip() for cell in row.strip("│").split("│")] for row in frames[-1].splitlines()]
    assert [row[0] for row in rows] == ["0", "1", "2"]
    assert all(row[2] in {"WAITING", "STARTING", "PENDING", "RUNNING", "SUCCEEDED", "FAILED"} for row in rows)
    assert "\x1b[2K" in shown.raw and "\x1b[1A" in shown.raw  # rewritten in place
    # What stays: the change lines, then the summary table, then the result.
    assert re.search(r"\+\d\d:\d\d:\d\d  \[1\] mnist-lr-1p0-\w+ +FAILED +PyTorchJobFailed +done", text)
    assert re.search(r"^1  mnist-lr-1p0-\w+ +FAILED +PyTorchJobFailed +JobFailed", text, re.M)
    assert "result: FAILED  error: JobsFailed" in text
