"""template.yaml as CloudFormation deploys it: translated by SAM, then rendered for one stack.

``translated()`` is the plain CloudFormation SAM makes of the template (the rules,
permissions and roles SAM generates included), by ``tools/scan/sam_translate.py``
with the pinned aws-sam-translator of ``.venv-scan``: its pydantic pin clashes
with the layer's, so it cannot live in the test environment. ``render()`` then
resolves every intrinsic function for a stack name and parameter values, and
gives each resource the physical name and ARNs CloudFormation would: a name the
template sets, or ``<stack>-<logical id>-<suffix>`` where CloudFormation makes
one up.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRANSLATOR = ROOT / "tools" / "scan" / "sam_translate.py"
SCAN_PYTHON = ROOT / ".venv-scan" / "bin" / "python"
PARTITION, REGION, ACCOUNT = "aws", "us-east-1", "123456789012"
SUFFIX = "1AB2CD3EF4GH"  # CloudFormation's made-up part of a generated name
NO_VALUE = object()


@functools.cache
def translated(template: Path = ROOT / "template.yaml") -> dict[str, Any]:
    """SAM's translation of ``template``; skipped (failed under CI) without ``.venv-scan`` (``make scan``)."""
    if not SCAN_PYTHON.exists():
        message = "the SAM translator is in .venv-scan: make .venv-scan/.installed (or make scan) first"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "template.json"
        env = {**os.environ, "AWS_DEFAULT_REGION": REGION}
        subprocess.run(
            [str(SCAN_PYTHON), str(TRANSLATOR), str(template), str(out)], check=True, env=env, capture_output=True
        )
        return json.loads(out.read_text())


# type -> (the property that names it, its Ref, its attributes); "{name}" is its physical name
ARN = f"arn:{PARTITION}:{{service}}:{REGION}:{ACCOUNT}:{{rest}}"
TYPES: dict[str, tuple[str | None, str, dict[str, str]]] = {
    "AWS::Lambda::Function": ("FunctionName", "{name}", {"Arn": ARN.format(service="lambda", rest="function:{name}")}),
    "AWS::Logs::LogGroup": ("LogGroupName", "{name}", {"Arn": ARN.format(service="logs", rest="log-group:{name}:*")}),
    "AWS::IAM::Role": ("RoleName", "{name}", {"Arn": f"arn:{PARTITION}:iam::{ACCOUNT}:role/{{name}}"}),
    "AWS::IAM::ManagedPolicy": ("ManagedPolicyName", f"arn:{PARTITION}:iam::{ACCOUNT}:policy/{{name}}", {}),
    "AWS::SQS::Queue": (
        "QueueName",
        f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{{name}}",
        {"Arn": ARN.format(service="sqs", rest="{name}"), "QueueName": "{name}"},
    ),
    "AWS::DynamoDB::Table": ("TableName", "{name}", {"Arn": ARN.format(service="dynamodb", rest="table/{name}")}),
    "AWS::Events::EventBus": ("Name", "{name}", {"Arn": ARN.format(service="events", rest="event-bus/{name}")}),
    "AWS::Events::Rule": ("Name", "{name}", {"Arn": ARN.format(service="events", rest="rule/{bus}{name}")}),
    "AWS::StepFunctions::StateMachine": (
        "StateMachineName",
        ARN.format(service="states", rest="stateMachine:{name}"),
        {"Name": "{name}", "Arn": ARN.format(service="states", rest="stateMachine:{name}")},
    ),
    "AWS::CloudWatch::Alarm": ("AlarmName", "{name}", {"Arn": ARN.format(service="cloudwatch", rest="alarm:{name}")}),
    "AWS::KMS::Key": (None, "{name}", {"Arn": ARN.format(service="kms", rest="key/{name}")}),
    "AWS::SNS::Topic": ("TopicName", ARN.format(service="sns", rest="{name}"), {}),
    "AWS::Lambda::LayerVersion": ("LayerName", ARN.format(service="lambda", rest="layer:{name}:1"), {}),
    "AWS::ECR::Repository": (
        "RepositoryName",
        "{name}",
        {
            "Arn": ARN.format(service="ecr", rest="repository/{name}"),
            "RepositoryUri": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{{name}}",
        },
    ),
    "AWS::EC2::SecurityGroup": (None, "sg-{name}", {"GroupId": "sg-{name}"}),
    "AWS::Scheduler::Schedule": (
        "Name",
        "{name}",
        {"Arn": ARN.format(service="scheduler", rest="schedule/default/{name}")},
    ),
}
# What lives under a resource and is named by its ARN too: a log group's streams, a state machine's executions.
CHILDREN = {
    "AWS::Logs::LogGroup": lambda arn: [
        arn.removesuffix(":*"),
        arn.removesuffix("*") + "log-stream:2026/01/01/[$LATEST]0a1b",
    ],
    "AWS::StepFunctions::StateMachine": lambda arn: [arn.replace(":stateMachine:", ":execution:") + ":run-1"],
    "AWS::Lambda::Function": lambda arn: [arn + ":$LATEST"],
}


