"""template.yaml lets cleanup check an execution event with Step Functions, and nothing more.

The cleanup Lambda asks DescribeExecution whether an execution of this
deployment's state machine really ended before it deletes that execution's
job (jobsync.run.execution_events). It needs the state machine's ARN and the
permission on its executions only; the role is shared by the three cluster
functions, so the grant is conditioned on the cleanup function.
"""

from __future__ import annotations

from jobsync.settings import Settings
from tests.cfn import load_template

TEMPLATE = load_template()
RESOURCES = TEMPLATE["Resources"]
PREFIX = "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}"


def statements() -> list[dict]:
    role = RESOURCES["ClusterAccessRole"]["Properties"]
    return [
        s
        for p in role["Policies"]
        if isinstance(p, dict) and "PolicyDocument" in p
        for s in p["PolicyDocument"]["Statement"]
    ]


def test_cleanup_is_told_the_state_machine_it_serves_by_the_same_name_the_machine_has():
    function = RESOURCES["CleanupFunction"]["Properties"]
    value = function["Environment"]["Variables"]["JOBSYNC_STATE_MACHINE_ARN"]["Fn::Sub"]
    name = RESOURCES["RunJobStateMachine"]["Properties"]["Name"]["Fn::Sub"]
    assert value == f"{PREFIX}:stateMachine:{name}"
    assert "JOBSYNC_STATE_MACHINE_ARN" in Settings.variables()
    for other in ("SubmitFunction", "StatusFunction", "EvaluateFunction"):
        assert "JOBSYNC_STATE_MACHINE_ARN" not in str(RESOURCES[other]["Properties"].get("Environment"))


def test_describe_execution_is_granted_on_this_state_machines_executions_to_the_cleanup_function_only():
    granted = [s for s in statements() if "states:DescribeExecution" in str(s["Action"])]
    assert len(granted) == 1
    (grant,) = granted
    assert grant["Effect"] == "Allow" and grant["Action"] == ["states:DescribeExecution", "states:GetExecutionHistory"]
    name = RESOURCES["RunJobStateMachine"]["Properties"]["Name"]["Fn::Sub"]
    assert grant["Resource"]["Fn::Sub"] == f"{PREFIX}:execution:{name}:*"
    function = RESOURCES["CleanupFunction"]["Properties"]["FunctionName"]["Fn::Sub"]
    source = grant["Condition"]["ArnEquals"]["lambda:SourceFunctionArn"]["Fn::Sub"]
    assert source == "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:" + function


def test_send_task_success_is_granted_on_this_state_machine_only():
    (grant,) = [s for s in statements() if "states:SendTaskSuccess" in str(s["Action"])]
    assert grant["Action"] == "states:SendTaskSuccess"
    name = RESOURCES["RunJobStateMachine"]["Properties"]["Name"]["Fn::Sub"]
    assert grant["Resource"]["Fn::Sub"] == f"{PREFIX}:stateMachine:{name}"
