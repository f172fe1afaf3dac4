"""template.yaml wires what the code expects: layer, environment, invoke rights, schedule."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from jobsync.settings import ClusterSettings, Settings
from tests.cfn import load_template

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = load_template()
RESOURCES = TEMPLATE["Resources"]
FUNCTIONS = {name: r for name, r in RESOURCES.items() if r["Type"] == "AWS::Serverless::Function"}


def test_every_function_has_the_layer_and_a_handler_that_exists():
    loop = {"SubmitFunction", "StatusFunction", "CleanupFunction", "EvaluateFunction"}
    assert set(FUNCTIONS) == loop | {"AwaitFunction", "ResumeFunction"}  # callback mode's two
    assert TEMPLATE["Globals"]["Function"]["Layers"] == [{"Ref": "JobsyncLayer"}]
    for name, fn in FUNCTIONS.items():
        props = fn["Properties"]
        assert "Layers" not in props, f"{name} overrides the layer"
        assert props["Handler"] == "app.lambda_handler"
        assert "def lambda_handler" in (ROOT / props["CodeUri"] / "app.py").read_text()


def test_layer_is_built_from_the_package_the_tests_import():
    layer = RESOURCES["JobsyncLayer"]
    assert layer["Properties"]["ContentUri"] == "layers/jobsync/"
    assert layer["Metadata"]["BuildMethod"] == "python3.11"
    assert (ROOT / "layers/jobsync/jobsync/__init__.py").exists()
    assert TEMPLATE["Globals"]["Function"]["Runtime"] == "python3.11"


def test_state_machine_invokes_exactly_the_loop_functions():
    sm = RESOURCES["RunJobStateMachine"]["Properties"]
    # By ARN, not SAM's LambdaInvokePolicy (function:<name>*: another stack's functions too).
    assert not [p for p in sm["Policies"] if "LambdaInvokePolicy" in p]
    [invoke] = [
        s for p in sm["Policies"] if "Statement" in p for s in p["Statement"] if s["Action"] == "lambda:InvokeFunction"
    ]
    invoked = [r["Fn::GetAtt"][0] for r in invoke["Resource"]]
    assert sorted(invoked) == ["AwaitFunction", "CleanupFunction", "StatusFunction", "SubmitFunction"]
    assert all(r["Fn::GetAtt"][1] == "Arn" for r in invoke["Resource"])
    substitutions = sm["DefinitionSubstitutions"]
    definition = (ROOT / sm["DefinitionUri"]).read_text()
    used = set(re.findall(r"\$\{(\w+)\}", definition))
    assert used == set(substitutions)
    arns = {v["Fn::GetAtt"][0] for v in substitutions.values() if isinstance(v, dict) and "Fn::GetAtt" in v}
    assert arns == set(invoked)
    assert substitutions["CompletionMode"] == {"Ref": "CompletionMode"}


def test_state_machine_logs_to_a_vended_log_group_and_traces():
    sm = RESOURCES["RunJobStateMachine"]["Properties"]
    assert sm["Tracing"] == {"Enabled": True}
    log_group = sm["Logging"]["Destinations"][0]["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]
    assert RESOURCES[log_group]["Properties"]["LogGroupName"]["Fn::Sub"].startswith("/aws/vendedlogs/states/")


def test_schedule_ships_disabled():
    schedule = RESOURCES["Schedule"]
    assert schedule["Type"] == "AWS::Scheduler::Schedule"
    assert schedule["Properties"]["State"] == {"Ref": "ScheduleState"}
    assert TEMPLATE["Parameters"]["ScheduleState"]["Default"] == "DISABLED"


def test_every_jobsync_setting_the_template_sets_is_one_the_code_reads():
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    read = Settings.variables() | ClusterSettings.variables()
    for name in variables:
        if name.startswith("JOBSYNC_"):
            assert name in read, f"{name} is set in template.yaml but never read"


def test_template_defaults_make_valid_settings():
    params = TEMPLATE["Parameters"]
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    env = {
        name: str(params.get(value["Ref"], {}).get("Default", "demo"))  # a resource's Ref: any name
        for name, value in variables.items()
        if isinstance(value, dict) and "Ref" in value
    }
    settings = Settings.from_env(env)
    assert settings.namespace == "ml-training"
    assert [k.kind for k in settings.allowed_kinds] == ["PyTorchJob"]
    assert settings.wait_bounds.running_max_seconds == 420


def test_state_machine_definition_is_jsonata_only():
    definition = json.loads((ROOT / "statemachine/run_job.asl.json").read_text())
    assert definition["QueryLanguage"] == "JSONata"
    jsonpath_fields = {"InputPath", "OutputPath", "ResultPath", "ResultSelector", "Parameters"}
    for name, state in definition["States"].items():
        assert not jsonpath_fields & set(state), f"{name} uses JSONPath fields"


def test_alarm_notifies_a_given_topic_or_a_topic_made_for_an_email():
    alarm = RESOURCES["FailedExecutionsAlarm"]["Properties"]
    assert alarm["AlarmActions"]["Fn::If"][0] == "HasAlarmTopic"
    assert alarm["AlarmActions"]["Fn::If"][2]["Fn::If"][:2] == ["MakeAlarmTopic", [{"Ref": "AlarmTopic"}]]
    assert RESOURCES["AlarmTopic"]["Condition"] == "MakeAlarmTopic"
    metrics = {m["MetricStat"]["Metric"]["MetricName"] for m in alarm["Metrics"] if "MetricStat" in m}
    assert metrics == {"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"}


def test_every_error_the_state_machine_retries_or_names_exists():
    """A retry on an error name nothing raises is dead code that hides a typo."""
    from jobsync import errors

    definition = json.loads((ROOT / "statemachine/run_job.asl.json").read_text())
    names = {
        name
        for state in definition["States"].values()
        for rule in state.get("Retry", []) + state.get("Catch", [])
        for name in rule["ErrorEquals"]
    }
    ours = {name for name in names if "." not in name}
    assert ours <= {cls.__name__ for cls in vars(errors).values() if isinstance(cls, type)}
    aws = names - ours
    assert aws <= {
        "States.ALL",
        "States.Timeout",
        "Lambda.ServiceException",
        "Lambda.AWSLambdaException",
        "Lambda.SdkClientException",
        "Lambda.TooManyRequestsException",
        "Lambda.Unknown",
        "Runtime.ExitError",
        "Sandbox.Timedout",
    }


def test_the_charts_defaults_are_the_templates():
    """helm install with no values fits a stack deployed with none (the namespace is the release's: -n)."""
    values = yaml.safe_load((ROOT / "charts" / "jobsync" / "values.yaml").read_text())
    params = TEMPLATE["Parameters"]
    assert values["allowedKinds"] == params["AllowedKinds"]["Default"]
    assert values["completionMode"] == params["CompletionMode"]["Default"]
    assert values["kubernetesGroup"] == params["KubernetesGroup"]["Default"]
    assert values["namespace"] == ""
