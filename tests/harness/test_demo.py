"""`make demo` as a user runs it: a subprocess, each completion mode, the result line last."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.lambdas import ROOT


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(["layers/jobsync", "notifier", "cli", "."])}
    return subprocess.run(
        [sys.executable, "-m", "harness.demo", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("mode", ["poll", "watch", "callback"])
def test_the_demo_succeeds_in_every_completion_mode(mode):
    proc = demo("--mode", mode)
    assert proc.returncode == 0, proc.stderr[-2000:]
    *lines, last = proc.stdout.strip().splitlines()
    result = json.loads(last)
    assert result["status"] == "SUCCEEDED" and result["output"]["phase"] == "SUCCEEDED"
    assert lines and all(line.startswith("+") for line in lines)  # one line per poll before the result


def test_an_unknown_mode_is_a_usage_error():
    proc = demo("--mode", "carrier-pigeon")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_a_template_input_runs_locally_like_an_inline_job():
    # make demo serves events/templates/ as the bucket events/submit-template.json names.
    proc = demo("--input", "events/run-job-template-input.json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "SUCCEEDED" and result["jobsLeft"] == []  # cleanup: always


def test_an_input_that_is_not_an_object_prints_the_result_line():
    proc = demo("--input", "tests/data/not_an_object.json")
    assert proc.returncode == 7  # a step's error, as jobsync run gives it
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (result["status"], result["error"]) == ("FAILED", "InvalidInput")
    assert "must be a JSON object, got array" in result["cause"]


def test_a_kubeconfig_that_points_nowhere_is_refused_at_once_in_one_line(tmp_path):
    import socket

    from tests.support.cli import write_kubeconfig

    with socket.socket() as closed:  # a port nothing listens on: bound, never listened
        closed.bind(("127.0.0.1", 0))
        server = f"http://127.0.0.1:{closed.getsockname()[1]}"
        kubeconfig = write_kubeconfig(tmp_path / "config", server)
        verdict = tmp_path / "verdict"
        proc = demo("--kubeconfig", str(kubeconfig), "--verdict-file", str(verdict))

    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stdout.splitlines()
    result = json.loads(line)
    assert result["error"] == "InvalidInput", result
    assert "the API server does not answer" in result["cause"] and str(kubeconfig) in result["cause"]
    assert proc.stderr == "" and "Traceback" not in proc.stdout
    assert verdict.read_text().startswith("the story did not run: ")
