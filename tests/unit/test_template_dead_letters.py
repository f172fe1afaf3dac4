"""Every failure the stack sends to a queue can reach it: read from the template as SAM translates it.

EventBridge sends an event it could not deliver to the rule's dead-letter queue
only if the queue's policy allows ``events.amazonaws.com`` for that rule's ARN
(``aws:SourceArn``); otherwise the event is dropped with no trace. Lambda sends
a failed asynchronous invocation to the function's on-failure destination with
the function's own role. Both are checked for every rule and every function
the translated template has, on the ARNs a deployment would have.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.stack import Stack, as_list, matches, render, statements, translated

PARAMETERS = {"ClusterName": "training"}


@pytest.fixture(scope="module")
def stack() -> Stack:
    return render(translated(), "jobsync", PARAMETERS)


def of_type(stack: Stack, kind: str) -> dict[str, dict[str, Any]]:
    return {rid: r for rid, r in stack.resources.items() if r["Type"] == kind}


def queue_of(stack: Stack, arn: str) -> str:
    (rid,) = [rid for rid in of_type(stack, "AWS::SQS::Queue") if arn in stack.arns[rid]]
    return rid


def allows(statement: dict[str, Any], action: str, resource: str) -> bool:
    return (
        statement.get("Effect") == "Allow"
        and any(matches(a, action) for a in as_list(statement.get("Action", [])))
        and any(matches(r, resource) for r in as_list(statement.get("Resource", [])))
    )


def source_arns(statement: dict[str, Any]) -> list[str]:
    conditions = statement.get("Condition") or {}
    return [v for op in ("ArnEquals", "ArnLike") for v in as_list(conditions.get(op, {}).get("aws:SourceArn", []))]


def dead_letters(stack: Stack) -> list[tuple[str, str]]:
    """(rule, queue) for every rule target with a dead-letter queue."""
    return [
        (rid, queue_of(stack, target["DeadLetterConfig"]["Arn"]))
        for rid, rule in of_type(stack, "AWS::Events::Rule").items()
        for target in rule["Properties"].get("Targets", [])
        if "DeadLetterConfig" in target
    ]


def test_the_stack_has_the_dead_letter_queues_this_test_expects_to_check(stack):
    rules = {rule for rule, _ in dead_letters(stack)}
    assert rules == {"CleanupFunctionExecutionEnded", "ResumeFunctionJobEnded"}


@pytest.mark.parametrize("rule", ["CleanupFunctionExecutionEnded", "ResumeFunctionJobEnded"])
def test_each_rules_dead_letter_queue_lets_that_rule_send_and_no_other(stack, rule):
    (queue,) = [q for r, q in dead_letters(stack) if r == rule]
    (queue_arn,) = [a for a in stack.arns[queue] if a.startswith("arn:aws:sqs:")]
    (rule_arn,) = stack.arns[rule]
    policies = [  # a queue policy names its queues by URL (a Ref to the queue)
        p["Properties"]["PolicyDocument"]
        for p in of_type(stack, "AWS::SQS::QueuePolicy").values()
        if stack.refs[queue] in p["Properties"]["Queues"]
    ]
    assert policies, f"{queue} has no queue policy"
    granting = [
        s
        for doc in policies
        for _, s in statements(doc)
        if allows(s, "sqs:SendMessage", queue_arn) and s.get("Principal") == {"Service": "events.amazonaws.com"}
    ]
    assert any(rule_arn in source_arns(s) for s in granting), f"{queue}'s policy does not let {rule} send"
    # Nothing else may send as EventBridge: each grant to it names this stack's rules only.
    rules = {a for r, _ in dead_letters(stack) for a in stack.arns[r]}
    assert granting and all(source_arns(s) and set(source_arns(s)) <= rules for s in granting), granting


def test_each_functions_on_failure_destination_is_one_its_role_may_send_to(stack):
    configs = of_type(stack, "AWS::Lambda::EventInvokeConfig")
    assert len(configs) >= 2
    functions = {stack.refs[rid]: f for rid, f in of_type(stack, "AWS::Lambda::Function").items()}
    roles = {arn: r for rid, r in of_type(stack, "AWS::IAM::Role").items() for arn in stack.arns[rid]}
    for rid, config in configs.items():
        props = config["Properties"]
        destination = props["DestinationConfig"]["OnFailure"]["Destination"]
        queue_of(stack, destination)  # a queue of this stack
        role = roles[functions[props["FunctionName"]]["Properties"]["Role"]]
        grants = [s for _, s in statements(role["Properties"].get("Policies", []))]
        assert any(allows(s, "sqs:SendMessage", destination) for s in grants), rid
