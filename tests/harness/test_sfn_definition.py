"""CreateStateMachine's checks on a definition, which moto leaves out (harness/sfn/definition.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from harness.sfn.definition import check_definition

ROOT = Path(__file__).resolve().parents[2]


def machine(inner_name: str) -> dict:
    """A Map whose processor has one state, beside a top-level Fail named "Failed"."""
    return {
        "StartAt": "Each",
        "States": {
            "Each": {
                "Type": "Map",
                "ItemProcessor": {"StartAt": inner_name, "States": {inner_name: {"Type": "Pass", "End": True}}},
                "Next": "Failed",
            },
            "Failed": {"Type": "Fail"},
        },
    }


def test_a_name_used_in_a_map_and_at_the_top_is_refused_as_aws_refuses_it():
    with pytest.raises(ClientError) as refused:
        check_definition(machine("Failed"))
    assert refused.value.response["Error"]["Code"] == "InvalidDefinition"
    message = refused.value.response["Error"]["Message"]
    assert "DUPLICATE_STATE_NAME" in message
    assert "/States/Each/ItemProcessor/States/Failed" in message and "'Failed' at /States/Failed" in message


def test_a_name_used_in_two_parallel_branches_is_refused():
    branch = {"StartAt": "Same", "States": {"Same": {"Type": "Pass", "End": True}}}
    both = {"Type": "Parallel", "Branches": [branch, branch], "End": True}
    definition = {"StartAt": "Both", "States": {"Both": both}}
    with pytest.raises(ClientError, match="Branches/1/States/Same"):
        check_definition(definition)


def test_distinct_names_pass():
    check_definition(machine("Recorded"))


DEFINITIONS = [*ROOT.glob("statemachine/*.asl.json"), *ROOT.glob("examples/*/*.asl.json")]


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for p in DEFINITIONS))
def test_every_shipped_definition_uses_each_state_name_once(path):
    check_definition(json.loads((ROOT / path).read_text()))
