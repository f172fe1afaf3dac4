"""The sweeper in template.yaml, as CloudFormation deploys it: scheduled in callback mode only, scoped exactly.

The template translated by SAM and rendered for a stack (tests/support/stack.py): the schedule SAM makes of
the function's ScheduleV2 event, the Lambdas' JOBSYNC_SWEEP_SECONDS, and every IAM statement that reaches the
token store's Scan.
"""

from __future__ import annotations

import json

import pytest

from tests.support.stack import Stack, as_list, render, statements, translated

PARAMETERS = {"ClusterName": "training", "CreateNotifierIdentity": "true"}


def stack(**parameters: str) -> Stack:
    return render(translated(), "jobsync", {**PARAMETERS, **parameters})


def schedule(rendered: Stack) -> dict:
    (found,) = [
        r["Properties"]
        for r in rendered.resources.values()
        if r["Type"] == "AWS::Scheduler::Schedule" and r["Properties"]["Name"] == "jobsync-sweep"
    ]
    return found


def sweep_seconds(rendered: Stack) -> set[str]:
    """JOBSYNC_SWEEP_SECONDS as every function of the stack gets it."""
    return {
        str(r["Properties"]["Environment"]["Variables"]["JOBSYNC_SWEEP_SECONDS"])
        for r in rendered.resources.values()
        if r["Type"] == "AWS::Lambda::Function"
    }


@pytest.mark.parametrize(
    ("mode", "sweeper", "state", "seconds"),
    [
        ("callback", "ENABLED", "ENABLED", "120"),
        ("callback", "DISABLED", "DISABLED", "0"),
        ("poll", "ENABLED", "DISABLED", "0"),
        ("watch", "ENABLED", "DISABLED", "0"),
    ],
)
def test_the_sweep_runs_in_callback_mode_unless_turned_off(mode, sweeper, state, seconds):
    rendered = stack(CompletionMode=mode, Sweeper=sweeper)
    props = schedule(rendered)
    assert props["State"] == state
    assert props["ScheduleExpression"] == "rate(2 minutes)"
    assert props["Target"]["Arn"] in rendered.arns["SweepFunction"]
    assert props["Target"]["RetryPolicy"]["MaximumRetryAttempts"] == 0
    # The Lambdas wait as the sweeper's presence says: the Await's backstop only when it runs.
    assert sweep_seconds(rendered) == {seconds}


@pytest.mark.parametrize(("minutes", "rate"), [(1, "rate(1 minute)"), (2, "rate(2 minutes)"), (4, "rate(4 minutes)")])
def test_the_lambdas_know_the_rate_the_schedule_runs_at(minutes, rate):
    rendered = stack(CompletionMode="callback", SweepMinutes=str(minutes))
    assert schedule(rendered)["ScheduleExpression"] == rate
    assert sweep_seconds(rendered) == {str(60 * minutes)}


def test_only_the_sweep_function_may_scan_the_token_store_and_the_notifier_reads_its_keys_alone():
    rendered = stack(CompletionMode="callback", CreateNotifierIdentity="true")
    table = rendered.arns["JobsyncTable"]
    sweep = rendered.arns["SweepFunction"]
    reading = [
        (where, s)
        for rid, r in rendered.resources.items()
        for where, s in statements(r.get("Properties", {}), rid)
        if s.get("Effect") == "Allow" and {"dynamodb:Scan", "dynamodb:GetItem"} & set(as_list(s.get("Action")))
    ]
    scans = [(where, s) for where, s in reading if "dynamodb:Scan" in as_list(s["Action"])]
    assert len(scans) == 2, scans
    for where, s in scans:
        assert as_list(s["Resource"]) == [table[0]] or set(as_list(s["Resource"])) <= set(table), where
        condition = s.get("Condition") or {}
        if where.startswith("SweeperFindsWaitingExecutions"):
            assert s["Action"] == "dynamodb:Scan"
            (function,) = as_list(condition["ArnEquals"]["lambda:SourceFunctionArn"])
            assert function in sweep, (function, sweep)
        else:
            assert where.startswith("NotifierReadsWhichExecutionsWait"), where
            assert condition["ForAllValues:StringEquals"]["dynamodb:Attributes"] == ["pk"]
            assert condition["StringEqualsIfExists"]["dynamodb:Select"] == "SPECIFIC_ATTRIBUTES"
    roles = {where.split(".")[0] for where, _ in reading}
    assert roles == {"ClusterAccessRole", "SweeperFindsWaitingExecutions", "NotifierReadsWhichExecutionsWait"}


def test_the_schedule_sends_the_event_the_function_and_the_local_run_expect():
    from harness.sweeper import EVENT

    found = schedule(stack(CompletionMode="callback"))
    assert json.loads(found["Target"]["Input"]) == EVENT == {"sweep": "scheduled"}
