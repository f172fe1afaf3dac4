"""examples/train-evaluate-deploy end to end: its pipeline.asl.json in moto, nesting the real RunJob.

The pipeline's Train and Deploy steps start real RunJob child executions
(startExecution.sync:2); their handlers reach the local Kubernetes API, where
the operator simulator runs the jobs and writes the training container's
termination message (the test-only jobsync.local/termination-message
annotation), which comes back as the training job's result.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.local import TEMPLATE_BUCKET, TEMPLATE_PREFIX, LocalJobsync
from harness.operator_sim import SCENARIO_ANNOTATION, TERMINATION_MESSAGE_ANNOTATION
from tests.cfn import load_template
from tests.support.lambdas import QUIET

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train-evaluate-deploy"
MODEL = "s3://my-models/mnist/model.pt"


def example_input(result: Any, scenario: str = "success") -> dict[str, Any]:
    """input.json, with the training job told (test-only annotations) what it writes and how it ends."""
    execution_input = copy.deepcopy(json.loads((EXAMPLE / "input.json").read_text()))
    meta = execution_input["train"]["job"]["metadata"]
    annotations = meta.setdefault("annotations", {})
    annotations[SCENARIO_ANNOTATION] = scenario
    if result is not None:
        annotations[TERMINATION_MESSAGE_ANNOTATION] = result if isinstance(result, str) else json.dumps(result)
    return execution_input


def run(execution_input: dict[str, Any]):
    with LocalJobsync(env=QUIET, template_dirs=(EXAMPLE / "templates",)) as local:
        arn = local.add_state_machine((EXAMPLE / "pipeline.asl.json").read_text(), "train-evaluate-deploy")
        result = local.run_nested(arn, execution_input)
        children = [local.sfn.wait(child) for child in local.children(result.execution_arn)]
        submits = [c for c in local.sfn.invocations if c.function_name == "jobsync-submit"]
        jobs = {job["metadata"]["name"]: job for job in local.api.objects("kubeflow.org", "v1", "pytorchjobs")}
        return result, children, submits, jobs


def test_a_good_model_is_exported_with_the_model_uri_the_training_returned():
    result, children, submits, jobs = run(example_input({"accuracy": 0.97, "modelUri": MODEL}))
    assert result.status == "SUCCEEDED", result.cause
    out = result.output
    assert (out["accuracy"], out["minAccuracy"], out["modelUri"]) == (0.97, 0.95, MODEL)
    assert out["training"]["result"] == {"accuracy": 0.97, "modelUri": MODEL}
    # The export job ran, as a second RunJob child, from the example's template with MODEL_URI filled in.
    assert [c["status"] for c in children] == ["SUCCEEDED", "SUCCEEDED"]
    assert [c["executionArn"] for c in children] == [out["training"]["executionArn"], out["deployment"]["executionArn"]]
    assert submits[1].event["parameters"]["MODEL_URI"] == MODEL
    export = jobs[out["deployment"]["job"]["name"]]
    env = export["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "MODEL_URI", "value": MODEL} in env
    assert out["deployment"]["job"]["name"].startswith("export-model-")
    # Each child knows its pipeline run and step.
    assert [s.event["context"]["step"] for s in submits] == ["train", "deploy"]
    assert {s.event["context"]["pipelineExecution"] for s in submits} == {result.execution_arn}


def test_a_model_below_the_threshold_fails_with_its_accuracy_and_nothing_is_exported():
    result, children, submits, jobs = run(example_input({"accuracy": 0.81, "modelUri": MODEL}))
    assert (result.status, result.error) == ("FAILED", "AccuracyTooLow")
    cause = json.loads(result.cause)
    assert (cause["accuracy"], cause["minAccuracy"], cause["modelUri"]) == (0.81, 0.95, MODEL)
    assert [c["status"] for c in children] == ["SUCCEEDED"]  # the training only
    assert len(submits) == 1
    assert [name for name in jobs if name.startswith("export-model")] == []
    assert cause["training"]["job"]["name"] in jobs  # the succeeded training job is kept (cleanup onFailure)


def test_a_training_job_without_a_usable_result_fails_by_name():
    result, children, _, _ = run(example_input("training finished"))
    assert (result.status, result.error) == ("FAILED", "NoTrainingResult")
    assert json.loads(result.cause)["result"] == "training finished"
    assert len(children) == 1


def test_a_failed_training_ends_with_its_own_error_and_cause():
    result, children, _, _ = run(example_input({"error": "diverged"}, scenario="failure"))
    assert (result.status, result.error) == ("FAILED", "JobFailed")
    cause = json.loads(result.cause)
    assert cause["reason"] == "PyTorchJobFailed" and cause["result"] == {"error": "diverged"}
    assert [c["status"] for c in children] == ["FAILED"]


# --------------------------------------------------------------------------- the example's template


def refs(node: Any) -> set[str]:
    """Every name a CloudFormation template refers to: Ref, GetAtt, and ${...} in Sub."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref":
                found.add(value)
            elif key == "Fn::GetAtt":
                found.add(value[0])
            elif key == "Fn::Sub":
                text, variables = (value, {}) if isinstance(value, str) else (value[0], value[1])
                found |= {n.split(".")[0] for n in re.findall(r"\$\{([^}!]+)\}", text)} - set(variables)
                found |= refs(variables)
            else:
                found |= refs(value)
    elif isinstance(node, list):
        for item in node:
            found |= refs(item)
    return found


