"""A TrainJob's progress (Trainer's trainerStatus and jobsStatus) in the evaluation, and each new kind's times."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobsync import Phase, evaluate
from jobsync.evaluation.phase import MAX_PROGRESS_ENTRIES
from jobsync.evaluation.times import job_times
from tests.payloads import load_payload


def test_a_trainjob_reports_its_progress_eta_and_metrics():
    evaluation = evaluate(load_payload("trainer_v2/trainjob_progress.yaml"))

    assert evaluation.phase is Phase.RUNNING
    assert evaluation.to_dict()["progress"] == {
        "progressPercentage": 45,
        "estimatedRemainingSeconds": 795649,
        "metrics": {
            "loss": "0.2347",
            "eval_loss": "0.2451",
            "accuracy": "0.9876",
            "currentEpoch": "2",
            "totalEpochs": "5",
        },
        "lastUpdatedTime": "2025-01-23T10:30:45Z",
        "jobs": [{"name": "node", "active": 1, "ready": 1, "succeeded": 0, "failed": 0, "suspended": 0}],
    }


def test_the_last_progress_stays_on_a_finished_trainjob():
    progress = evaluate(load_payload("trainer_v2/trainjob_progress_e2e.yaml")).progress

    assert progress is not None
    assert (progress.percentage, progress.remaining_seconds) == (42, 120)
    assert dict(progress.metrics) == {"loss": "0.123", "accuracy": "0.95"}


def test_kinds_that_report_no_progress_keep_their_json_unchanged():
    out = evaluate(load_payload("kubeflow_v1/pytorchjob_running.yaml")).to_dict()

    assert list(out) == ["phase", "reason", "message", "since", "kind", "terminal"]
    suspended = load_payload("trainer_v2/trainjob_suspended.yaml")  # no jobsStatus, no trainerStatus
    assert "progress" not in evaluate(suspended).to_dict()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("progressPercentage", 101),
        ("progressPercentage", -1),
        ("progressPercentage", 45.5),
        ("progressPercentage", "45"),
        ("progressPercentage", True),
        ("estimatedRemainingSeconds", -5),
        ("estimatedRemainingSeconds", float("nan")),
        ("estimatedRemainingSeconds", 1e400),
    ],
)
def test_a_progress_figure_the_crd_would_refuse_is_left_out(field, value):
    obj = load_payload("trainer_v2/trainjob_progress.yaml")
    obj["status"]["trainerStatus"][field] = value

    assert field not in evaluate(obj).to_dict()["progress"]


def test_metrics_need_a_name_and_a_text_value_and_are_bounded():
    obj = load_payload("trainer_v2/trainjob_progress.yaml")
    metrics = [{"name": f"m{i}", "value": str(i)} for i in range(MAX_PROGRESS_ENTRIES + 7)]
    obj["status"]["trainerStatus"]["metrics"] = [
        {"name": "", "value": "1"},
        {"name": "x", "value": 1},
        "junk",
        *metrics,
    ]

    progress = evaluate(obj).to_dict()["progress"]

    assert list(progress["metrics"]) == [f"m{i}" for i in range(MAX_PROGRESS_ENTRIES)]
    assert progress["metricsOmitted"] == 7


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=20,
)
_trainer_status = st.dictionaries(
    st.sampled_from(["progressPercentage", "estimatedRemainingSeconds", "metrics", "lastUpdatedTime"]), _json
)


@settings(max_examples=200)
@given(trainer_status=_json | _trainer_status, jobs=_json)
def test_any_reported_progress_gives_strict_json_and_never_changes_the_phase(trainer_status, jobs):
    obj = load_payload("trainer_v2/trainjob_running.yaml")
    expected = evaluate(obj).phase
    obj["status"]["trainerStatus"] = trainer_status

    out = evaluate(obj).to_dict()

    assert out["phase"] == expected
    json.dumps(out, allow_nan=False)
    obj["status"]["jobsStatus"] = jobs
    json.dumps(evaluate(obj).to_dict(), allow_nan=False)


# --------------------------------------------------------------------------- the new kinds' own times


@pytest.mark.parametrize(
    ("payload", "started", "finished"),
    [
        # The Ray job's own start, not KubeRay's (status.startTime is when it began creating the cluster).
        ("ray/rayjob_complete_succeeded.yaml", "2026-07-01T09:01:05Z", "2026-07-01T09:04:12Z"),
        ("ray/rayjob_running.yaml", "2026-07-01T13:01:20Z", None),
        # Volcano: the first Running condition; the end is the state's transition.
        ("volcano/job_completed.yaml", "2026-06-10T08:00:20Z", "2026-06-10T08:03:10Z"),
        ("volcano/job_pending.yaml", None, None),
        # Spark and JobSet record no start; Spark's end is its terminationTime.
        ("spark/sparkapplication_completed.yaml", None, "2026-08-01T10:01:15Z"),
        ("jobset/jobset_completed.yaml", None, "2026-05-08T16:05:40Z"),
        # mpi-operator: the Running condition, as for every kubeflow.org kind; completionTime.
        ("mpi_operator/mpijob_succeeded_readme.yaml", "2019-07-09T22:15:54Z", "2019-07-09T22:17:06Z"),
    ],
)
def test_each_kind_says_when_it_started_and_finished(payload, started, finished):
    obj = load_payload(payload)
    times = job_times(obj, evaluate(obj))

    assert (times.started, times.finished) == (started, finished)
