"""bench/runjobs.py, the 1,000-job figure's measurement, on a run of a few jobs (the real one is make bench-runjobs)."""

from __future__ import annotations

import json

import pytest

from bench import runjobs
from bench.throughput import job_input, job_plan


@pytest.fixture(scope="module")
def figures():
    return runjobs.measure(3, timeout_s=600)


def test_a_run_given_by_jobs_from_succeeds_and_its_figures_say_so(figures):
    assert (figures["jobs"], figures["status"], figures["error"]) == (3, "SUCCEEDED", None)
    assert figures["summary"]["total"] == figures["summary"]["succeeded"] == 3
    assert figures["child_status"] == {"SUCCEEDED": 3}
    assert figures["jobs_from_bytes"] == len(json.dumps([job_input(i) for i in range(3)]).encode())
    assert figures["outcomes_inline"] is True and 0 < figures["output_bytes"] <= runjobs.PAYLOAD_LIMIT
    assert figures["output_within_payload_limit"] is True


def test_its_virtual_time_is_the_longest_job_not_the_sum(figures):
    # Side by side: the run ends after its longest job, well before the three one after the other.
    totals = [sum(v for k, v in timings.items() if k in {"pending_s", "run_s", "scale_up_s"}) for _, timings in plans()]
    assert max(totals) <= figures["virtual_s"] < sum(totals)


def plans() -> list[tuple[str, dict[str, float]]]:
    return [job_plan(i) for i in range(3)]


def test_a_run_past_what_run_jobs_takes_is_refused_before_it_starts(capsys):
    with pytest.raises(SystemExit):
        runjobs.main(["--jobs", "1001", "--no-write"])
    assert "--jobs must be 1 to 1000" in capsys.readouterr().err


def test_its_target_row_holds_the_recorded_run_to_every_job_succeeded_within_the_payload(figures):
    from bench.__main__ import RESULTS
    from bench.targets import targets

    recorded = {k: v for k, v in json.loads(RESULTS.read_text()).items() if k != "runjobs_1000"}

    def row(run: dict | None) -> dict[str, str]:
        results = {**recorded, "runjobs_1000": run} if run else recorded
        [found] = [t for t in targets(results) if t["target"].startswith("RunJobs:")]
        return found

    assert (row(None)["measured"], row(None)["status"]) == ("not measured", "REPORTED")
    # The three-job run stands for the recorded 1,000: the row reads only what the run recorded.
    met = {**figures, "jobs": 1000, "child_status": {"SUCCEEDED": 1000}}
    assert row(met)["status"] == "MET" and row(met)["measured"].startswith("SUCCEEDED: 1,000 of 1,000 jobs succeeded")
    one_failed = {**met, "status": "FAILED", "child_status": {"SUCCEEDED": 999, "FAILED": 1}}
    assert row(one_failed)["status"] == "MISSED"
    too_big = {**met, "output_within_payload_limit": False}
    assert row(too_big)["status"] == "MISSED"
