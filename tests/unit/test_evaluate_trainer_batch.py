"""Kubeflow Trainer v2 TrainJob and batch/v1 Job: conditions first, then the counts of what runs."""

from __future__ import annotations

import pytest

from jobsync import Phase, evaluate
from tests.payloads import load_payload

# --- Trainer v2 ------------------------------------------------------------------------------------


def test_trainjob_complete_quotes_jobset():
    evaluation = evaluate(load_payload("trainer_v2/trainjob_complete.yaml"))

    assert evaluation.phase is Phase.SUCCEEDED
    assert evaluation.message == "jobset completed successfully"
    assert evaluation.kind == "TrainJob"


def test_trainjob_deadline_failure_quotes_the_reason():
    evaluation = evaluate(load_payload("trainer_v2/trainjob_deadline_exceeded.yaml"))

    assert (evaluation.phase, evaluation.reason) == (Phase.FAILED, "DeadlineExceeded")
    assert evaluation.message == "TrainJob exceeded its active deadline"


def test_trainjob_running_names_the_active_jobs():
    evaluation = evaluate(load_payload("trainer_v2/trainjob_running.yaml"))

    assert evaluation.phase is Phase.RUNNING
    assert evaluation.message == "active child jobs: node"


def test_trainjob_resumed_with_active_jobs_is_running():
    obj = load_payload("trainer_v2/trainjob_running.yaml")
    obj["status"]["conditions"].insert(
        0, {"type": "Suspended", "status": "False", "reason": "Resumed", "message": "TrainJob is resumed"}
    )

    assert evaluate(obj).phase is Phase.RUNNING


def test_trainjob_suspended_wins_over_active_jobs():
    obj = load_payload("trainer_v2/trainjob_suspended.yaml")
    obj["status"]["jobsStatus"] = load_payload("trainer_v2/trainjob_running.yaml")["status"]["jobsStatus"]

    assert evaluate(obj).phase is Phase.SUSPENDED


def test_trainjob_complete_and_failed_the_later_wins():
    obj = load_payload("trainer_v2/trainjob_complete.yaml")
    obj["status"]["conditions"].append(
        {"type": "Failed", "status": "True", "reason": "FailedJobs", "lastTransitionTime": "2025-05-01T10:20:00Z"}
    )

    assert evaluate(obj).phase is Phase.FAILED


@pytest.mark.parametrize("jobs_status", ["node", {"name": "node", "active": 1}, [None, "x", {"active": "1"}]])
def test_trainjob_malformed_jobs_status_counts_no_active_job(jobs_status):
    obj = load_payload("trainer_v2/trainjob_running.yaml")
    obj["status"]["jobsStatus"] = jobs_status

    assert evaluate(obj).phase is Phase.PENDING


def test_trainjob_without_status_is_pending():
    obj = load_payload("trainer_v2/trainjob_created.yaml")
    del obj["status"]

    assert evaluate(obj).reason == "NoStatus"


def test_trainjob_with_only_unknown_conditions_is_unknown():
    obj = load_payload("trainer_v2/trainjob_created.yaml")
    obj["status"]["conditions"] = [{"type": "Progressing", "status": "True"}]

    assert evaluate(obj).phase is Phase.UNKNOWN


# --- batch/v1 Job ----------------------------------------------------------------------------------


def test_job_failed_quotes_the_pod_failure_policy():
    evaluation = evaluate(load_payload("batch/job_failed.yaml"))

    assert evaluation.phase is Phase.FAILED
    assert "failed with exit code 42 matching FailJob rule at index 0" in evaluation.message


def test_job_complete_wins_over_success_criteria_met():
    evaluation = evaluate(load_payload("batch/job_complete.yaml"))

    assert (evaluation.phase, evaluation.reason) == (Phase.SUCCEEDED, "CompletionsReached")
    assert evaluation.message == "Reached expected number of succeeded pods"


@pytest.mark.parametrize("name", ["batch/job_failure_target.yaml", "batch/job_success_criteria_met.yaml"])
def test_job_terminating_is_still_running(name):
    evaluation = evaluate(load_payload(name))

    assert evaluation.phase is Phase.RUNNING
    assert not evaluation.terminal
    assert "pods terminating" in evaluation.reason


def test_job_resumed_is_running_while_pods_are_active():
    obj = load_payload("batch/job_suspended.yaml")
    obj["status"]["conditions"][0]["status"] = "False"
    obj["status"]["active"] = 1

    assert evaluate(obj).phase is Phase.RUNNING


def test_job_resumed_without_pods_yet_is_pending():
    obj = load_payload("batch/job_suspended.yaml")
    obj["status"]["conditions"][0]["status"] = "False"

    evaluation = evaluate(obj)

    assert (evaluation.phase, evaluation.reason) == (Phase.PENDING, "NoActivePods")


@pytest.mark.parametrize("active", [0, -1, "1", True, None, 1.0e400, float("nan")])
def test_job_active_must_be_a_positive_number(active):
    obj = load_payload("batch/job_running_docs.yaml")
    obj["status"]["active"] = active

    assert evaluate(obj).phase is Phase.PENDING


def test_job_empty_status_is_pending():
    obj = load_payload("batch/job_no_status.yaml")
    obj["status"] = {}

    assert evaluate(obj).phase is Phase.PENDING
