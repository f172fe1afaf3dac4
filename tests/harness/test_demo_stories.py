"""`make demo` for every allowed kind, several jobs named line by line, callback mode's resume and notifier, and a
failing story that ends with its verdict: run as a user runs them (subprocesses, and make itself)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.lambdas import EVENTS, ROOT

TFJOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "TFJob",
    "metadata": {"name": "tf-mnist"},
    "spec": {
        "tfReplicaSpecs": {
            "Worker": {
                "replicas": 2,
                "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1"}]}},
            }
        }
    },
}
BATCH_JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "pi"},
    "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl:5.34"}]}}},
}


def demo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("JOBSYNC_")}
    return subprocess.run(
        [sys.executable, "-m", "harness.demo", *args],
        cwd=ROOT,
        env={**clean, "PYTHONPATH": os.pathsep.join(["layers/jobsync", "notifier", "cli", "."]), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def written(tmp_path: Path, job: dict, **fields: object) -> str:
    path = tmp_path / f"{job['kind']}.json"
    path.write_text(json.dumps({"job": job, "timeoutSeconds": 21600, **fields}))
    return str(path)


def test_a_tfjob_runs_in_the_demo_with_its_own_kind_allowed(tmp_path):
    proc = demo("--input", written(tmp_path, TFJOB))

    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    *lines, last = proc.stdout.splitlines()
    assert any("TFJobRunning" in line for line in lines)
    assert lines[-1].split()[1:3] == ["SUCCEEDED", "TFJobSucceeded"]
    result = json.loads(last)
    assert result["output"]["job"]["kind"] == "TFJob"
    assert [(j["name"].rsplit("-", 1)[0], j["phase"]) for j in result["jobsLeft"]] == [("tf-mnist", "SUCCEEDED")]
    assert proc.stderr == ""


def test_a_failing_batch_job_ends_failed_with_its_pods_log_and_exit_3(tmp_path):
    proc = demo("--input", written(tmp_path, BATCH_JOB), "--scenario", "failure", "--kinds", "Job")

    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert (result["error"], result["cause"]["reason"]) == ("JobFailed", "BackoffLimitExceeded")
    assert "CUDA error: out of memory" in result["cause"]["logTail"]  # the job's own pod's log
    assert [d["container"] for d in result["cause"]["diagnostics"]] == ["pi"]


def test_a_kind_the_deployment_does_not_allow_is_refused_in_one_clean_line(tmp_path):
    verdict = tmp_path / "verdict"
    proc = demo("--input", written(tmp_path, TFJOB), "--kinds", "pytorchjob", "--verdict-file", str(verdict))
    bad = demo("--input", written(tmp_path, TFJOB), "--kinds", "sparkjob")

    assert proc.returncode == 7
    assert proc.stderr == "" and "Traceback" not in proc.stdout and "stackTrace" not in proc.stdout
    assert json.loads(proc.stdout.splitlines()[-1])["cause"] == {
        "errorType": "InvalidInput",
        "errorMessage": "job.kind: kubeflow.org/v1/TFJob is not allowed here (allowed: kubeflow.org/v1/PyTorchJob)",
    }
    assert verdict.read_text().startswith("the story ended FAILED: InvalidInput: job.kind: kubeflow.org/v1/TFJob")
    assert bad.returncode == 2 and "KINDS: unknown kind 'sparkjob'" in bad.stdout and bad.stderr == ""


def test_several_jobs_each_line_names_its_job_and_the_children_are_in_input_order():
    proc = demo("--input", str(EVENTS / "run-jobs-input.json"))

    assert proc.returncode == 3, proc.stderr
    *lines, last = proc.stdout.splitlines()
    asked = [job["job"]["metadata"]["name"] for job in json.loads((EVENTS / "run-jobs-input.json").read_text())["jobs"]]
    looks = [line for line in lines if line.startswith("+")]
    for line in looks:
        index, job = re.match(r"^\+\d\d:\d\d:\d\d  \[(\d)\] (\S+)", line).groups()  # type: ignore[union-attr]
        assert job.rsplit("-", 1)[0] == asked[int(index)]
    assert not any("watching again" in line for line in lines)
    children = json.loads(last)["jobs"]["children"]
    assert [(c["index"], c["job"].rsplit("-", 1)[0], c["phase"]) for c in children] == [
        (0, asked[0], "SUCCEEDED"),
        (1, asked[1], "FAILED"),
        (2, asked[2], "SUCCEEDED"),
    ]


def test_callback_mode_shows_the_notifiers_lines_and_the_event_that_woke_the_wait():
    proc = demo("--mode", "callback")

    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    *lines, _ = proc.stdout.splitlines()
    assert all(line.startswith("+") for line in lines)
    notifier = [line for line in lines if line.split()[1] == "notifier"]
    assert any(line.endswith("notifier started") for line in notifier)
    published = [line for line in notifier if "phase change published" in line]
    assert [line.split()[-1] for line in published][-1] == "SUCCEEDED"
    woke = next(i for i, line in enumerate(lines) if "the notifier's event" in line and line.endswith("woke the wait"))
    assert lines.index(published[-1]) < woke  # what the notifier said, then what it caused
    assert lines[woke + 1].split()[1:3] == ["SUCCEEDED", "PyTorchJobSucceeded"] and lines[woke + 1].endswith("done")
    # The wait's look came when the event arrived: within one step of the token wait's virtual clock (30 s),
    # which moves on between wall-clock slices while the notifier, a process of its own, sends the event.
    event_at, look_at = (clock(lines[i].split()[0]) for i in (woke, woke + 1))
    assert 0 <= look_at - event_at <= 30, (lines[woke], lines[woke + 1])
    assert proc.stderr == ""


def clock(text: str) -> int:
    """``+HH:MM:SS`` as seconds."""
    hours, minutes, seconds = (int(part) for part in text.lstrip("+").split(":"))
    return hours * 3600 + minutes * 60 + seconds


def make_demo(*args: str) -> subprocess.CompletedProcess[str]:
    """``make demo ARGS`` as a user types it (the installed venv is taken as up to date); its verdict file in a
    folder of its own, so that two runs of the suite at once (CI's today and four years ahead) keep theirs."""
    with tempfile.TemporaryDirectory(prefix="jobsync-demo-") as verdicts:
        return subprocess.run(
            [
                "make",
                "--no-print-directory",
                "-o",
                ".venv/.installed",
                "demo",
                f"DEMO_VERDICT={verdicts}/verdict",
                *args,
            ],
            cwd=ROOT,
            env={k: v for k, v in os.environ.items() if not k.startswith(("JOBSYNC_", "MAKE"))},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


def test_make_demo_of_a_failing_story_ends_with_its_verdict_not_makes_error_line():
    failed = make_demo("SCENARIO=failure")
    passed = make_demo()

    assert failed.returncode != 0 and passed.returncode == 0, passed.stdout[-1000:] + passed.stderr
    last = failed.stderr.splitlines()[-1]
    assert re.fullmatch(
        r"Makefile:\d+: \*\*\* the story ended FAILED: JobFailed: PyTorchJob ml-training/\S+ is failed because "
        r"1 Worker replica\(s\) failed\. \(exit 3\)\.  Stop\.",
        last,
    ), failed.stderr
    assert "Error 1" not in failed.stderr and "Error" not in failed.stderr.replace(last, "")
    assert json.loads(failed.stdout.splitlines()[-1])["error"] == "JobFailed"
    assert passed.stderr == "" and json.loads(passed.stdout.splitlines()[-1])["status"] == "SUCCEEDED"


def test_a_publish_logged_after_the_clock_stepped_is_placed_at_the_resume_it_caused():
    from harness.story import Entry, _published_at_their_resume

    resume = Entry(7291.0, "SUCCEEDED", "the notifier's event", False, text="woke the wait")
    published = Entry(7321.0, "notifier", "info", False, text="phase change published: PyTorchJob a/b SUCCEEDED")
    started = Entry(0.0, "notifier", "info", False, text="notifier started")
    late = Entry(9000.0, "notifier", "info", False, text="phase change published: PyTorchJob a/c SUCCEEDED")

    placed = _published_at_their_resume([started, published, late], [resume])

    assert [e.at for e in placed] == [0.0, 7291.0, 9000.0]  # only within one clock step (30 s) of a Resume
