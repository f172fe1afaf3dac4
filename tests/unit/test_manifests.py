"""Submit's guardrails and naming, before anything reaches the cluster."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobsync.errors import InvalidInput
from jobsync.run.manifests import (
    EXECUTION_ANNOTATION,
    EXECUTION_LABEL,
    MANAGED_BY,
    MAX_JOB_NAME,
    execution_label,
    job_name,
    prepare,
)
from jobsync.run.templates import render
from jobsync.settings import Settings

ARN = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:nightly-2026-11-29"
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
SETTINGS = Settings()


def pytorchjob(**meta):
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "mnist", **meta},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "pytorch", "image": "trainer:1"}]}},
                }
            }
        },
    }


def test_name_is_deterministic_per_execution_and_distinct_across_executions():
    assert job_name(ARN, None) == job_name(ARN, None)
    assert job_name(ARN, None) != job_name(ARN.replace("jobsync-run-job", "other-machine"), None)
    assert job_name(ARN, None).startswith("nightly-2026-11-29-")  # no manifest name: the execution's


@given(st.text(min_size=1, max_size=80).filter(lambda s: ":" not in s))
def test_any_execution_name_gives_a_dns1035_label_short_enough_for_pod_names(name):
    derived = job_name(f"arn:aws:states:us-east-1:123456789012:execution:sm:{name}", None)
    assert DNS1035.match(derived), derived
    assert len(derived) <= MAX_JOB_NAME
    assert len(f"{derived}-worker-9999") <= 63


def test_prepare_names_labels_and_annotates_the_job():
    obj = prepare(pytorchjob(labels={"team": "vision"}), ARN, "ml-training", SETTINGS)
    meta = obj["metadata"]
    assert meta["name"] == job_name(ARN, "mnist")
    assert meta["namespace"] == "ml-training"
    assert meta["labels"] == {"team": "vision", MANAGED_BY: "jobsync", EXECUTION_LABEL: execution_label(ARN)}
    assert re.match(r"^[a-z0-9]{32}$", meta["labels"][EXECUTION_LABEL])
    assert meta["annotations"][EXECUTION_ANNOTATION] == ARN


def test_prepare_does_not_touch_the_callers_manifest():
    manifest = pytorchjob()
    prepare(manifest, ARN, "ml-training", SETTINGS)
    assert manifest["metadata"] == {"name": "mnist"}


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        (pytorchjob(namespace="kube-system"), "job.metadata.namespace"),
        (pytorchjob(ownerReferences=[{"kind": "Pod", "name": "x", "uid": "1", "apiVersion": "v1"}]), "ownerReferences"),
        ({**pytorchjob(), "kind": "TFJob"}, "job.kind"),
        ({**pytorchjob(), "apiVersion": "batch/v1", "kind": "Job"}, "job.kind"),
        ({**pytorchjob(), "apiVersion": None}, "job.apiVersion"),
        ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {}}, "job.spec"),
        ({**pytorchjob(), "metadata": "x"}, "job.metadata"),
        (pytorchjob(labels={"a": 1}), "job.metadata.labels"),
    ],
)
def test_rejected_manifests_name_the_field(manifest, field):
    with pytest.raises(InvalidInput, match=re.escape(field)):
        prepare(manifest, ARN, "ml-training", SETTINGS)


@pytest.mark.parametrize(
    "pod_spec",
    [
        {"hostNetwork": True, "containers": []},
        {"containers": [{"name": "c", "securityContext": {"privileged": True}}]},
        {"containers": [{"name": "c", "securityContext": {"allowPrivilegeEscalation": True}}]},
        {"volumes": [{"name": "v", "hostPath": {"path": "/"}}], "containers": []},
    ],
)
def test_privileged_pods_are_refused_unless_the_deployment_allows_them(pod_spec):
    manifest = pytorchjob()
    manifest["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"] = pod_spec
    with pytest.raises(InvalidInput, match="privileged pod settings"):
        prepare(manifest, ARN, "ml-training", SETTINGS)
    allowing = Settings(allow_privileged_pods=True)
    assert prepare(manifest, ARN, "ml-training", allowing)["metadata"]["name"] == job_name(ARN, "mnist")


def test_oversized_manifest_is_refused():
    manifest = pytorchjob(annotations={"blob": "x" * (SETTINGS.max_manifest_bytes + 1)})
    with pytest.raises(InvalidInput, match="over the limit"):
        prepare(manifest, ARN, "ml-training", SETTINGS)


def test_template_substitution_and_missing_parameters():
    text = "image: ${IMAGE}\nepochs: ${EPOCHS}\nfast: ${FAST}\n"
    rendered = render(text, {"IMAGE": "a:1", "EPOCHS": 3, "FAST": True}, "jobTemplate", 1024)
    assert rendered == {"image": "a:1", "epochs": 3, "fast": True}
    with pytest.raises(InvalidInput, match=r"missing values for placeholders \['EPOCHS', 'FAST'\]"):
        render(text, {"IMAGE": "a:1"}, "jobTemplate", 1024)
    with pytest.raises(InvalidInput, match=r"parameters\.IMAGE: values must be a single line"):
        render(text, {"IMAGE": "a\nprivileged: true", "EPOCHS": 1, "FAST": False}, "jobTemplate", 1024)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "must be a mapping"),
        ("a: 1\n---\nb: 2\n", "exactly one document"),
        ("a: [\n", "not valid YAML"),
        ("", "exactly one document"),
    ],
)
def test_template_that_is_not_one_mapping_is_refused(text, message):
    with pytest.raises(InvalidInput, match=message):
        render(text, {}, "jobTemplate", 1024)
