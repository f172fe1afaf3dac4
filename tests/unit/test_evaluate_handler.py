"""EvaluateFunction's handler, run on every sample event in events/ and on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.local import load_handler
from tests.support.lambdas import EVENTS, FakeLambdaContext, load_event

app = load_handler("evaluate")  # functions/evaluate/app.py, under a name of its own

# events/evaluate-*.json -> the phase `sam local invoke EvaluateFunction -e <file>` must return.
EXPECTED_PHASES = {
    "evaluate-pytorchjob-succeeded-index5.json": "SUCCEEDED",
    "evaluate-ekscall-object.json": "RUNNING",
    "evaluate-ekscall-list-one.json": "SUCCEEDED",
    "evaluate-ekscall-list-empty.json": "NOT_FOUND",
    "evaluate-ekscall-joblist-one.json": "FAILED",
    "evaluate-sagemaker-trainingjob.json": "RUNNING",
    "evaluate-azureml-job.json": "FAILED",
    "evaluate-jobset-failed.json": "FAILED",
    "evaluate-rayjob-complete-failed.json": "FAILED",
    "evaluate-sparkapplication-completed.json": "SUCCEEDED",
    "evaluate-volcano-job-list-one.json": "RUNNING",
    "evaluate-mpijob-v2beta1-succeeded.json": "SUCCEEDED",
    "evaluate-trainjob-progress.json": "RUNNING",
}
# The samples whose controller reports progress (child Job counts, Trainer's trainerStatus).
WITH_PROGRESS = {"evaluate-jobset-failed.json", "evaluate-trainjob-progress.json"}
EVENT_FILES = sorted(p.name for p in Path(EVENTS).glob("evaluate-*.json"))


def test_every_sample_event_has_an_expected_phase():
    assert sorted(EXPECTED_PHASES) == EVENT_FILES


@pytest.mark.parametrize("name", EVENT_FILES)
def test_sample_event(name, lambda_context):
    result = app.lambda_handler(load_event(name), lambda_context)

    assert result["phase"] == EXPECTED_PHASES[name]
    progress = {"progress"} if name in WITH_PROGRESS else set()
    assert set(result) == {"phase", "terminal", "reason", "message", "since", "kind"} | progress
    assert result["terminal"] is (result["phase"] in {"SUCCEEDED", "FAILED", "STOPPED", "NOT_FOUND"})
    json.dumps(result)


def test_index5_event_quotes_the_succeeded_condition(lambda_context):
    result = app.lambda_handler(load_event("evaluate-pytorchjob-succeeded-index5.json"), lambda_context)

    assert result["reason"] == "PyTorchJobSucceeded"
    assert result["since"] == "2024-11-18T21:25:24Z"
    assert result["kind"] == "PyTorchJob"


def test_empty_list_names_the_kind(event_loader, lambda_context):
    result = app.lambda_handler(event_loader("evaluate-ekscall-list-empty.json"), lambda_context)

    assert result["kind"] == "PyTorchJob"
    assert result["reason"] == "NotFound"


def test_several_items_raise_invalid_input_naming_the_count(lambda_context):
    event = load_event("evaluate-ekscall-list-one.json")
    event["ResponseBody"]["items"] *= 2

    with pytest.raises(app.InvalidInput, match=r"ResponseBody\.items' holds 2 objects"):
        app.lambda_handler(event, lambda_context)


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"ResponseBody": "404 page not found"}, "ResponseBody"),
        ({"object": {"apiVersion": "kubeflow.org/v1"}}, "kind"),
        ({"apiVersion": "kubeflow.org/v1", "kind": "Notebook"}, "unsupported kind"),
        ([], "JSON object"),
    ],
)
def test_bad_input_raises_invalid_input(event, field, lambda_context):
    with pytest.raises(app.InvalidInput) as raised:
        app.lambda_handler(event, lambda_context)

    assert field in str(raised.value)
    assert type(raised.value).__name__ == "InvalidInput"  # the error name Step Functions sees


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3),
    max_leaves=20,
)


@settings(max_examples=60)
@given(st.one_of(json_values, json_values.map(lambda v: {"ResponseBody": v}), json_values.map(lambda v: {"object": v})))
def test_handler_raises_only_invalid_input(event):
    try:
        result = app.lambda_handler(event, FakeLambdaContext())
    except app.InvalidInput:
        return
    json.dumps(result)
