"""The Kubeflow training-operator v1 rule: only True conditions count, order never matters."""

from __future__ import annotations

import pytest

from jobsync import Phase, evaluate
from jobsync.errors import EvaluationError
from tests.payloads import load_payload


def _conditions(obj):
    return obj["status"]["conditions"]


def test_succeeded_quotes_the_deciding_condition():
    evaluation = evaluate(load_payload("kubeflow_v1/pytorchjob_succeeded_hyperpod.yaml"))

    assert evaluation.phase is Phase.SUCCEEDED
    assert evaluation.reason == "PyTorchJobSucceeded"
    assert evaluation.message == "PyTorchJob hyperpod-ns-test-team/hyperpod-cli-test successfully completed."
    assert evaluation.kind == "PyTorchJob"
    assert evaluation.to_dict() == {
        "phase": "SUCCEEDED",
        "reason": "PyTorchJobSucceeded",
        "message": "PyTorchJob hyperpod-ns-test-team/hyperpod-cli-test successfully completed.",
        "since": "2024-11-18T21:25:24Z",
        "kind": "PyTorchJob",
        "terminal": True,
    }


def test_succeeded_at_index_5_after_running_false():
    obj = load_payload("kubeflow_v1/pytorchjob_succeeded_at_index5.yaml")
    assert _conditions(obj)[5]["type"] == "Succeeded"
    assert {"type": "Running", "status": "False"}.items() <= _conditions(obj)[4].items()

    assert evaluate(obj).phase is Phase.SUCCEEDED


def test_failed_after_restarting_quotes_the_failure():
    evaluation = evaluate(load_payload("kubeflow_v1/pytorchjob_failed_after_restarting.yaml"))

    assert evaluation.phase is Phase.FAILED
    assert evaluation.terminal
    assert evaluation.message == "PyTorchJob kfto-01 is failed because 1 Master replica(s) failed."


def test_restarting_is_running_and_says_so():
    evaluation = evaluate(load_payload("kubeflow_v1/pytorchjob_restarting.yaml"))

    assert evaluation.phase is Phase.RUNNING
    assert "restarting" in evaluation.reason.lower()
    assert "restarting because 1 Master replica(s) failed" in evaluation.message


def test_restarting_reason_is_named_even_when_the_operator_gives_another():
    obj = load_payload("kubeflow_v1/pytorchjob_restarting.yaml")
    _conditions(obj)[1]["reason"] = "ExitedWithCode"

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.RUNNING
    assert evaluation.reason == "Restarting: ExitedWithCode"


def test_suspended_then_resumed_is_running():
    # Suspended stays in the list with status False once the job resumes.
    obj = load_payload("kubeflow_v1/pytorchjob_resumed.yaml")
    assert any(c["type"] == "Suspended" and c["status"] == "False" for c in _conditions(obj))

    assert evaluate(obj).phase is Phase.RUNNING


def test_suspended_wins_over_a_stale_running_true():
    obj = load_payload("kubeflow_v1/pytorchjob_suspended_after_running.yaml")
    _conditions(obj)[1]["status"] = "True"  # Running not yet flipped to False

    assert evaluate(obj).phase is Phase.SUSPENDED


@pytest.mark.parametrize(
    ("succeeded_at", "failed_at", "phase"),
    [
        ("2024-11-18T21:25:24Z", "2024-11-18T21:20:00Z", Phase.SUCCEEDED),
        ("2024-11-18T21:25:24Z", "2024-11-18T21:30:00Z", Phase.FAILED),
        ("2024-11-18T21:25:24Z", "2024-11-18T21:25:24Z", Phase.FAILED),  # a tie: Failed, the safer answer
    ],
)
def test_succeeded_and_failed_both_true_the_later_wins(succeeded_at, failed_at, phase):
    obj = load_payload("kubeflow_v1/pytorchjob_succeeded_hyperpod.yaml")
    _conditions(obj)[2]["lastTransitionTime"] = succeeded_at
    failed = {"type": "Failed", "status": "True", "reason": "PyTorchJobFailed", "lastTransitionTime": failed_at}

    for conditions in ([*_conditions(obj), failed], [failed, *_conditions(obj)]):
        obj["status"]["conditions"] = conditions
        assert evaluate(obj).phase is phase


def test_restarting_and_running_both_true_the_later_wins():
    obj = load_payload("kubeflow_v1/pytorchjob_running.yaml")
    restarting = {"type": "Restarting", "status": "True", "reason": "PyTorchJobRestarting"}

    restarting["lastTransitionTime"] = "2024-01-01T00:00:05Z"  # before Running
    _conditions(obj).append(restarting)
    assert evaluate(obj).reason == "PyTorchJobRunning"

    restarting["lastTransitionTime"] = "2024-01-01T00:00:20Z"  # after Running
    assert evaluate(obj).reason == "PyTorchJobRestarting"


def test_duplicates_the_latest_true_entry_decides():
    obj = load_payload("kubeflow_v1/tfjob_succeeded.yaml")
    older = dict(_conditions(obj)[2], lastTransitionTime="2021-09-06T11:49:00Z", message="older")
    _conditions(obj).insert(0, older)

    evaluation = evaluate(obj)

    assert evaluation.message == "TFJob kubeflow/tfjob-simple successfully completed."
    assert evaluation.since == "2021-09-06T11:49:30Z"


