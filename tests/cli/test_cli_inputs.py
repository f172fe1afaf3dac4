"""`python -m jobsync_cli evaluate` on awkward timestamps and large JSON: a verdict or a clear error, alike everywhere.

Run as real subprocesses (tests/cli/test_cli.py's ``run``), so a traceback or
a dependence on the machine's time zone shows as it would to a developer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def run(path: str, tz: str | None = None) -> tuple[int, list[str], str]:
    env = {**os.environ, "PYTHONPATH": "layers/jobsync:cli"}
    if tz is not None:
        env["TZ"] = tz
    proc = subprocess.run(
        [sys.executable, "-m", "jobsync_cli", "evaluate", path],
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=False,
    )
    return proc.returncode, proc.stdout.decode().splitlines(), proc.stderr.decode()


def job(*conditions: dict) -> dict:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "mnist", "namespace": "ml-training"},
        "status": {"conditions": list(conditions)},
    }


def cond(ctype: str, at: str) -> dict:
    return {"type": ctype, "status": "True", "reason": f"PyTorchJob{ctype}", "lastTransitionTime": at}


OVERFLOW = "9999-12-31T23:00:00-05:00"  # 10000-01-01T04:00Z: past what a datetime holds in UTC


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("json", json.dumps(job(cond("Running", OVERFLOW)))),
        ("json-two", json.dumps(job(cond("Running", OVERFLOW), cond("Failed", "2024-11-18T21:25:24Z")))),
        (
            "yaml",
            f"kind: PyTorchJob\napiVersion: kubeflow.org/v1\nstatus:\n  conditions:\n"
            f"  - {{type: Running, status: 'True', lastTransitionTime: {OVERFLOW}}}\n",
        ),
        (
            "yaml-naive",
            "kind: PyTorchJob\napiVersion: kubeflow.org/v1\nstatus:\n  conditions:\n"
            "  - {type: Succeeded, status: 'True', lastTransitionTime: 9999-12-31T23:59:59}\n"
            "  - {type: Failed, status: 'True', lastTransitionTime: 0001-01-01T00:00:00+01:00}\n",
        ),
    ],
)
def test_an_out_of_range_timestamp_gives_a_json_line_never_a_traceback(tmp_path, name, text):
    path = tmp_path / f"overflow.{'json' if name.startswith('json') else 'yaml'}"
    path.write_text(text)
    code, lines, stderr = run(str(path))
    assert "Traceback" not in stderr and "OverflowError" not in stderr, stderr
    assert code in (0, 2) and len(lines) == 1, (code, lines, stderr)
    result = json.loads(lines[0])
    assert ("phase" in result) if code == 0 else ("error" in result and result["detail"])


ZONELESS = job(cond("Succeeded", "2024-11-18T10:00:00"), cond("Failed", "2024-11-18T05:00:00Z"))


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_a_timestamp_without_a_zone_is_utc_whatever_the_machines_time_zone(tmp_path, suffix):
    # Succeeded at 10:00 (no zone) against Failed at 05:00Z: in UTC Succeeded is later; read as
    # Tokyo time (01:00Z) it would be earlier, and the verdict would flip.
    path = tmp_path / f"zoneless.{suffix}"
    if suffix == "json":
        path.write_text(json.dumps(ZONELESS))
    else:
        path.write_text(json.dumps(ZONELESS).replace('"2024-11-18T10:00:00"', "2024-11-18T10:00:00"))
    verdicts = {}
    for tz in ("UTC", "Asia/Tokyo", "America/Los_Angeles"):
        code, lines, stderr = run(str(path), tz)
        assert code == 0 and len(lines) == 1, (tz, lines, stderr)
        verdicts[tz] = json.loads(lines[0])
    assert {v["phase"] for v in verdicts.values()} == {"SUCCEEDED"}, verdicts
    assert len({json.dumps(v, sort_keys=True) for v in verdicts.values()}) == 1


def test_a_large_json_file_is_read_as_json(tmp_path):
    # 2,200 conditions (about 255 KB, just under the 256 KiB bound of a state's payload). No timing is
    # asserted (the machines are shared); the run is what matters: the verdict comes back, from the latest
    # condition.
    conditions = [cond("Running", f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z") for i in range(2_200)]
    conditions.append(cond("Succeeded", "2024-01-02T00:00:00Z"))
    path = tmp_path / "large.json"
    path.write_text(json.dumps(job(*conditions)))
    assert 200_000 < path.stat().st_size <= 256 * 1024
    code, lines, stderr = run(str(path))
    assert code == 0 and json.loads(lines[0])["phase"] == "SUCCEEDED", (lines, stderr)


def test_json_that_is_not_yaml_compatible_still_reads_and_yaml_still_works(tmp_path):
    # Tabs are fine in JSON but not in YAML indentation; YAML-only syntax still goes to the YAML loader.
    path = tmp_path / "tabs.json"
    path.write_text(json.dumps(job(cond("Succeeded", "2024-11-18T21:25:24Z")), indent="\t"))
    code, lines, _ = run(str(path))
    assert code == 0 and json.loads(lines[0])["phase"] == "SUCCEEDED"
    path = tmp_path / "job.yaml"
    path.write_text("kind: PyTorchJob\napiVersion: kubeflow.org/v1\nstatus: {conditions: []}\n")
    code, lines, _ = run(str(path))
    assert code == 0 and len(lines) == 1
