"""Two stacks in one account and region: no policy of one reaches a resource of the other.

The template as SAM translates it (the roles and permissions SAM generates
included), rendered for stacks whose names start alike, as environments are
often named: ``jobsync`` beside ``jobsync-prod``. Every ARN and ARN pattern a
policy grants on or is conditioned on, in one stack, is matched (IAM's ``*`` and
``?``) against the ARNs of every resource of the other: its log groups and their
streams, functions, state machines and their executions, alarms, queues, the
table, the bus, the rules, the key, the topic. A prefix such as
``/aws/lambda/${AWS::StackName}-*`` lets ``jobsync`` write ``jobsync-prod``'s
logs, EMF metric lines included.
"""

from __future__ import annotations

import itertools

import pytest

from tests.support.stack import Stack, arn_patterns, matches, render, translated

# Every optional resource on: the alarm topic and its key, the notifier's role and repository, the template
# bucket, the VPC endpoints.
PARAMETERS = {
    "ClusterName": "training",
    "AlarmEmail": "ml-ops@example.com",
    "CreateNotifierIdentity": "true",
    "CreateNotifierRepository": "true",
    "TemplateBucket": "jobsync-templates-123456789012",
    "SubnetIds": "subnet-0a1b2c3d,subnet-1a2b3c4d",
    "SecurityGroupIds": "sg-0a1b2c3d",
    "CreateVpcEndpoints": "true",
    "VpcId": "vpc-0a1b2c3d",
    "RouteTableIds": "rtb-0a1b2c3d",
}
NAMES = ("jobsync", "jobsync-prod", "jobsync-submit")


@pytest.fixture(scope="module")
def stacks() -> dict[str, Stack]:
    template = translated()
    return {name: render(template, name, PARAMETERS) for name in NAMES}


def overlaps(one: Stack, other: Stack) -> list[str]:
    return [
        f"{where}: {pattern!r} matches {other.name}'s {rid} {arn!r}"
        for where, pattern in arn_patterns(one)
        for rid, arns in other.arns.items()
        for arn in arns
        if matches(pattern, arn)
    ]


@pytest.mark.parametrize(("one", "other"), list(itertools.permutations(NAMES, 2)))
def test_no_policy_of_one_stack_reaches_a_resource_of_the_other(stacks, one, other):
    assert overlaps(stacks[one], stacks[other]) == []


def test_each_function_may_write_its_own_log_group_and_each_alarm_may_use_the_key(stacks):
    """The scoping still grants what the stack needs: the check above compares real names."""
    stack = stacks["jobsync"]
    patterns = [p for _, p in arn_patterns(stack)]
    for rid, resource in stack.resources.items():
        if resource["Type"] == "AWS::Lambda::Function":
            group = resource["Properties"]["LoggingConfig"]["LogGroup"]
            stream = f"arn:aws:logs:us-east-1:123456789012:log-group:{group}:log-stream:2026/01/01/[$LATEST]0a1b"
            assert any(matches(p, stream) for p in patterns), rid
    key = stack.resources["AlarmTopicKey"]["Properties"]["KeyPolicy"]["Statement"]
    allowed = [
        v for s in key for values in (s.get("Condition") or {}).values() for v in values.get("aws:SourceArn", [])
    ]
    alarms = [rid for rid, r in stack.resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert len(alarms) >= 2
    for rid in alarms:
        (arn,) = stack.arns[rid]
        assert any(matches(p, arn) for p in allowed), rid


@pytest.mark.parametrize(
    ("pattern", "arn", "expected"),
    [
        (
            "arn:aws:logs:r:a:log-group:/aws/lambda/jobsync-*:*",
            "arn:aws:logs:r:a:log-group:/aws/lambda/jobsync-prod-x:*",
            True,
        ),
        (
            "arn:aws:logs:r:a:log-group:/aws/lambda/jobsync-x:*",
            "arn:aws:logs:r:a:log-group:/aws/lambda/jobsync-prod-x:*",
            False,
        ),
        ("arn:aws:lambda:r:a:function:jobsync-submit*", "arn:aws:lambda:r:a:function:jobsync-submit-status", True),
        (
            "arn:aws:states:r:a:execution:jobsync-run-job:*",
            "arn:aws:states:r:a:execution:jobsync-prod-run-job:x",
            False,
        ),
        ("arn:aws:logs:r:a:log-group:g:*", "arn:aws:logs:r:a:log-group:g:log-stream:[$LATEST]x", True),
        ("arn:aws:s3:::b/k?", "arn:aws:s3:::b/k1", True),
        ("arn:aws:s3:::b/k?", "arn:aws:s3:::b/k12", False),
    ],
)
def test_the_matcher_reads_wildcards_as_iam_does(pattern, arn, expected):
    assert matches(pattern, arn) is expected
