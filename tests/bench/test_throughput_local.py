"""bench/throughput.py end to end: two jobs through RunJobs in the local run, and counts that agree with each other."""

from __future__ import annotations

from typing import Any

import pytest

from bench.throughput import job_plan, measure


@pytest.fixture(scope="module")
def measured() -> tuple[dict[str, Any], dict[str, Any]]:
    raw: dict[str, Any] = {}
    return measure("poll", 2, timeout_s=120, raw=raw), raw


def test_every_job_succeeded(measured):
    row, raw = measured
    assert row["status"] == "SUCCEEDED"
    assert row["child_status"] == {"SUCCEEDED": 2} and row["phases"] == {"SUCCEEDED": 2}
    assert row["children"] == len(raw["children"]) == 2


def test_transitions_are_the_states_entered_in_every_history(measured):
    row, raw = measured
    # Counted another way: every state entered carries stateEnteredEventDetails.
    entered = [sum("stateEnteredEventDetails" in e for e in h) for h in [*raw["parents"], *raw["children"]]]
    assert row["transitions"] == {"parent": entered[0], "children": sum(entered[1:]), "total": sum(entered)}
    assert row["transitions_per_job"] == sum(entered) / 2
    assert row["history_events"] == sum(len(h) for h in [*raw["parents"], *raw["children"]])


def test_invocations_are_every_handler_call_and_each_job_submits_polls_and_cleans_up(measured):
    row, raw = measured
    by_function = row["lambda_by_function"]
    assert sum(by_function.values()) == row["lambda_invocations"] == len(raw["invocations"])
    assert by_function["submit"] == by_function["cleanup"] == 2
    assert by_function["status"] >= 2 and row["lambda_invocations_per_job"] >= 2
    # Poll mode: one Status per look, each entering the Status task of a child's history.
    status_entered = sum(
        e.get("stateEnteredEventDetails", {}).get("name") == "Status" for h in raw["children"] for e in h
    )
    assert by_function["status"] == status_entered
    # Poll mode's Lambdas never wait: no watch in the API log. Whether one straddles a step of the
    # virtual clock depends on the machine's speed (a Lambda's run is covered by the harness's
    # settle time, not by a hold), so the held figure is bounded, not zero: one open call per job.
    assert "watch" not in row["api_by_verb"]
    assert row["lambda_held_peak"] <= row["jobs"]


def test_api_requests_are_the_request_log_on_virtual_time(measured):
    row, raw = measured
    requests = raw["requests"]
    assert row["api_requests"] == len(requests) == sum(row["api_by_verb"].values())
    assert row["api_by_verb"]["create"] == 2  # one PyTorchJob each
    assert row["api_by_verb"]["get"] == row["lambda_by_function"]["status"]  # each look GETs its job
    assert all(raw["origin"] <= r.at <= raw["origin"] + row["virtual_s"] for r in requests)
    assert 2 <= row["api_peak"]["count"] <= len(requests)  # both creates fall in the first virtual second


def test_virtual_time_covers_the_longest_job_and_little_more(measured):
    row, _ = measured
    longest = max(t["pending_s"] + t["run_s"] for _, t in (job_plan(0), job_plan(1)))
    assert longest <= row["virtual_s"] <= longest + 600
    assert row["wall_s"] > 0