def test_unquoted_yaml_timestamps_and_booleans_are_read():
    # Older kubectl printed timestamps unquoted (YAML datetimes); a hand-written
    # `status: True` is a YAML boolean.
    obj = load_payload("kubeflow_v1/pytorchjob_succeeded_v1beta1_readme.yaml")
    obj["apiVersion"] = "kubeflow.org/v1"
    _conditions(obj)[2]["status"] = True

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.SUCCEEDED
    assert evaluation.since == "2019-01-11T01:03:15Z"


@pytest.mark.parametrize("api_version", ["kubeflow.org/v1beta1", "kubeflow.org/v1alpha2"])
def test_other_versions_are_refused(api_version):
    obj = load_payload("kubeflow_v1/mpijob_succeeded.yaml")
    obj["apiVersion"] = api_version

    with pytest.raises(EvaluationError, match=api_version):
        evaluate(obj)


def test_mpi_operators_v2beta1_reads_as_v1():
    # mpi-operator's MPIJob writes the training-operator's condition types under kubeflow.org/v2beta1.
    v1 = load_payload("kubeflow_v1/mpijob_succeeded.yaml")
    v2 = {**v1, "apiVersion": "kubeflow.org/v2beta1"}

    assert evaluate(v2) == evaluate(v1)


@pytest.mark.parametrize("status", ["False", "Unknown", "true", "", None, 1])
def test_a_condition_counts_only_when_true(status):
    obj = load_payload("kubeflow_v1/pytorchjob_succeeded_hyperpod.yaml")
    _conditions(obj)[2]["status"] = status

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.PENDING
    assert evaluation.reason == "PyTorchJobCreated"


def test_no_conditions_is_pending():
    obj = load_payload("kubeflow_v1/pytorchjob_created.yaml")
    obj["status"]["conditions"] = []

    assert evaluate(obj).phase is Phase.PENDING


def test_only_false_known_conditions_is_pending():
    obj = load_payload("kubeflow_v1/pytorchjob_created.yaml")
    _conditions(obj)[0]["status"] = "False"

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.PENDING
    assert evaluation.reason == "NoActiveCondition"


def test_nothing_recognisable_is_unknown_and_names_what_was_seen():
    obj = load_payload("kubeflow_v1/pytorchjob_created.yaml")
    obj["status"]["conditions"] = [{"type": "Evicted", "status": "True"}, {"type": "Queued", "status": "False"}]

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.UNKNOWN
    assert evaluation.reason == "UnrecognisedConditions: types ['Evicted', 'Queued']"


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("Succeeded", "MalformedStatus: status is a str"),
        ([{"type": "Succeeded"}], "MalformedStatus: status is a list"),
        ({"conditions": {"type": "Succeeded", "status": "True"}}, "MalformedConditions: conditions is a dict"),
        ({"conditions": "Succeeded"}, "MalformedConditions: conditions is a str"),
    ],
)
def test_unreadable_status_is_unknown(status, reason):
    obj = load_payload("kubeflow_v1/pytorchjob_created.yaml")
    obj["status"] = status

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.UNKNOWN
    assert evaluation.reason == reason


def test_malformed_condition_entries_are_ignored():
    obj = load_payload("kubeflow_v1/pytorchjob_succeeded_hyperpod.yaml")
    _conditions(obj)[0:0] = ["Succeeded", None, 7, ["x"], {"status": "True"}, {"type": 3, "status": "True"}]

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.SUCCEEDED
    assert evaluation.reason == "PyTorchJobSucceeded"


def test_non_string_reason_and_message_are_dropped():
    obj = load_payload("kubeflow_v1/pytorchjob_succeeded_hyperpod.yaml")
    _conditions(obj)[2].update(reason={"x": 1}, message=["m"], lastTransitionTime=12)

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.SUCCEEDED
    assert (evaluation.reason, evaluation.message, evaluation.since) == ("Succeeded", "", None)


def test_duplicates_written_two_ways_give_the_same_answer_in_any_order():
    obj = load_payload("kubeflow_v1/tfjob_succeeded.yaml")
    same_instant = dict(_conditions(obj)[2], lastTransitionTime="2021-09-06T11:49:30+00:00")

    answers = set()
    for conditions in ([*_conditions(obj), same_instant], [same_instant, *_conditions(obj)]):
        obj["status"]["conditions"] = conditions
        answers.add(evaluate(obj))

    assert len(answers) == 1


@pytest.mark.parametrize(
    "conditions",
    [
        [None, 7, {"type": ["x"], "status": {}}],
        ["Succeeded"],
        [{"status": "True"}],
    ],
)
def test_a_condition_list_with_nothing_recognisable_is_unknown_and_says_what_was_seen(conditions):
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"}}
    verdict = evaluate({**job, "status": {"conditions": conditions}})
    assert verdict.phase is Phase.UNKNOWN
    assert verdict.reason.startswith("UnrecognisedConditions: unreadable entries")
    assert repr(conditions[0])[:10] in verdict.reason