@dataclass
class Stack:
    """One deployment of the translated template: its resources with every intrinsic resolved."""

    name: str
    resources: dict[str, dict[str, Any]]
    arns: dict[str, list[str]] = field(default_factory=dict)  # logical id -> the ARNs of it and what it holds
    refs: dict[str, Any] = field(default_factory=dict)  # logical id -> what a Ref to it gives
    outputs: dict[str, Any] = field(default_factory=dict)  # the outputs this stack has, resolved


def render(template: dict[str, Any], stack: str, parameters: dict[str, Any] | None = None) -> Stack:
    """``template`` as CloudFormation would deploy it as stack ``stack`` with ``parameters``."""
    return _Renderer(template, stack, parameters or {}).stack()


class _Renderer:
    def __init__(self, template: dict[str, Any], stack: str, parameters: dict[str, Any]) -> None:
        self.template = template
        self.stack_name = stack
        self.parameters: dict[str, Any] = {}
        for name, spec in template.get("Parameters", {}).items():
            value = parameters.get(name, spec.get("Default"))
            if value is None:
                raise ValueError(f"parameter {name} has no value")
            self.parameters[name] = value.split(",") if spec["Type"] == "CommaDelimitedList" else value
        self.pseudo = {
            "AWS::StackName": stack,
            "AWS::Partition": PARTITION,
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackId": ARN.format(service="cloudformation", rest=f"stack/{stack}/{SUFFIX}"),
            "AWS::NoValue": NO_VALUE,
        }
        self.conditions: dict[str, bool] = {}
        self.resources = {
            rid: r for rid, r in template["Resources"].items() if "Condition" not in r or self.condition(r["Condition"])
        }

    def condition(self, name: str) -> bool:
        if name not in self.conditions:
            self.conditions[name] = bool(self.value(self.template["Conditions"][name]))
        return self.conditions[name]

    def physical(self, rid: str) -> tuple[str, dict[str, str]]:
        """A resource's name, and what the type's formats need besides."""
        resource = self.resources[rid]
        prop, _, _ = TYPES.get(resource["Type"], (None, "", {}))
        props = resource.get("Properties", {})
        name = self.value(props[prop]) if prop and prop in props else f"{self.stack_name}-{rid}-{SUFFIX}"
        bus = props.get("EventBusName")
        extra = {"bus": f"{self.value(bus)}/" if bus and self.value(bus) != "default" else ""}
        return str(name), extra

    def ref(self, name: str) -> Any:
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.parameters:
            return self.parameters[name]
        physical, extra = self.physical(name)
        _, ref, _ = TYPES.get(self.resources[name]["Type"], (None, "{name}", {}))
        return ref.format(name=physical, **extra)

    def attribute(self, rid: str, attribute: str) -> str:
        kind = self.resources[rid]["Type"]
        attributes = TYPES.get(kind, (None, "", {}))[2]
        if attribute not in attributes:
            raise KeyError(f"{rid}.{attribute}: add the {kind} attribute to tests/support/stack.py")
        physical, extra = self.physical(rid)
        return attributes[attribute].format(name=physical, **extra)

    def sub(self, text: str, variables: dict[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            inner = match[1]
            if inner.startswith("!"):
                return "${" + inner[1:] + "}"
            if inner in variables:
                return str(self.value(variables[inner]))
            if "." in inner and inner.split(".", 1)[0] in self.resources:
                return self.attribute(*inner.split(".", 1))
            return str(self.ref(inner))

        return re.sub(r"\$\{([^}]+)\}", one, text)

    def value(self, node: Any) -> Any:
        """``node`` with every intrinsic function resolved; NO_VALUE for AWS::NoValue."""
        if isinstance(node, list):
            return [v for v in (self.value(item) for item in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, arg),) = node.items()
            if key == "Ref":
                return self.ref(arg)
            if key == "Fn::GetAtt":
                rid, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.attribute(rid, attribute)
            if key == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else arg
                return self.sub(text, variables)
            if key == "Fn::Join":
                return str(self.value(arg[0])).join(str(v) for v in self.value(arg[1]))
            if key == "Fn::Select":
                return self.value(arg[1])[int(self.value(arg[0]))]
            if key == "Fn::Split":
                return str(self.value(arg[1])).split(self.value(arg[0]))
            if key == "Fn::If":
                return self.value(arg[1] if self.condition(arg[0]) else arg[2])
            if key == "Fn::Equals":
                return self.value(arg[0]) == self.value(arg[1])
            if key == "Fn::Not":
                return not self.value(arg[0])
            if key == "Fn::And":
                return all(self.value(a) for a in arg)
            if key == "Fn::Or":
                return any(self.value(a) for a in arg)
            if key == "Condition":
                return self.condition(arg)
            if key.startswith("Fn::"):
                raise NotImplementedError(f"{key}: add it to tests/support/stack.py")
        return {k: v for k, v in ((k, self.value(v)) for k, v in node.items()) if v is not NO_VALUE}

    def arns(self, rid: str) -> list[str]:
        kind = self.resources[rid]["Type"]
        if kind not in TYPES:
            return []
        found = [self.attribute(rid, "Arn")] if "Arn" in TYPES[kind][2] else []
        ref = self.ref(rid)
        if isinstance(ref, str) and ref.startswith("arn:"):
            found.append(ref)
        found += [child for arn in list(found) for child in CHILDREN.get(kind, lambda _: [])(arn)]
        return sorted(set(found))

    def stack(self) -> Stack:
        resources = {rid: self.value(r) for rid, r in self.resources.items()}
        arns = {rid: self.arns(rid) for rid in self.resources}
        outputs = {
            name: self.value(spec["Value"])
            for name, spec in self.template.get("Outputs", {}).items()
            if "Condition" not in spec or self.condition(spec["Condition"])
        }
        return Stack(self.stack_name, resources, arns, {rid: self.ref(rid) for rid in self.resources}, outputs)


def statements(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every policy statement under ``node`` (rendered), with where it sits."""
    if isinstance(node, dict):
        if isinstance(node.get("Statement"), list | dict):  # SAM's policy templates give no Version
            listed = node["Statement"] if isinstance(node["Statement"], list) else [node["Statement"]]
            for i, statement in enumerate(listed):
                yield f"{where}.Statement[{i}]", statement
            return
        for key, value in node.items():
            yield from statements(value, f"{where}.{key}" if where else key)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from statements(item, f"{where}[{i}]")


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def arn_patterns(stack: Stack) -> list[tuple[str, str]]:
    """(where, pattern) of every ARN or ARN pattern a policy of ``stack`` grants on or is conditioned on.

    Statements' Resource and NotResource (``*`` alone is left to test_template_security: it is
    allowed only where IAM cannot scope, or in a key policy, where it is the key), the ARN keys of
    their conditions (aws:SourceArn, lambda:SourceFunctionArn, ...), and Lambda permissions' SourceArn.
    """
    found: list[tuple[str, str]] = []
    for rid, resource in stack.resources.items():
        for where, statement in statements(resource.get("Properties", {}), rid):
            for key in ("Resource", "NotResource"):
                found += [(f"{where}.{key}", r) for r in as_list(statement.get(key, [])) if r != "*"]
            for operator, tests in (statement.get("Condition") or {}).items():
                for condition_key, values in tests.items():
                    if condition_key.lower().endswith("arn"):
                        found += [(f"{where}.Condition.{operator}.{condition_key}", v) for v in as_list(values)]
        if resource["Type"] == "AWS::Lambda::Permission" and "SourceArn" in resource["Properties"]:
            found.append((f"{rid}.SourceArn", resource["Properties"]["SourceArn"]))
    return found


def matches(pattern: str, arn: str) -> bool:
    """IAM's wildcards: ``*`` any run of characters (``:`` and ``/`` included), ``?`` any one."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, arn) is not None
