"""bench/throughput.py's aggregation on small synthetic inputs, the job mix, and how the figures reach the results."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench import report, throughput
from bench.__main__ import throughput_main
from bench.throughput import MAX_JOBS_PER_RUN, batches, held_peak, job_plan, peak_rate, run_jobs_input, transitions


def test_peak_rate_counts_the_busiest_virtual_second_from_the_start():
    origin = 1000.0
    times = [1000.0, 1000.9, 1001.0, 1001.5, 1001.99, 1003.2, 1003.9]
    assert peak_rate(times, origin) == {"per_s": 3.0, "at_s": 1.0, "count": 3}
    # Two-second buckets: [0, 2) holds five requests, so 2.5 a second.
    assert peak_rate(times, origin, bucket_s=2.0) == {"per_s": 2.5, "at_s": 0.0, "count": 5}


def test_peak_rate_takes_the_earliest_of_equal_peaks_and_nothing_gives_zero():
    assert peak_rate([10.0, 10.5, 12.0, 12.5], 10.0)["at_s"] == 0.0
    assert peak_rate([], 10.0) == {"per_s": 0.0, "at_s": 0.0, "count": 0}


def test_peak_rate_refuses_a_request_before_the_start_and_a_bad_bucket():
    with pytest.raises(ValueError, match="before the run's start"):
        peak_rate([9.0], 10.0)
    with pytest.raises(ValueError, match="bucket_s must be positive"):
        peak_rate([10.0], 10.0, bucket_s=0)


def _history(*types: str) -> list[dict[str, Any]]:
    return [{"type": t} for t in types]


def test_transitions_count_states_entered_in_the_parent_and_every_child():
    parent = _history(
        "ExecutionStarted",
        "MapStateEntered",
        "MapIterationStarted",
        "TaskStateEntered",
        "TaskSubmitted",
        "TaskSucceeded",
        "TaskStateExited",
        "MapIterationSucceeded",
        "MapStateExited",
        "ChoiceStateEntered",
        "SucceedStateEntered",
        "ExecutionSucceeded",
    )
    child = _history(
        "ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskSucceeded", "TaskStateExited", "WaitStateEntered"
    )
    assert transitions(parent, [child, child]) == {"parent": 4, "children": 4, "total": 8}
    assert transitions(_history("ExecutionStarted"), []) == {"parent": 0, "children": 0, "total": 0}


def test_held_peak_counts_only_invocations_that_held_virtual_time():
    spans = [
        (0.0, 0.0),  # answered at once: holds nothing
        (0.0, 100.0),
        (50.0, 150.0),
        (100.0, 120.0),  # starts as the first held one ends: two at once, not three
        (130.0, None),  # an error: no answer
    ]
    assert held_peak(spans) == 2
    assert held_peak([(5.0, 5.0)] * 10) == 0


def test_the_job_mix_is_deterministic_succeeding_and_ten_to_sixty_minutes_long():
    plans = [job_plan(i) for i in range(200)]
    assert plans == [job_plan(i) for i in range(200)]
    scenarios = [scenario for scenario, _ in plans]
    assert scenarios.count("success") == 120 and scenarios.count("restarting") == 40
    assert scenarios.count("gpu-scale-up") == 40
    lengths = []
    for scenario, t in plans:
        if scenario == "gpu-scale-up":
            lengths.append(t["scale_up_s"] + t["run_s"])
        else:
            lengths.append(t["pending_s"] + t["run_s"])
            if scenario == "restarting":
                assert t["pending_s"] + t["restart_at"] + t["restart_s"] < lengths[-1]  # restarts before the end
    assert min(lengths) == 600 and max(lengths) == 3600
    assert len(set(lengths)) == 51  # every whole minute from 10 to 60
    with pytest.raises(ValueError, match="job index"):
        job_plan(-1)


def test_the_run_jobs_input_names_each_jobs_scenario_for_the_simulator():
    execution_input = run_jobs_input(3)
    assert (execution_input["maxConcurrency"], execution_input["failFast"]) == (0, False)
    annotations = [job["job"]["metadata"]["annotations"] for job in execution_input["jobs"]]
    assert [a["jobsync.local/scenario"] for a in annotations] == [job_plan(i)[0] for i in range(3)]
    assert json.loads(annotations[2]["jobsync.local/timings"]) == job_plan(2)[1]
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        run_jobs_input(0)


@pytest.mark.parametrize(
    ("jobs", "sizes"),
    [(1, [1]), (40, [40]), (41, [21, 20]), (80, [40, 40]), (100, [34, 33, 33]), (1000, [40] * 25)],
)
def test_batches_are_as_few_runs_as_the_limit_allows_every_job_once_in_order(jobs, sizes):
    runs = batches(jobs, MAX_JOBS_PER_RUN)
    assert [len(run) for run in runs] == sizes
    assert [i for run in runs for i in run] == list(range(jobs))


def test_batches_refuse_no_jobs_and_no_room():
    assert batches(3, 1) == [range(0, 1), range(1, 2), range(2, 3)]
    with pytest.raises(ValueError, match="jobs and maximum must be >= 1"):
        batches(0)
    with pytest.raises(ValueError, match="jobs and maximum must be >= 1"):
        batches(3, 0)


def test_a_later_runs_jobs_are_named_by_their_own_indices():
    execution_input = run_jobs_input(2, first=40)
    names = [job["job"]["metadata"]["name"] for job in execution_input["jobs"]]
    assert names == ["throughput-40", "throughput-41"]
    assert execution_input["jobs"][1]["job"]["metadata"]["annotations"]["jobsync.local/scenario"] == job_plan(41)[0]


def _row(mode: str, jobs: int, **extra: Any) -> dict[str, Any]:
    row = {
        "mode": mode,
        "jobs": jobs,
        "status": "SUCCEEDED",
        "wall_s": 12.5,
        "virtual_s": 3600.0,
        "lambda_invocations": 30 * jobs,
        "lambda_invocations_per_job": 30.0,
        "lambda_held_peak": 0,
        "api_requests": 33 * jobs,
        "api_requests_per_job": 33.0,
        "api_by_verb": {"create": jobs, "get": 32 * jobs},
        "api_peak": {"per_s": float(jobs), "at_s": 0.0, "count": jobs},
        "transitions": {"parent": 3 + jobs, "children": 90 * jobs, "total": 3 + 91 * jobs},
        "transitions_per_job": (3 + 91 * jobs) / jobs,
        "children": jobs,
        "phases": {"SUCCEEDED": jobs},
        "input_bytes": 700 * jobs,
        "output_bytes": 1000 * jobs,
    }
    return {**row, **extra}


def test_the_throughput_section_renders_every_row_and_flags_a_payload_over_the_limit():
    rows = [_row("poll", 10), _row("poll", 1000, wall_s=900.0, time_steps=4000, settle_s=0.05)]
    lines = report.throughput_section({"throughput": {"rows": rows, "sizes_not_run": []}})
    text = "\n".join(lines)
    assert "1,000 jobs in `poll` mode, took 4,000 steps (200 s of them waiting for quiet) in 900 s" in text
    assert "## Throughput: jobs started together" in text
    assert "| `poll` | 10 | 12.5 | 3,600 | 300 (30.0) | 10 (at 0 s) | 913 (91.3) | 10 SUCCEEDED (10 children) |" in text
    assert "1,000 SUCCEEDED (1,000 children) (input and output over 256 KB)" in text
    assert "10 SUCCEEDED (10 children) |" in text  # 7 KB in, 10 KB out: not flagged
    assert report.throughput_section({}) == []


def test_the_throughput_section_says_how_many_runs_held_the_jobs():
    # 100 jobs in 3 runs of at most 34: each job's input is the largest run's bytes over its 34 jobs.
    split = [_row("poll", 10), _row("poll", 100, runs=3, input_bytes=34 * 1024, output_bytes=34 * 2048)]
    text = "\n".join(report.throughput_section({"throughput": {"rows": split}}))
    assert "100 SUCCEEDED (100 children, 3 runs) |" in text and "10 SUCCEEDED (10 children) |" in text
    assert "each job's input here is 1.0 KB, each outcome in the output 2.0 KB" in text
    assert "in one run" not in text and "rounds" not in text
    # A row measured before RunJobs' limit (no runs field) held all its jobs in one run: said so.
    before = [_row("poll", 10), _row("poll", 100)]
    text = "\n".join(report.throughput_section({"throughput": {"rows": before}}))
    assert "The 100-job rows predate that limit: all their jobs ran in one run." in text
    assert "would run the 100 jobs of one run in rounds" in text


def test_throughput_main_updates_only_its_key(tmp_path, monkeypatch, capsys):
    results_path, markdown_path = tmp_path / "results.json", tmp_path / "performance.md"
    others = {"default": {"mean_delay_s": 128.0}, "lambda": {"handler_median_ms": 2.5}}
    results_path.write_text(json.dumps(others, indent=2) + "\n")
    asked: list[tuple[list[int], list[str]]] = []

    def measure_all(sizes: list[int], modes: list[str], progress: Any) -> dict[str, Any]:
        asked.append((list(sizes), list(modes)))
        return {"sizes": list(sizes), "modes": list(modes), "rows": [_row(m, n) for m in modes for n in sizes]}

    monkeypatch.setattr(throughput, "measure_all", measure_all)
    assert throughput_main(10, progress=lambda _m: None, results_path=results_path, markdown_path=markdown_path) == 0
    assert asked == [([1, 10], ["poll", "watch", "callback"])]
    written = json.loads(results_path.read_text())
    assert {k: v for k, v in written.items() if k != "throughput"} == others
    assert written["throughput"]["sizes_not_run"] == [100, 1000]
    assert [(r["mode"], r["jobs"]) for r in written["throughput"]["rows"]][:2] == [("poll", 1), ("poll", 10)]
    assert not markdown_path.exists()  # no full run's results to render the page from
    assert "| `callback` | 10 |" in capsys.readouterr().out
