"""`jobsync submit --dry-run INPUT`: the manifest exactly as Submit creates it, its checks and RBAC; nothing created.

The dry run goes through Submit's own steps (``jobsync.run.submit.plan``); here it is held to what a real
run creates in the local cluster from the same input and execution name.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from harness.local_stack import TEMPLATE_BUCKET, TEMPLATE_PREFIX
from jobsync_cli import follow
from jobsync_cli.submit import STACK_SETTINGS
from tests.support.cli import INPUT, Service, service
from tests.support.lambdas import EVENTS, ROOT

PARAMETERS = {
    "Namespace": "ml-training",
    "AllowedKinds": "PyTorchJob,TFJob",
    "TemplateBucket": TEMPLATE_BUCKET,
    "TemplatePrefix": TEMPLATE_PREFIX,
    "AllowPrivilegedPods": "false",
}


def dry_run(svc: Service, *args: str) -> tuple[list[str], dict]:
    proc = svc.jobsync("submit", *args, "--dry-run")
    assert proc.returncode == follow.EXIT_SUCCEEDED, proc.stdout + proc.stderr
    comments = [line for line in proc.stdout.splitlines() if line.startswith("#")]
    return comments, yaml.safe_load(proc.stdout)


def test_a_dry_run_with_the_stack_and_a_name_is_the_job_that_run_creates():
    with service("success") as svc:
        svc.create_stack("jobsync", parameters=PARAMETERS)
        comments, manifest = dry_run(svc, str(INPUT), "--stack", "jobsync", "--name", "nightly-42")
        assert svc.local.jobs_left() == []  # nothing created
        assert svc.sfn.list_executions(stateMachineArn=svc.state_machine_arn)["executions"] == []

        run = svc.run("--name", "nightly-42")
        assert run.returncode == 0, run.stderr
        assert svc.local.api is not None
        created = svc.local.api.get(("kubeflow.org", "v1", "pytorchjobs", "ml-training", manifest["metadata"]["name"]))

    assert created is not None, "the dry run's name is the name the run gave its job"
    for key in ("name", "namespace", "labels", "annotations"):
        assert created["metadata"][key] == manifest["metadata"][key], key
    assert created["spec"] == manifest["spec"]
    assert "#   the job's name (" + manifest["metadata"]["name"] + ") is this execution's name" in comments
    assert (
        "#   kind kubeflow.org/v1/PyTorchJob is allowed (allowed: kubeflow.org/v1/PyTorchJob, kubeflow.org/v1/TFJob)"
        in comments
    )
    assert "#   Pod Security Baseline: nothing privileged" in comments
    granted = [line.split(":")[0] for line in comments]  # the RBAC it needs, as the chart grants it
    for verb in ("create", "get", "list", "delete"):
        assert f"#   {verb} pytorchjobs.kubeflow.org" in granted, verb
    assert "#   create pytorchjobs.kubeflow.org: submit" in comments
    assert "#   get pods/log: status: the log tail of a failed container" in comments
    assert "#   watch pytorchjobs.kubeflow.org" not in granted  # poll mode holds no watch


def test_a_watch_mode_stacks_dry_run_names_the_watch_it_needs():
    with service("success") as svc:
        svc.create_stack("jobsync", parameters={**PARAMETERS, "CompletionMode": "watch"})
        comments, _ = dry_run(svc, str(INPUT), "--stack", "jobsync")

    assert "#   watch pytorchjobs.kubeflow.org: status in watch mode: holds a watch on the job" in comments


def test_a_template_input_is_rendered_from_the_stacks_bucket():
    with service("success") as svc:
        svc.create_stack("jobsync", parameters=PARAMETERS)
        template_input = EVENTS / "run-job-template-input.json"
        comments, manifest = dry_run(svc, str(template_input), "--stack", "jobsync")

    workers = manifest["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert workers["replicas"] == 2  # ${WORKERS}
    assert "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727" in json.dumps(manifest)
    assert any(
        line.startswith("#   template s3://jobsync-templates-") and "EPOCHS, IMAGE, WORKERS" in line
        for line in comments
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda job: job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"].update(hostNetwork=True),
            "job.spec.pytorchReplicaSpecs.Master.template.spec.hostNetwork",
        ),
        (lambda job: job.update(kind="MPIJob"), "job.kind: kubeflow.org/v1/MPIJob is not allowed here"),
        (lambda job: job["metadata"].update(finalizers=["x"]), "job.metadata.finalizers: not allowed"),
    ],
)
def test_what_submit_refuses_the_dry_run_refuses_naming_it(tmp_path, change, message):
    execution_input = json.loads(INPUT.read_text())
    change(execution_input["job"])
    path = tmp_path / "input.json"
    path.write_text(json.dumps(execution_input))
    with service("success") as svc:
        proc = svc.jobsync("submit", str(path), "--dry-run")

    assert proc.returncode == follow.EXIT_BAD_INPUT
    assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_flags_stand_for_a_deployment_without_a_stack(tmp_path):
    tfjob = {
        "job": {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {"name": "tf-simple"},
            "spec": {"tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [{"name": "tensorflow"}]}}}}},
        }
    }
    path = tmp_path / "tf.json"
    path.write_text(json.dumps(tfjob))
    with service("success") as svc:
        refused = svc.jobsync("submit", str(path), "--dry-run")
        comments, manifest = dry_run(svc, str(path), "--kinds", "tfjob", "--namespace", "team-a")

    assert refused.returncode == follow.EXIT_BAD_INPUT and "TFJob is not allowed here" in refused.stderr
    assert manifest["metadata"]["namespace"] == "team-a"
    assert re.fullmatch(r"tf-simple-[0-9a-f]{8}", manifest["metadata"]["name"])
    granted = [line.split(":")[0] for line in comments]
    for verb in ("create", "get", "list", "delete"):
        assert f"#   {verb} tfjobs.kubeflow.org" in granted, verb
    assert "#   create pytorchjobs.kubeflow.org" not in granted  # the job's own kind, not the defaults


def test_submit_without_dry_run_starts_the_run_and_prints_its_arn():
    with service("success") as svc:
        proc = svc.jobsync("submit", str(INPUT), "--state-machine-arn", svc.state_machine_arn, "--name", "n1")
        arn = proc.stdout.strip()
        svc.local.sfn.wait(arn, timeout_s=60)

    assert proc.returncode == 0, proc.stderr
    assert arn.endswith(":execution:jobsync-run-job:n1")


def test_the_stack_parameters_read_are_the_ones_template_yaml_gives_submit():
    template = (ROOT / "template.yaml").read_text()
    for parameter, variable in STACK_SETTINGS.items():
        assert f"{variable}: !Ref {parameter}" in template, parameter
