"""What the scanners flagged, as template facts: failed cleanups are kept and alarm, queues and the
alarm topic are encrypted, execution data is logged only when asked. Also the facts that stand in
for the rules `make scan` skips (tools/scan/cfn-lint.yaml, tools/scan/checkov.yaml), and that
every skip there gives its reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.cfn import load_template

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = load_template()
RESOURCES = TEMPLATE["Resources"]
QUEUE_ARN = {"Fn::GetAtt": ["CleanupFailedQueue", "Arn"]}


def _of_type(kind: str) -> dict:
    return {name: r for name, r in RESOURCES.items() if r["Type"] == kind}


def test_cleanup_failures_go_to_a_queue_that_alarms():
    cleanup = RESOURCES["CleanupFunction"]["Properties"]
    # Lambda's on-failure destination: the invocation still failed after its retries (ES1007).
    on_failure = cleanup["EventInvokeConfig"]["DestinationConfig"]["OnFailure"]
    assert on_failure == {"Type": "SQS", "Destination": QUEUE_ARN}
    assert cleanup["EventInvokeConfig"]["MaximumRetryAttempts"] == 2
    # EventBridge's dead-letter queue: the event could not be delivered at all. Same queue.
    event = cleanup["Events"]["ExecutionEnded"]
    assert event["Type"] == "EventBridgeRule"
    assert event["Properties"]["DeadLetterConfig"] == {"Arn": QUEUE_ARN}

    alarm = RESOURCES["CleanupFailedAlarm"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["CleanupFailedQueue", "QueueName"]}}]
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1)
    # The same topic as the failed-executions alarm.
    assert alarm["AlarmActions"] == RESOURCES["FailedExecutionsAlarm"]["Properties"]["AlarmActions"]


def test_resume_failures_go_to_a_queue_of_their_own_that_alarms():
    """A lost resume delays a verdict to the safety poll; it must not look like a cleanup that failed."""
    resume = RESOURCES["ResumeFunction"]["Properties"]
    queue = {"Fn::GetAtt": ["ResumeFailedQueue", "Arn"]}
    assert resume["EventInvokeConfig"]["DestinationConfig"]["OnFailure"] == {"Type": "SQS", "Destination": queue}
    assert resume["Events"]["JobEnded"]["Properties"]["DeadLetterConfig"] == {"Arn": queue}
    alarm = RESOURCES["ResumeFailedAlarm"]["Properties"]
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["ResumeFailedQueue", "QueueName"]}}]
    assert alarm["AlarmActions"] == RESOURCES["FailedExecutionsAlarm"]["Properties"]["AlarmActions"]
    assert TEMPLATE["Outputs"]["ResumeFailedQueueUrl"]["Value"] == {"Ref": "ResumeFailedQueue"}


def test_both_senders_may_send_to_the_queue_and_no_one_else_is_let_in():
    # Lambda sends with the function's role (SAM adds no policy to a role it did not make).
    role = RESOURCES["CleanupFunction"]["Properties"]["Role"]["Fn::GetAtt"][0]
    assert role == "ClusterAccessRole"
    grants = [
        s
        for p in RESOURCES[role]["Properties"]["Policies"]
        if "PolicyDocument" in p
        for s in p["PolicyDocument"]["Statement"]
    ]
    send = {"Sid": "RecordFailedCleanups", "Effect": "Allow", "Action": "sqs:SendMessage", "Resource": QUEUE_ARN}
    assert send in grants
    # EventBridge sends under the queue policy, from this stack's rule only.
    policy = RESOURCES["CleanupFailedQueuePolicy"]["Properties"]
    assert policy["Queues"] == [{"Ref": "CleanupFailedQueue"}]
    [statement] = policy["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "events.amazonaws.com"}
    assert (statement["Action"], statement["Resource"]) == ("sqs:SendMessage", QUEUE_ARN)
    # SAM names the rule of event ExecutionEnded on CleanupFunction "CleanupFunctionExecutionEnded".
    assert statement["Condition"] == {
        "ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["CleanupFunctionExecutionEnded", "Arn"]}}
    }


def test_every_queue_is_encrypted_and_sam_makes_none():
    queues = _of_type("AWS::SQS::Queue")
    assert set(queues) == {"CleanupFailedQueue", "ResumeFailedQueue"}
    for name, queue in queues.items():
        props = queue["Properties"]
        assert props.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in props, name
    # A queue SAM generates (DeadLetterConfig Type: SQS, or a destination without Destination)
    # would be unencrypted and not in this file.
    for name, fn in _of_type("AWS::Serverless::Function").items():
        for event in fn["Properties"].get("Events", {}).values():
            assert "Type" not in event["Properties"].get("DeadLetterConfig", {}), name
        destinations = fn["Properties"].get("EventInvokeConfig", {}).get("DestinationConfig", {})
        for destination in destinations.values():
            assert "Destination" in destination, name


def test_the_alarm_topic_is_encrypted_with_a_key_cloudwatch_may_use():
    topic = RESOURCES["AlarmTopic"]
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": ["AlarmTopicKey", "Arn"]}
    key = RESOURCES["AlarmTopicKey"]
    assert key["Type"] == "AWS::KMS::Key"
    assert key["Condition"] == topic["Condition"] == "MakeAlarmTopic"
    assert key["Properties"]["EnableKeyRotation"] is True
    # alias/aws/sns would not do: its key policy cannot let CloudWatch use it.
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    [cloudwatch] = [s for s in statements if s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}]
    assert set(cloudwatch["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey"}
    assert cloudwatch["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    # Exactly this stack's alarms, by the names they set (a prefix <stack>-* is also another stack's).
    allowed = {sub["Fn::Sub"].split(":alarm:")[1] for sub in cloudwatch["Condition"]["ArnEquals"]["aws:SourceArn"]}
    named = {alarm["Properties"]["AlarmName"]["Fn::Sub"] for alarm in _of_type("AWS::CloudWatch::Alarm").values()}
    assert allowed == named and len(named) == 3
    assert "ArnLike" not in cloudwatch["Condition"]


def test_execution_data_is_logged_only_when_log_execution_data_is_true():
    parameter = TEMPLATE["Parameters"]["LogExecutionData"]
    assert parameter["Default"] == "false"
    assert parameter["AllowedValues"] == ["true", "false"]
    assert TEMPLATE["Conditions"]["LogsExecutionData"] == {"Fn::Equals": [{"Ref": "LogExecutionData"}, "true"]}
    logging = RESOURCES["RunJobStateMachine"]["Properties"]["Logging"]
    assert logging["IncludeExecutionData"] == {"Fn::If": ["LogsExecutionData", True, False]}


def test_every_function_logs_to_its_own_group_with_retention():
    """What cfn-lint's WS1004 (skipped) checks, which it cannot see through LoggingConfig."""
    for name, fn in _of_type("AWS::Serverless::Function").items():
        props = fn["Properties"]
        group = RESOURCES[props["LoggingConfig"]["LogGroup"]["Ref"]]["Properties"]
        assert group["RetentionInDays"] == {"Ref": "LogRetentionDays"}, name
        assert group["LogGroupName"]["Fn::Sub"] == "/aws/lambda/" + props["FunctionName"]["Fn::Sub"], name


