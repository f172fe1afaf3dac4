"""`jobsync stop EXECUTION [--keep-job]` against the local run: the stop's cause, then the cleanup's outcome by uid.

The local run has the stack's ExecutionEnded rule (``execution_events``): a stopped execution's status
change event reaches the cleanup function, which records what it did in the table the command reads.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

from jobsync.aws.cleanups import CleanupRecords
from jobsync_cli import follow
from jobsync_cli.stop import children
from tests.support.cli import INPUT, RUN_JOBS_INPUT, Service, service

UID = r"[0-9a-f-]{36}"


def running(svc: Service, path: Path = INPUT, machine: str | None = None, looks: int = 1) -> str:
    """An execution started over HTTP, its jobs created and each held in its look number ``looks`` until it is
    stopped: virtual time stands still meanwhile, so the jobs are still running when the command stops it."""
    status = svc.local.sfn.handlers["jobsync-status"]
    held = threading.Semaphore(0)

    def held_until_stopped(event: Any, context: Any) -> Any:
        if event.get("polls") == looks - 1:
            held.release()
            deadline = time.monotonic() + 60
            while not _stopped(event["execution"]) and time.monotonic() < deadline:
                time.sleep(0.02)
        return status(event, context)

    svc.local.sfn.handlers["jobsync-status"] = held_until_stopped
    proc = svc.jobsync(
        "run", str(path), "--state-machine-arn", machine or svc.state_machine_arn, "--no-follow", timeout=60
    )
    arn = proc.stdout.strip()
    assert arn.startswith("arn:aws:states:"), proc.stderr
    jobs = len(json.loads(path.read_text()).get("jobs") or [None])
    for _ in range(jobs):
        assert held.acquire(timeout=60), f"{arn} did not start its jobs"
    return arn


def _stopped(arn: str) -> bool:
    """Whether the execution (or, for a child, the run that started it) was stopped: moto's record of it."""
    from harness.sfn import moto

    execution = moto.backend("us-east-1").describe_execution(arn)
    env = execution.exec_worker.env if execution.exec_worker else None
    return bool(env is not None and moto.stopped(env))


def long_input(tmp_path: Path, **fields: object) -> Path:
    """The sample input, its job running for ten hours (the simulator's annotations): the stop comes first."""
    execution_input = json.loads(INPUT.read_text())
    execution_input["job"]["metadata"]["annotations"] = {
        "jobsync.local/scenario": "success",
        "jobsync.local/timings": '{"pending_s": 60, "run_s": 36000}',
    }
    execution_input.update(fields)
    path = tmp_path / "input.json"
    path.write_text(json.dumps(execution_input))
    return path


def test_stop_deletes_the_job_as_its_cleanup_says_and_shows_it_by_uid(tmp_path):
    with service("success", execution_events=True) as svc:
        svc.create_stack("jobsync")
        arn = running(svc, long_input(tmp_path))
        job = svc.local.jobs_left()[0]["name"]

        proc = svc.jobsync("stop", arn, "--cause", "wrong learning rate", timeout=120)
        description = svc.sfn.describe_execution(executionArn=arn)
        history = svc.sfn.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=1)["events"]
        left = svc.local.jobs_left()

    assert proc.returncode == follow.EXIT_SUCCEEDED, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"stopped {arn}"
    name = arn.rsplit(":", 1)[-1]
    assert re.fullmatch(rf"  {name}: PyTorchJob ml-training/{job} \(uid {UID}\)", lines[1]), lines
    assert lines[2] == "cleanup (the ExecutionEnded rule):"
    uid = re.search(rf"\(uid ({UID})\)", lines[1]).group(1)  # type: ignore[union-attr]
    assert lines[3] == f"  {name}: deleted: PyTorchJob ml-training/{job} (uid {uid}): deleted"
    assert description["status"] == "ABORTED"
    assert history[0]["executionAbortedEventDetails"] == {"error": "jobsync.Stopped", "cause": "wrong learning rate"}
    assert left == []


def test_keep_job_stops_the_execution_and_keeps_the_job_running(tmp_path):
    with service("success", execution_events=True) as svc:
        svc.create_stack("jobsync")
        arn = running(svc, long_input(tmp_path, cleanup="always"))

        proc = svc.jobsync("stop", arn, "--keep-job", timeout=120)
        left = svc.local.jobs_left()
        record = CleanupRecords(_table()).get(arn)

    assert proc.returncode == follow.EXIT_SUCCEEDED, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].split(": ", 2)[1] == "kept"
    assert "jobsync stop --keep-job" in proc.stdout
    # Kept, though its cleanup setting says always: still there, still going.
    assert [job["phase"] in ("PENDING", "RUNNING") for job in left] == [True]
    assert record is not None and record["job"]["uid"] and record["deleted"] is False


def test_stopping_a_run_of_several_jobs_shows_each_jobs_cleanup(tmp_path):
    execution_input = json.loads(RUN_JOBS_INPUT.read_text())
    for job in execution_input["jobs"]:  # every job runs for hours: the stop comes first
        job["job"]["metadata"]["annotations"]["jobsync.local/timings"] = '{"pending_s": 60, "run_s": 36000}'
        job["job"]["metadata"]["annotations"]["jobsync.local/scenario"] = "success"
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps(execution_input))
    with service("success", several=True) as svc:
        svc.create_stack("jobsync")
        arn = running(svc, path, machine=svc.run_jobs_arn)
        deadline = time.monotonic() + 60
        while len(children(svc.sfn, arn)) < 3:  # every job's RunJob execution started (through the Map Run)
            assert time.monotonic() < deadline, "the run's three RunJob executions did not start within 60 s"
            time.sleep(0.05)
        time.sleep(0.5)

        proc = svc.jobsync("stop", arn, timeout=120)
        left = svc.local.jobs_left()

    assert proc.returncode == follow.EXIT_SUCCEEDED, proc.stdout + proc.stderr
    outcomes = proc.stdout.split("cleanup (the ExecutionEnded rule):\n", 1)[1].splitlines()
    assert len(outcomes) == 3 and all(": deleted: PyTorchJob ml-training/mnist-lr-" in line for line in outcomes)
    assert left == []


def test_a_stop_of_an_ended_or_unknown_execution_is_one_line_and_exit_2():
    with service("success") as svc:
        svc.create_stack("jobsync")
        proc = svc.run("--no-follow")
        arn = proc.stdout.strip()
        svc.local.sfn.wait(arn, timeout_s=60)

        ended = svc.jobsync("stop", arn)
        unknown = svc.jobsync("stop", arn.rsplit(":", 1)[0] + ":nope")

    assert ended.returncode == unknown.returncode == follow.EXIT_BAD_INPUT
    assert ended.stderr.strip().endswith("already ended SUCCEEDED: nothing to stop")
    assert "no such execution" in unknown.stderr
    assert "Traceback" not in ended.stderr + unknown.stderr


def _table():
    import boto3

    return boto3.resource("dynamodb", region_name="us-east-1").Table("jobsync-table")
