"""Two stacks in one account and region share no physical name: every name the template sets is the
stack's own, and no resource gets a fixed name from SAM."""

from __future__ import annotations

from typing import Any

from tests.cfn import load_template
from tests.support.lambdas import ROOT

TEMPLATE = load_template(ROOT / "template.yaml")
# Properties that set a physical name (the ones this template uses, and the usual others).
NAME_PROPERTIES = {
    "FunctionName",
    "LayerName",
    "LogGroupName",
    "Name",
    "TableName",
    "TopicName",
    "QueueName",
    "RoleName",
    "RuleName",
    "BucketName",
    "AlarmName",
    "StateMachineName",
}


def names(resources: dict[str, Any]) -> list[tuple[str, Any]]:
    """(where, value) of every name a resource, or a SAM event of it, sets for itself."""
    found = []
    for rid, resource in resources.items():
        props = resource.get("Properties") or {}
        found += [(f"{rid}.{key}", value) for key, value in props.items() if key in NAME_PROPERTIES]
        for event, spec in (props.get("Events") or {}).items():
            event_props = spec.get("Properties") or {}
            found += [(f"{rid}.{event}.{k}", v) for k, v in event_props.items() if k in NAME_PROPERTIES]
    return [(where, value) for where, value in found if not (isinstance(value, dict) and "Ref" in value)]


def rendered(value: Any, stack: str) -> str:
    """A name as CloudFormation would render it for ``stack`` (only what these names use)."""
    if isinstance(value, dict) and "Fn::Sub" in value:
        text = value["Fn::Sub"] if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"][0]
        return text.replace("${AWS::StackName}", stack)
    return str(value)


def test_every_physical_name_is_the_stacks_own():
    found = names(TEMPLATE["Resources"])
    assert found, "no names found: the walk is broken"
    first = {path: rendered(value, "jobsync-prod") for path, value in found}
    second = {path: rendered(value, "jobsync-staging") for path, value in found}
    shared = {path: name for path, name in first.items() if second[path] == name}
    assert shared == {}, f"these names are the same in every stack: {shared}"


def test_the_schedule_is_named_for_its_stack():
    schedule = TEMPLATE["Resources"]["Schedule"]["Properties"]
    assert rendered(schedule["Name"], "jobsync-prod") == "jobsync-prod-schedule"
