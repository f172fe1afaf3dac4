"""`python -m jobsync_cli evaluate FILE`, run as a real subprocess the way a developer runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from tests.payloads import PAYLOADS, load_payload
from tests.support.lambdas import EVENTS, ROOT


def run(*args: str, stdin: str | bytes | None = None) -> tuple[int, dict, str]:
    env = {**os.environ, "PYTHONPATH": "layers/jobsync:cli"}
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run(
        [sys.executable, "-m", "jobsync_cli", *args],
        input=data,
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )
    out = proc.stdout.decode()
    lines = out.splitlines()
    assert len(lines) == 1, f"expected one JSON line, got {out!r} (stderr {proc.stderr.decode()!r})"
    return proc.returncode, json.loads(lines[0]), proc.stderr.decode()


def test_json_file():
    code, result, _ = run("evaluate", str(EVENTS / "evaluate-pytorchjob-succeeded-index5.json"))

    assert code == 0
    assert result == {
        "phase": "SUCCEEDED",
        "reason": "PyTorchJobSucceeded",
        "message": "PyTorchJob hyperpod-ns-test-team/hyperpod-cli-test successfully completed.",
        "since": "2024-11-18T21:25:24Z",
        "kind": "PyTorchJob",
        "terminal": True,
    }


def test_yaml_file_with_comments():
    code, result, _ = run("evaluate", str(PAYLOADS / "kubeflow_v1" / "pytorchjob_restarting.yaml"))

    assert code == 0
    assert result["phase"] == "RUNNING"
    assert "Restarting" in result["reason"]


def test_relative_path_from_the_repo_root():
    code, result, _ = run("evaluate", "tests/payloads/batch/job_failed.yaml")

    assert (code, result["phase"]) == (0, "FAILED")


def test_stdin():
    text = (PAYLOADS / "sagemaker" / "trainingjob_inprogress.yaml").read_text()

    code, result, _ = run("evaluate", "-", stdin=text)

    assert (code, result["phase"], result["kind"]) == (0, "RUNNING", "TrainingJob")


def test_eks_call_empty_list_is_a_verdict():
    code, result, _ = run("evaluate", str(EVENTS / "evaluate-ekscall-list-empty.json"))

    assert (code, result["phase"], result["terminal"]) == (0, "NOT_FOUND", True)


@pytest.mark.parametrize(
    ("stdin", "error", "detail"),
    [
        ('{"kind": "PyTorchJob", ', "unparseable", ""),
        ("[1, 2, 3]", "cannot evaluate", "expected a JSON object, got list"),
        ("", "cannot evaluate", "expected a JSON object, got nothing"),
        ("apiVersion: v1\nkind: Pod\n", "cannot evaluate", "unsupported kind: apiVersion 'v1' kind 'Pod'"),
        ("kind: PyTorchJob\n", "cannot evaluate", "field 'apiVersion'"),
        (b"\xff\xfe kind", "unreadable", ""),
    ],
)
def test_bad_input_exits_2_with_a_json_error(stdin, error, detail):
    code, result, _ = run("evaluate", "-", stdin=stdin)

    assert code == 2
    assert set(result) == {"error", "detail"}
    assert result["error"] == error
    assert detail in result["detail"]


def test_missing_file_exits_2_with_a_json_error(tmp_path):
    code, result, _ = run("evaluate", str(tmp_path / "nope.json"))

    assert code == 2
    assert result["error"] == "unreadable"
    assert "nope.json" in result["detail"]


def test_no_command_is_a_usage_error():
    proc = subprocess.run(
        [sys.executable, "-m", "jobsync_cli"],
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": "layers/jobsync:cli"},
        timeout=60,
        check=False,
    )

    assert proc.returncode == 2
    assert b"{evaluate,preflight,run,status,list,wait,logs,stop,submit}" in proc.stderr  # the usage lists every command


def run_lines(*args: str, stdin: str | None = None) -> tuple[int, list[str], str]:
    """Every line a command prints (a List gives several), its exit status and its stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "jobsync_cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": "layers/jobsync:cli"},
        timeout=60,
        check=False,
    )
    return proc.returncode, proc.stdout.splitlines(), proc.stderr


def kubectl_list(*names: str, kind: str = "List") -> str:
    """What ``kubectl get pytorchjobs -o yaml`` prints: a List of the payloads' objects."""
    items = [load_payload(f"kubeflow_v1/{name}.yaml") for name in names]
    return yaml.safe_dump({"apiVersion": "v1", "items": items, "kind": kind, "metadata": {"resourceVersion": ""}})


def test_a_kubectl_list_gives_one_line_per_item_naming_it():
    code, lines, stderr = run_lines(
        "evaluate", "-", stdin=kubectl_list("pytorchjob_running", "pytorchjob_succeeded_at_index5")
    )

    assert code == 0, stderr
    results = [json.loads(line) for line in lines]
    names = ("pytorchjob_running", "pytorchjob_succeeded_at_index5")
    expected = [load_payload(f"kubeflow_v1/{name}.yaml")["metadata"] for name in names]
    assert [(r["name"], r["namespace"]) for r in results] == [(m["name"], m.get("namespace")) for m in expected]
    assert [r["phase"] for r in results] == ["RUNNING", "SUCCEEDED"]
    assert stderr == ""


def test_a_typed_list_gives_its_kind_to_items_without_one():
    text = (PAYLOADS / "batch" / "job_complete.yaml").read_text()
    job = yaml.safe_load(text)
    job.pop("apiVersion"), job.pop("kind")  # a JobList's items carry neither
    listing = {"apiVersion": "batch/v1", "kind": "JobList", "items": [job], "metadata": {}}

    code, lines, _ = run_lines("evaluate", "-", stdin=json.dumps(listing))

    assert code == 0
    (result,) = [json.loads(line) for line in lines]
    assert (result["kind"], result["phase"]) == ("Job", "SUCCEEDED")


def test_a_list_with_an_item_it_cannot_evaluate_gives_its_error_and_exit_2():
    listing = yaml.safe_load(kubectl_list("pytorchjob_running"))
    listing["items"].append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}})

    code, lines, _ = run_lines("evaluate", "-", stdin=yaml.safe_dump(listing))

    assert code == 2
    first, second = (json.loads(line) for line in lines)
    assert first["phase"] == "RUNNING"
    assert (second["name"], second["error"]) == ("p", "cannot evaluate")
    assert "unsupported kind" in second["detail"]


def test_an_empty_list_prints_nothing_and_says_so():
    code, lines, stderr = run_lines("evaluate", "-", stdin=kubectl_list())

    assert (code, lines) == (0, [])
    assert "the list has no items" in stderr


def test_version_names_the_project_and_its_version():
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    code, lines, _ = run_lines("--version")

    assert code == 0
    assert lines[0].startswith(f"jobsync {version}")