def _skips_and_reasons(path: Path, key: str) -> list[tuple[str, str]]:
    """Each skipped id with the comment block just above it."""
    skips = yaml.safe_load(path.read_text())[key]
    found = []
    lines = path.read_text().splitlines()
    for skip in skips:
        index = next(i for i, line in enumerate(lines) if re.fullmatch(rf"\s*- {skip}\s*", line))
        comment = []
        for line in reversed(lines[:index]):
            if not line.strip().startswith("#"):
                break
            comment.append(line.strip().lstrip("# "))
        found.append((skip, " ".join(reversed(comment))))
    return found


def test_every_scanner_skip_gives_its_reason():
    skips = _skips_and_reasons(ROOT / "tools/scan/cfn-lint.yaml", "ignore_checks") + _skips_and_reasons(
        ROOT / "tools/scan/checkov.yaml", "skip-check"
    )
    expected = {
        "WS1004",
        "ES6000",
        "CKV_AWS_27",
        "CKV_AWS_116",
        "CKV_AWS_115",
        "CKV_AWS_173",
        "CKV_AWS_158",
        "CKV_AWS_119",
    }
    assert {skip for skip, _ in skips} == expected
    for skip, reason in skips:
        assert reason.startswith(skip), f"{skip}: the comment above it should name it"
        assert len(reason) > 80, f"{skip}: say why"
    # The tests that stand in for skipped rules exist (they are named in the reasons).
    named = set(re.findall(r"test_\w+", " ".join(reason for _, reason in skips)))
    assert named <= set(globals())


def test_ci_scans_after_validating():
    steps = [line for line in (ROOT / ".ci/run").read_text().splitlines() if line.startswith("make ")]
    assert steps.index("make scan") == steps.index("make validate") + 1