def test_the_example_template_refers_only_to_what_it_defines():
    template = load_template(EXAMPLE / "template.yaml")
    defined = set(template["Parameters"]) | set(template["Resources"])
    pseudo = {name for name in refs(template) if name.startswith("AWS::")}
    assert refs(template) - pseudo <= defined
    assert pseudo <= {"AWS::Partition", "AWS::Region", "AWS::AccountId", "AWS::StackName"}


def test_the_pipeline_gets_every_substitution_it_uses_and_the_main_stack_gives_the_arn():
    template = load_template(EXAMPLE / "template.yaml")
    machine = template["Resources"]["Pipeline"]["Properties"]
    used = set(re.findall(r"\$\{([A-Za-z0-9_]+)\}", (EXAMPLE / "pipeline.asl.json").read_text()))
    assert used == set(machine["DefinitionSubstitutions"]) == {"RunJobStateMachineArn"}
    assert (EXAMPLE / machine["DefinitionUri"]).is_file()
    # The parameter is the main stack's RunJob output, as the README's deploy command reads it.
    main = load_template()
    assert main["Outputs"]["StateMachineArn"]["Value"] == {"Ref": "RunJobStateMachine"}
    readme = (EXAMPLE / "README.md").read_text()
    assert "OutputKey=='StateMachineArn'" in readme and "RunJobStateMachineArn=" in readme


@pytest.mark.parametrize("arn", ["arn:aws:states:eu-west-1:123456789012:stateMachine:jobsync-run-job"])
def test_the_policy_reaches_the_run_job_executions_of_that_state_machine(arn):
    pattern = load_template(EXAMPLE / "template.yaml")["Parameters"]["RunJobStateMachineArn"]["AllowedPattern"]
    assert re.match(pattern, arn) and not re.match(pattern, arn.replace("stateMachine", "execution"))
    assert arn.split(":")[6] == "jobsync-run-job"  # what !Select [6, !Split [":", ...]] names in the policy


def test_the_input_points_at_the_template_the_local_bucket_serves():
    execution_input = json.loads((EXAMPLE / "input.json").read_text())
    template = execution_input["deploy"]["jobTemplate"]
    assert template == f"s3://{TEMPLATE_BUCKET}/{TEMPLATE_PREFIX}export-model.yaml"
    assert (EXAMPLE / "templates" / "export-model.yaml").is_file()


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"minAccuracy": "high"}, ["minAccuracy: a number is required"]),
        ({"train": None, "deploy": []}, ["train: the training job", "deploy: the export job"]),
    ],
)
def test_a_bad_input_is_refused_by_name_before_any_job(change, named):
    execution_input = {**example_input(None), **change}
    result, children, submits, _ = run(execution_input)
    assert (result.status, result.error) == ("FAILED", "InvalidInput")
    assert all(part in result.cause for part in named), result.cause
    assert children == [] and submits == []


def test_an_input_that_is_not_an_object_is_named():
    result, children, _, _ = run([1, 2])
    assert (result.status, result.error, children) == ("FAILED", "InvalidInput", [])
    assert result.cause == "invalid input: the input must be a JSON object, got array"


def test_each_step_of_the_sample_input_is_a_run_job_input_and_the_template_renders():
    from jobsync.run import manifests
    from jobsync.run.inputs import SubmitRequest, parse
    from jobsync.settings import Settings

    execution_input = json.loads((EXAMPLE / "input.json").read_text())
    arn = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:x"
    for step in ("train", "deploy"):
        parse(SubmitRequest, {**execution_input[step], "execution": arn})
    parameters = {**execution_input["deploy"]["parameters"], "MODEL_URI": MODEL}
    text = (EXAMPLE / "templates" / "export-model.yaml").read_text()
    manifest = manifests.load_template(text, parameters, "", Settings())
    container = manifest["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert {"name": "MODEL_URI", "value": MODEL} in container["env"]
