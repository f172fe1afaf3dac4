"""python -m bench --report-only: the targets, docs/performance.md and its plot from the recorded figures alone."""

from __future__ import annotations

import copy
import json

import pytest

from bench import report
from bench.__main__ import PLOT, RESULTS, e2e_callback_main, measured_apart, report_main


@pytest.fixture(scope="module")
def recorded():
    return json.loads(RESULTS.read_text())


def test_report_only_redraws_from_the_recorded_figures(recorded, tmp_path):
    results_path, md, png = tmp_path / "results.json", tmp_path / "performance.md", tmp_path / PLOT.name
    stale = copy.deepcopy(recorded)
    stale["targets"] = []
    results_path.write_text(json.dumps(stale))
    assert report_main(lambda _m: None, results_path, md, png) == 0
    rewritten = json.loads(results_path.read_text())
    assert rewritten["targets"] == report.targets(recorded)
    assert {k: v for k, v in rewritten.items() if k != "targets"} == {
        k: v for k, v in recorded.items() if k != "targets"
    }
    assert md.read_text() == report.markdown(rewritten, PLOT.name)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_report_only_refuses_results_of_no_full_run(tmp_path, capsys):
    results_path = tmp_path / "results.json"
    results_path.write_text(json.dumps({"throughput": {}}))
    assert report_main(lambda _m: None, results_path, tmp_path / "p.md", tmp_path / "p.png") == 2
    assert "holds no full run's results: run `make bench` first" in capsys.readouterr().err
    assert not (tmp_path / "p.md").exists()


def test_a_whole_run_keeps_the_figures_measured_apart():
    """make bench rewrites results.json: the keys that other commands measure (bench-notifier, bench-container,
    bench-throughput, bench-runjobs) are carried over, the ones it measures itself are not."""
    previous = {
        "notifier": {"10000": {}},
        "container_cold_start": {},
        "throughput": {},
        "runjobs_100": {"jobs": 100},
        "runjobs_1000": {"jobs": 1000},
        "callback_containers": {"jobs": 8},
        "callback": {"old": True},
        "targets": [],
    }
    kept = measured_apart(previous)
    assert set(kept) == {
        "notifier",
        "container_cold_start",
        "throughput",
        "runjobs_100",
        "runjobs_1000",
        "callback_containers",
    }


def e2e_figures(p95: float, cold: int) -> dict:
    return {
        "jobs": 8,
        "p50_resumed_s": p95 / 2,
        "p95_resumed_s": p95,
        "max_resumed_s": p95,
        "p95_ended_s": p95 + 1,
        "cold_resumes": cold,
        "rows": [],
    }


@pytest.mark.parametrize(
    ("p95", "cold", "status"), [(0.8, 1, "MET"), (2.5, 1, "MISSED"), (0.8, 0, "MISSED")], ids=["met", "slow", "warm"]
)
def test_the_e2e_callback_figures_are_recorded_and_judged(recorded, tmp_path, p95, cold, status):
    """make bench-e2e-callback: what the e2e tier wrote goes under callback_containers, held to p95 <= 2 s with
    a cold Resume among the wakes; the other figures stay as they were."""
    results_path, md, measured = tmp_path / "results.json", tmp_path / "performance.md", tmp_path / "e2e.json"
    results_path.write_text(json.dumps(recorded))
    measured.write_text(json.dumps(e2e_figures(p95, cold)))
    assert e2e_callback_main(measured, lambda _m: None, results_path, md) == 0
    rewritten = json.loads(results_path.read_text())
    assert rewritten["callback_containers"]["p95_resumed_s"] == p95
    (row,) = [t for t in rewritten["targets"] if "the functions in containers" in t["target"]]
    assert row["status"] == status, row
    assert f"p95 {p95:.2f} s" in row["measured"] and f"p95 {p95:.2f} s" in md.read_text()
    assert {k: v for k, v in rewritten.items() if k not in ("targets", "callback_containers")} == {
        k: v for k, v in recorded.items() if k not in ("targets", "callback_containers")
    }


def test_the_e2e_callback_figures_must_exist(tmp_path, capsys):
    results_path = tmp_path / "results.json"
    assert e2e_callback_main(tmp_path / "missing.json", lambda _m: None, results_path, tmp_path / "p.md") == 2
    assert "run `make bench-e2e-callback`" in capsys.readouterr().err
    assert not results_path.exists()
