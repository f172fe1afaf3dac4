"""Least privilege in template.yaml: no wildcard action anywhere, no wildcard resource where IAM can scope.

Every IAM statement in the template (managed policies, role policies, the
functions' and the state machine's inline policies, trust policies) is
checked. The only ``Resource: "*"`` allowed is for actions that have no
resource-level permissions, listed in RESOURCE_STAR_ONLY with the reason.
The template uses no SAM policy template (LambdaInvokePolicy grants function:<name>*, which is also
another stack's functions: test_template_stacks.py); its own statements name their ARNs.
One statement may say ``kms:*``: a KMS key policy's grant to the account's own
root, the default key policy, which hands the key to the account's IAM policies
(it grants no one anything by itself, and without it the key can become
unmanageable). In a key policy ``Resource: "*"`` is the key itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cfn import load_template

TEMPLATE = load_template()

# Actions whose service documents no resource-level permissions: "*" is the only valid Resource.
RESOURCE_STAR_ONLY = {
    # X-Ray: trace segments and sampling are account-wide (no resource types for these actions).
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    # CloudWatch Logs vended-log delivery, which Step Functions logging needs: these APIs do not
    # support resource-level permissions (Step Functions developer guide, "IAM policies for logging").
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every IAM statement under ``node``, with where it sits (both branches of an Fn::If included)."""
    if isinstance(node, dict):
        if isinstance(node.get("Statement"), list | dict) and "Version" in node:
            for i, statement in enumerate(_as_list(node["Statement"])):
                yield f"{where}.Statement[{i}]", statement
            return
        for key, value in node.items():
            yield from statements(value, f"{where}.{key}" if where else key)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from statements(item, f"{where}[{i}]")


def _text(value: Any) -> str:
    """A Resource as text: ``!Sub`` strings as written, other intrinsics as their repr."""
    if isinstance(value, dict) and "Fn::Sub" in value:
        sub = value["Fn::Sub"]
        return sub if isinstance(sub, str) else sub[0]
    return value if isinstance(value, str) else repr(value)


def is_wildcard_resource(resource: Any) -> bool:
    """``*``, or an ARN whose every part after the service is a wildcard (arn:aws:s3:::*)."""
    text = _text(resource)
    if text == "*":
        return True
    match = re.match(r"^arn:[^:]*:[^:]*:(?P<rest>.*)$", text)
    return bool(match) and set(match["rest"]) <= {"*", ":", "/"}


ACCOUNT_ROOT = {"AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}}


def is_key_policy_default(where: str, statement: dict[str, Any]) -> bool:
    """The default KMS key policy statement: the account root, ``kms:*``, in a KeyPolicy."""
    return (
        ".KeyPolicy." in where
        and statement.get("Principal") == ACCOUNT_ROOT
        and _as_list(statement.get("Action")) == ["kms:*"]
        and "Condition" not in statement
    )


def problems(statement: dict[str, Any], where: str = "") -> list[str]:
    found = []
    if statement.get("Effect") != "Allow":
        return []  # a Deny narrows; only Allow grants
    if is_key_policy_default(where, statement):
        return []
    if "NotAction" in statement or "NotResource" in statement:
        found.append("NotAction/NotResource grant everything else")
    actions = [str(a) for a in _as_list(statement.get("Action", []))]
    found += [f"wildcard action {a!r}" for a in actions if "*" in a]
    if "Principal" in statement:  # a trust policy: who may assume the role
        principal = statement["Principal"]
        if principal == "*" or "*" in _as_list((principal or {}).get("AWS", [])):
            found.append("anyone may assume the role")
        return found
    for resource in _as_list(statement.get("Resource", [])):
        if is_wildcard_resource(resource):
            unscoped = sorted(set(actions) - RESOURCE_STAR_ONLY)
            if unscoped:
                found.append(f"Resource {_text(resource)!r} for actions that can be scoped: {unscoped}")
    return found


ALL = list(statements(TEMPLATE["Resources"]))


def test_the_template_has_the_statements_this_test_expects_to_check():
    where = {w.split(".")[0] for w, _ in ALL}
    assert {"FunctionBasePolicy", "ClusterAccessRole", "EvaluateRole", "RunJobStateMachine"} <= where
    assert len(ALL) >= 8


@pytest.mark.parametrize(("where", "statement"), ALL, ids=[w for w, _ in ALL])
def test_no_statement_grants_a_wildcard(where, statement):
    assert problems(statement, where) == []


def test_every_allowlisted_action_is_used_so_the_list_stays_honest():
    used = {str(a) for _, s in ALL for a in _as_list(s.get("Action", []))}
    assert used >= RESOURCE_STAR_ONLY


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ({"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::bucket/*"}, "wildcard action"),
        ({"Effect": "Allow", "Action": "*", "Resource": "*"}, "wildcard action"),
        ({"Effect": "Allow", "Action": "s3:Get*", "Resource": "arn:aws:s3:::b/k"}, "wildcard action"),
        ({"Effect": "Allow", "Action": "eks:DescribeCluster", "Resource": "*"}, "can be scoped"),
        ({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::*"}, "can be scoped"),
        ({"Effect": "Allow", "Action": ["xray:PutTraceSegments", "s3:GetObject"], "Resource": "*"}, "can be scoped"),
        ({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}, "NotAction"),
        ({"Effect": "Allow", "Principal": "*", "Action": "sts:AssumeRole"}, "anyone"),
    ],
)
def test_the_checker_catches_what_it_is_for(statement, problem):
    assert any(problem in p for p in problems(statement))


def test_kms_star_is_allowed_only_as_the_default_key_policy():
    root = {"Effect": "Allow", "Principal": ACCOUNT_ROOT, "Action": "kms:*", "Resource": "*"}
    assert problems(root, "AlarmTopicKey.Properties.KeyPolicy.Statement[0]") == []
    assert problems(root, "ClusterAccessRole.Properties.Policies[0].PolicyDocument.Statement[0]")
    service = dict(root, Principal={"Service": "cloudwatch.amazonaws.com"})
    assert problems(service, "AlarmTopicKey.Properties.KeyPolicy.Statement[1]")
    assert problems({**root, "Action": ["kms:*", "s3:*"]}, "AlarmTopicKey.Properties.KeyPolicy.Statement[0]")


def test_the_checker_allows_what_cannot_be_scoped_and_scoped_wildcards():
    assert problems({"Effect": "Allow", "Action": ["xray:PutTraceSegments"], "Resource": "*"}) == []
    scoped = {"Fn::Sub": "arn:${AWS::Partition}:s3:::${TemplateBucket}/${TemplatePrefix}*"}
    assert problems({"Effect": "Allow", "Action": "s3:GetObject", "Resource": scoped}) == []
