"""`make demo` reads as a story: no interpreter dump, a Cause that is JSON, watch lines that say what changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import demo

ROOT = Path(__file__).resolve().parents[2]


def run_demo(scenario: str, **env: str) -> subprocess.CompletedProcess[str]:
    pythonpath = os.pathsep.join([str(ROOT / "layers" / "jobsync"), str(ROOT / "cli"), str(ROOT)])
    return subprocess.run(
        [sys.executable, "-m", "harness.demo", "--scenario", scenario],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": pythonpath, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_failing_demo_prints_no_interpreter_dump_and_its_cause_is_an_object():
    done = run_demo("failure")
    assert done.returncode == 3  # JobFailed, as jobsync run gives it
    assert "FailureEventException" not in done.stderr and "StateType" not in done.stderr
    assert done.stderr == ""
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["error"] == "JobFailed"
    assert isinstance(result["cause"], dict) and result["cause"]["reason"] == "PyTorchJobFailed"


@pytest.mark.parametrize("mode", ["poll", "watch"])
def test_the_restarting_demo_shows_its_restart(mode, capsys, monkeypatch):
    if mode == "watch":
        monkeypatch.setenv("JOBSYNC_COMPLETION_MODE", "watch")
        monkeypatch.setenv("JOBSYNC_WATCH_SECONDS", "840")
    assert demo.main(["--scenario", "restarting"]) == 0
    lines = capsys.readouterr().out.splitlines()
    polls, result = lines[:-1], json.loads(lines[-1])
    assert result["status"] == "SUCCEEDED"
    assert any("PyTorchJobRestarting" in line and "was PyTorchJobRunning" in line for line in polls)
    assert polls[-1].endswith("done") and not any(line.endswith("done") for line in polls[:-1])
    if mode == "watch":
        # Each line is when the watch answered: the times differ, and each says what changed.
        times = [line.split()[0] for line in polls]
        assert len(set(times)) == len(times)
        assert all(("was " in line) or ("no change" in line) or ("first look" in line) for line in polls)
