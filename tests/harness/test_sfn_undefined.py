"""A JSONata expression that returns nothing, in each position a definition can hold one, against what AWS does.

AWS fails the state with States.QueryEvaluationError, naming the field, where a field's expression returns
nothing; inside an expression, an object or array constructor drops what is nothing, and that is no error.
Small JSONata machines written in the test, as in test_sfn_harness.py.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from harness.sfn import LocalStepFunctions

ABSENT = "{% $states.input.absent %}"
DONE = {"Type": "Pass", "End": True}


def machine(states: dict[str, Any]) -> dict[str, Any]:
    return {"QueryLanguage": "JSONata", "StartAt": "S", "States": {**states, "Done": DONE}}


@pytest.fixture(scope="module")
def sfn():
    with LocalStepFunctions({}) as harness:
        yield harness


def run(sfn: LocalStepFunctions, states: dict[str, Any]) -> dict[str, Any]:
    arn = sfn.create_state_machine(machine(states), f"m-{uuid.uuid4().hex[:8]}")
    return sfn.wait(sfn.start(arn, {"present": 1}))


FAILS = [
    pytest.param({"S": {"Type": "Pass", "Output": ABSENT, "End": True}}, "Output", id="output"),
    pytest.param({"S": {"Type": "Pass", "Output": {"v": ABSENT}, "End": True}}, "v", id="value-in-a-json-object"),
    pytest.param({"S": {"Type": "Pass", "Output": [1, ABSENT], "End": True}}, None, id="item-in-a-json-array"),
    pytest.param({"S": {"Type": "Pass", "Assign": {"x": ABSENT}, "Next": "Done"}}, "x", id="assign"),
    pytest.param({"S": {"Type": "Fail", "Error": "E", "Cause": ABSENT}}, "Cause", id="fail-cause"),
    pytest.param({"S": {"Type": "Fail", "Error": ABSENT, "Cause": "c"}}, "Error", id="fail-error"),
    pytest.param(
        {"S": {"Type": "Choice", "Choices": [{"Condition": ABSENT, "Next": "Done"}], "Default": "Done"}},
        None,
        id="choice-condition",
    ),
    pytest.param(
        {"S": {"Type": "Map", "Items": ABSENT, "ItemProcessor": {"StartAt": "P", "States": {"P": DONE}}, "End": True}},
        "Items",
        id="map-items",
    ),
    pytest.param(
        {"S": {"Type": "Fail", "Error": "E", "Cause": "{% $string($states.input.absent) %}"}},
        "Cause",
        id="a-function-of-nothing-is-nothing",
    ),
]


@pytest.mark.parametrize(("states", "field"), FAILS)
def test_a_field_that_returns_nothing_fails_the_state_naming_the_field(sfn, states, field):
    description = run(sfn, states)
    assert (description["status"], description["error"]) == ("FAILED", "States.QueryEvaluationError")
    assert "returned nothing (undefined)" in description["cause"]
    if field:
        assert f"specified for the field '{field}' returned nothing" in description["cause"]


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("{% {'v': $states.input.absent, 'w': 1} %}", {"w": 1}),
        ("{% [$states.input.absent, 1] %}", [1]),
        ("{% {'v': $exists($states.input.absent) ? $states.input.absent : null} %}", {"v": None}),
        ("{% {'v': $states.input.absent ? 'yes' : ''} %}", {"v": ""}),
    ],
    ids=["object-constructor-drops-the-key", "array-constructor-drops-the-item", "exists-fallback", "truthy-fallback"],
)
def test_inside_an_expression_nothing_is_dropped_or_has_its_fallback(sfn, expression, value):
    description = run(sfn, {"S": {"Type": "Pass", "Output": expression, "End": True}})
    assert description["status"] == "SUCCEEDED" and json.loads(description["output"]) == value


@pytest.mark.parametrize("assigned", [None, "{% null %}"], ids=["literal", "expression"])
def test_a_variable_assigned_null_is_null_not_nothing(sfn, assigned):
    # AWS: Assign {"x": null} holds null; "{% $x %}" is null (a field that is nothing would fail instead).
    states = {
        "S": {"Type": "Pass", "Assign": {"x": assigned}, "Next": "T"},
        "T": {"Type": "Pass", "Output": {"x": "{% $x %}", "type": "{% $type($x) %}"}, "End": True},
    }
    description = run(sfn, states)
    assert description["status"] == "SUCCEEDED"
    assert json.loads(description["output"]) == {"x": None, "type": "null"}
