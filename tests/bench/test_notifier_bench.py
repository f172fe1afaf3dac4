"""bench/notifier.py's measuring code on a few jobs (the real sizes are make bench-notifier), and its report."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from bench import notifier, notifier_report
from bench.__main__ import main, notifier_main
from bench.targets import targets

SIZE = 30


@pytest.fixture(scope="module")
def figures() -> dict[str, Any]:
    return notifier.measure_size(SIZE, progress=lambda _m: None, quiet=1.0, settle=0.2, latencies=(0.02,))


@pytest.mark.parametrize("ended", [False, True])
def test_a_job_is_of_the_realistic_size_with_its_managed_fields(ended):
    job = notifier.realistic_job("job-00001", ended=ended)
    size = len(json.dumps(job, separators=(",", ":")))
    # The API adds uid, resourceVersion and timestamps (about 150 bytes more as it serves the job).
    assert notifier.JOB_BYTES - 200 <= size <= notifier.JOB_BYTES
    assert [f["manager"] for f in job["metadata"]["managedFields"]][-1] == "training-operator"
    assert (job["status"]["conditions"][-1]["type"] == "Succeeded") is ended


def test_every_job_that_ends_is_published_once_and_a_start_among_running_jobs_publishes_none(figures):
    assert (figures["jobs"], figures["running"]) == (SIZE, SIZE)
    assert figures["burst_events"] == SIZE
    assert figures["restart_events"] == 0  # a running job seen at a LIST is recorded, not reported
    assert figures["republished_at_20ms"] == SIZE  # every ended job whose execution waits
    assert "republished_at_0ms" not in figures  # only the latencies asked for


def test_the_memory_and_readiness_figures_come_from_the_process_and_the_request_log(figures):
    assert figures["list_requests"] == 1 and figures["relist_requests"] == 1  # one page of 500
    assert figures["ready_s"] >= 0 and figures["ready_from_start_s"] > figures["ready_s"]
    assert figures["rss_steady_mib"] > 0 and figures["rss_list_peak_mib"] > 0
    assert figures["rss_peak_mib"] == max(figures["rss_list_peak_mib"], figures["rss_relist_peak_mib"])
    assert figures["burst_1000_s"] is None and figures["burst_s"] >= 0  # fewer than 1,000 ran
    assert figures["events_per_s_at_20ms"] > 0


def test_the_aws_side_adds_the_round_trip_to_eventbridge_and_counts_what_putevents_took():
    aws = notifier.AwsSide(0.3)
    try:
        events = notifier.client(aws, "events")
        events.create_event_bus(Name=notifier.BUS)
        entry = {"Source": "jobsync.test", "DetailType": "t", "Detail": "{}", "EventBusName": notifier.BUS}
        before = time.monotonic()
        events.put_events(Entries=[entry, entry, entry])
        assert time.monotonic() - before >= 0.3
        assert [n for _, n in aws.taken() if n] == [3]
    finally:
        aws.close()


def row(**changes: Any) -> dict[str, Any]:
    base = {
        "jobs": 10_000,
        "running": 1000,
        "rss_steady_mib": 100.0,
        "rss_list_peak_mib": 150.0,
        "rss_relist_peak_mib": 140.0,
        "rss_peak_mib": 150.0,
        "ready_s": 0.5,
        "list_s": 3.0,
        "ready_from_start_s": 4.5,
        "events_per_s_at_0ms": 900.0,
        "events_per_s_at_20ms": 600.0,
        "burst_1000_s": 2.0,
        "restart_events": 0,
    }
    return {**base, **changes}


def test_each_target_is_met_or_missed_at_10000_jobs_with_its_figure():
    results = {"meta": {"policies": []}, "notifier": {"10000": row(rss_steady_mib=130.0, events_per_s_at_20ms=499.0)}}
    rows = {t["target"]: t for t in targets(results) if t["target"].startswith("notifier")}
    status = {goal.split(": ", 1)[1]: t["status"] for goal, t in rows.items()}
    assert status == {
        "steady RSS <= 128 MiB": "MISSED",
        "peak RSS during its LIST or a relist <= 200 MiB": "MET",
        "ready <= 5 s after its LIST": "MET",
        ">= 500 events/s at a 20 ms round trip": "MISSED",
        "1,000 jobs ending together published within 3 s": "MET",
    }
    missed = rows["notifier, 10,000 jobs of 2.5 KB: steady RSS <= 128 MiB"]
    assert missed["measured"] == "130 MiB" and missed["why"]


def test_the_section_holds_every_size_to_the_targets():
    results = {"notifier": {"1000": row(jobs=1000), "20000": row(jobs=20_000, rss_peak_mib=201.0)}}
    lines = notifier_report.notifier_section(results)
    table = [line for line in lines if line.startswith("| 1,000") or line.startswith("| 20,000")]
    assert len(table) == 2
    assert "**missed**" not in table[0] and table[0].count("met") == 5
    assert "150 / 140 MiB **missed**" in table[1]
    assert "not measured yet" in notifier_report.notifier_section({})[0]


def test_notifier_main_updates_its_key_the_targets_and_the_page(tmp_path, monkeypatch, capsys):
    from bench.__main__ import read_results

    results = read_results()
    results.pop("notifier", None)
    results_path, markdown_path = tmp_path / "results.json", tmp_path / "performance.md"
    results_path.write_text(json.dumps(results))
    monkeypatch.setattr(notifier, "measure", lambda sizes, progress: {str(n): row(jobs=n) for n in sizes})
    assert (
        notifier_main((10_000,), progress=lambda _m: None, results_path=results_path, markdown_path=markdown_path) == 0
    )
    written = json.loads(results_path.read_text())
    assert written["notifier"]["10000"]["rss_steady_mib"] == 100.0
    assert {k: v for k, v in written.items() if k not in ("notifier", "targets")} == {
        k: v for k, v in results.items() if k != "targets"
    }
    assert sum(t["target"].startswith("notifier, 10,000") for t in written["targets"]) == 5
    assert "| 10,000 (1,000) | 100 MiB met |" in markdown_path.read_text()


@pytest.mark.parametrize("sizes", ["abc", "0", "1000,", "200000"])
def test_bad_sizes_are_refused_by_name(sizes, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--notifier", "--notifier-sizes", sizes])
    assert stop.value.code == 2
    assert "--notifier-sizes" in capsys.readouterr().err
