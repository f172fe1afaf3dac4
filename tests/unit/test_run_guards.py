"""Status and cleanup refuse what submit would refuse, and cleanup deletes only jobsync's own jobs.

The Lambdas can be invoked by anyone with lambda:InvokeFunction, not only by
the state machine: an event must not reach a job in another namespace, of a
kind outside the allowlist, or one that jobsync did not create.
"""

from __future__ import annotations

from typing import Any

import pytest

from jobsync.errors import InvalidInput
from jobsync.run import cleanup as cleanup_step
from jobsync.run import manifests
from jobsync.run.inputs import CleanupRequest, LoopState, parse
from jobsync.run.poll import poll
from jobsync.settings import Settings
from tests.support.cluster import RecordingCluster

SETTINGS = Settings()
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:nightly"
OTHER_EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:someone-else"
NAME = manifests.job_name(EXECUTION, None)
# Status and cleanup may read, list pods and delete; never create or read a log.
EXPECTED = {"get", "delete", "list_pods"}
REF = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": NAME}


def job(uid: str = "uid-1", execution: str | None = EXECUTION, managed: bool = True) -> dict[str, Any]:
    labels = manifests.job_labels(execution) if execution else {}
    if not managed:
        labels.pop(manifests.MANAGED_BY, None)
    return {"metadata": {"name": NAME, "namespace": "ml-training", "uid": uid, "labels": labels}}


def loop_state(**overrides: Any) -> dict[str, Any]:
    state = {
        "job": dict(REF),
        "execution": EXECUTION,
        "submittedAt": "2026-11-29T10:00:00Z",
        "deadline": "2026-11-30T10:00:00Z",
        "phase": "RUNNING",
        "phaseSince": "2026-11-29T10:02:00Z",
    }
    return {**state, **overrides}


# --- namespace and allowlist --------------------------------------------------------


@pytest.mark.parametrize(
    ("job_ref", "field"),
    [
        ({**REF, "namespace": "kube-system"}, "job.namespace"),
        ({**REF, "apiVersion": "batch/v1", "kind": "Job"}, "job.kind"),
        ({**REF, "kind": "TFJob"}, "job.kind"),
    ],
)
def test_status_and_cleanup_refuse_a_job_submit_would_refuse(job_ref, field):
    cluster = RecordingCluster({NAME: job()}, expect=EXPECTED)
    with pytest.raises(InvalidInput, match=rf"^{field}: "):
        poll(parse(LoopState, loop_state(job=job_ref)), cluster, SETTINGS)
    request = parse(CleanupRequest, {"job": job_ref, "execution": EXECUTION, "cleanup": "always"})
    with pytest.raises(InvalidInput, match=rf"^{field}: "):
        cleanup_step.cleanup(request, cluster, SETTINGS)
    assert cluster.calls == []
    assert NAME in cluster.objects


# --- cleanup deletes only ours ------------------------------------------------------


def cleanup(cluster: RecordingCluster, **event: Any) -> dict[str, Any]:
    return cleanup_step.cleanup(parse(CleanupRequest, {"cleanup": "always", **event}), cluster, SETTINGS)


def test_with_the_uid_the_loop_saw_cleanup_still_checks_the_labels_then_deletes_that_object():
    cluster = RecordingCluster({NAME: job(uid="uid-1")}, expect=EXPECTED)
    out = cleanup(cluster, job={**REF, "uid": "uid-1"}, execution=EXECUTION)
    assert out["deleted"] is True and out["reason"] == "deleted"
    assert cluster.calls == [("get", NAME), ("delete", NAME)]


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        (job(uid="uid-2", execution=None, managed=False), "not created by this execution"),
        (job(uid="uid-2"), "not the object Submit created (uid uid-1)"),  # ours by its labels, another object
    ],
)
def test_an_object_that_replaced_ours_under_the_same_name_is_left_alone(stored, why):
    cluster = RecordingCluster({NAME: stored}, expect=EXPECTED)
    out = cleanup(cluster, job={**REF, "uid": "uid-1"}, execution=EXECUTION)
    assert out["deleted"] is False and why in out["reason"] and "left alone" in out["reason"]
    assert NAME in cluster.objects and cluster.calls == [("get", NAME)]


@pytest.mark.parametrize(
    "stored",
    [
        job(execution=EXECUTION),  # labelled for this execution: a name and a label are not enough
        job(execution=OTHER_EXECUTION),
        job(execution=None, managed=False),
    ],
)
def test_without_a_uid_cleanup_deletes_nothing_and_names_the_field(stored):
    cluster = RecordingCluster({NAME: stored}, expect=EXPECTED)
    with pytest.raises(InvalidInput, match=r"^job\.uid: required"):
        cleanup(cluster, job=dict(REF), execution=EXECUTION)
    assert NAME in cluster.objects and cluster.calls == []


def test_a_job_already_gone_is_success():
    out = cleanup(RecordingCluster(expect=EXPECTED), job={**REF, "uid": "uid-1"}, execution=EXECUTION)
    assert out == {"job": {**REF, "uid": "uid-1"}, "deleted": False, "reason": "already gone"}
