"""The job's name is the manifest's own name, then the execution's hash: people find their job by its name."""

from __future__ import annotations

import hashlib
import re

from harness.local import LocalJobsync
from jobsync.run.manifests import MAX_JOB_NAME, job_name
from tests.integration.test_aborts import run_and_abort, status_change
from tests.support.kube import PYTORCHJOBS
from tests.support.lambdas import QUIET, invoke, load_event

DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def named(name: str) -> dict:
    execution_input = load_event("run-job-input.json")
    execution_input["job"]["metadata"]["name"] = name
    return execution_input


def test_the_job_is_named_after_the_manifest_with_the_executions_hash():
    with LocalJobsync("success", {"pending_s": 30, "run_s": 300}, env=QUIET) as local:
        result = local.run(named("resnet50-imagenet"), name="demo-success-62ea6cae")
    suffix = hashlib.sha256(result.execution_arn.encode()).hexdigest()[:8]
    assert result.output["job"]["name"] == f"resnet50-imagenet-{suffix}"
    assert result.jobs_left[0]["name"] == f"resnet50-imagenet-{suffix}"


def test_a_long_or_odd_manifest_name_is_cut_to_a_dns1035_label_that_fits():
    arn = "arn:aws:states:us-east-1:123456789012:execution:sm:run-1"
    for name in ("ResNet_50.ImageNet--Very-Long-Experiment-Name-2026-11-29", "7b-llama", "---"):
        derived = job_name(arn, name)
        assert DNS1035.match(derived) and len(derived) <= MAX_JOB_NAME, derived
    assert job_name(arn, "ResNet_50.ImageNet").startswith("resnet-50-imagenet-")
    assert job_name(arn, "7b-llama").startswith("job-7b-llama-")
    # A pure function of the two: the same for every caller, distinct per execution.
    assert job_name(arn, "mnist") == job_name(arn, "mnist") != job_name(arn + "x", "mnist")


def test_cleanup_after_an_abort_finds_the_job_named_from_the_manifest_in_the_execution_input():
    with LocalJobsync("success", {"pending_s": 30, "run_s": 6 * 3600}, env=QUIET) as local:
        description = run_and_abort(local, named("resnet50-imagenet"))
        name = job_name(description["executionArn"], "resnet50-imagenet")
        assert local.api.get((*PYTORCHJOBS, "ml-training", name)) is not None
        out = invoke("cleanup", status_change(description))
        assert out["deleted"] is True and out["job"]["name"] == name
        assert local.api.get((*PYTORCHJOBS, "ml-training", name)) is None
