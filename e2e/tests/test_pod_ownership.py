"""A stranger's pod with a job's labels, next to the real training-operator's pods: the run reads only the latter.

Anyone allowed to create pods in the namespace can label one ``training.kubeflow.org/job-name=<job>``; the
admin makes such pods here, with no owner, and kwok plays them (a pull that backs off, a container that
succeeds with a termination message, one that fails). The real operator's pods are the job's: their
controller reference is the PyTorchJob's uid. The verdict, the ``result`` and the log tail come from those
alone, and the run names the stranger's pod as ignored. Each stranger's pod is named to be listed first
(the API server lists by name), where a reader that went by labels would take it.
"""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from e2e.controlplane import JOB_NAMESPACE, ControlPlane
from e2e.tests.jobs import wait_for
from e2e.tests.runs import SMALL, apply_role, job_of, jobsync_run, pod_annotations, pytorch_input, run
from harness.local import LocalJobsync
from harness.operator_sim import build_pod
from jobsync.cluster.jobs import KubeJobs
from jobsync.run.pods import NOT_OWNED

KF = "training.kubeflow.org"
NAMES_ITSELF = {"e2e.jobsync.io/termination-message": "identity"}


@pytest.fixture(scope="module")
def local(control_plane: ControlPlane) -> Iterator[LocalJobsync]:
    apply_role(control_plane, "PyTorchJob")
    with jobsync_run(control_plane) as local:
        yield local


class HandMade:
    """Pods the admin makes by hand, with no owner reference; each is deleted after the test."""

    def __init__(self, admin_api: client.ApiClient) -> None:
        self.core = client.CoreV1Api(admin_api)
        self.names: list[str] = []

    def make(self, name: str, annotations: dict[str, str], labels: dict[str, str], **limits: str) -> None:
        resources = copy.deepcopy(SMALL) | ({"limits": dict(limits)} if limits else {})
        container = {"name": "pytorch", "image": "registry.example.com/someone/else:1", "resources": resources}
        meta = {"name": name, "labels": labels, "annotations": annotations}
        spec = {"restartPolicy": "Never", "containers": [container]}
        self.core.create_namespaced_pod(JOB_NAMESPACE, {"metadata": meta, "spec": spec})
        self.names.append(name)

    def read(self, name: str) -> Any:
        return self.core.read_namespaced_pod(name, JOB_NAMESPACE)

    def wait_phase(self, name: str, phase: str) -> None:
        wait_for(f"{name} {phase}", lambda: self.read(name).status.phase == phase, timeout=30, interval=0.2)

    def delete(self, name: str) -> None:
        self.core.delete_namespaced_pod(name, JOB_NAMESPACE, grace_period_seconds=0)
        self.names.remove(name)


@pytest.fixture
def hand_made(admin_api: client.ApiClient) -> Iterator[HandMade]:
    pods = HandMade(admin_api)
    yield pods
    for name in list(pods.names):
        pods.delete(name)


def master_labels(job: str) -> dict[str, str]:
    """The labels the operator gives the job's Master pod (the result's replica), and nothing that owns it."""
    return {f"{KF}/job-name": job, f"{KF}/replica-type": "master", f"{KF}/replica-index": "0"}


def ignored(local: LocalJobsync) -> set[str]:
    assert local.sfn
    return {
        d["message"]
        for c in local.sfn.invocations
        if c.function_name == "jobsync-status" and isinstance(c.result, dict)
        for d in c.result.get("diagnostics") or []
        if d.get("reason") == NOT_OWNED
    }


def note(pod: str) -> str:
    return f"ignored 1 pod labelled for this job that it does not own: {pod}"


def test_a_strangers_pod_stuck_pulling_its_image_does_not_fail_a_job_waiting_for_gpus(
    local: LocalJobsync, hand_made: HandMade
) -> None:
    """The GPU node's 4 GPUs are taken, so the job's pods wait Unschedulable ("Insufficient nvidia.com/gpu"),
    until the pod that holds them is deleted; meanwhile the stranger's pod backs off pulling its image."""
    execution = "stranger-stuck"
    name = job_of(local, execution)
    blocker = f"gpu-holder-{uuid.uuid4().hex[:6]}"
    hand_made.make(blocker, pod_annotations("run-forever"), {}, **{"nvidia.com/gpu": "4"})
    hand_made.wait_phase(blocker, "Running")
    hand_made.make(f"{name}-cache", pod_annotations("image-pull-backoff"), {f"{KF}/job-name": name})
    body = pytorch_input(pod_annotations(run_duration="2s"))
    for replica in body["job"]["spec"]["pytorchReplicaSpecs"].values():
        for container in replica["template"]["spec"]["containers"]:
            container["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    freed: list[float] = []

    def free_the_gpus() -> None:
        def waiting() -> list[Any]:
            return [p for p in local.polls() if p.reason == "WaitingForCapacity"]

        wait_for("a poll that sees the job wait for GPUs", waiting, timeout=60, interval=0.2)
        time.sleep(10)  # well past the stuck grace (4 s) that the stranger's pod would have run out
        hand_made.delete(blocker)
        freed.append(time.monotonic())

    freer = threading.Thread(target=free_the_gpus, daemon=True)
    freer.start()
    result = run(local, body, execution)
    freer.join(15)

    assert result.status == "SUCCEEDED", result.cause
    assert freed, "the job never waited for GPUs"
    assert all(p.phase != "FAILED" for p in result.polls), result.polls
    assert result.output["deleted"] is False
    assert note(f"{name}-cache") in ignored(local)
    assert hand_made.read(f"{name}-cache").metadata.owner_references is None  # left alone


def test_a_strangers_succeeded_pod_is_not_the_result_and_the_simulators_pods_are_owned_as_the_operators(
    control_plane: ControlPlane, local: LocalJobsync, hand_made: HandMade
) -> None:
    execution = "stranger-result"
    name = job_of(local, execution)
    stranger = f"{name}-master-copy"
    body = pytorch_input({**pod_annotations(run_duration="8s"), **NAMES_ITSELF})

    def make_the_copy() -> None:
        def operators_master() -> bool:
            found = hand_made.core.list_namespaced_pod(JOB_NAMESPACE, field_selector=f"metadata.name={name}-master-0")
            return bool(found.items)

        wait_for("the operator's Master pod", operators_master, timeout=60, interval=0.2)
        time.sleep(1.1)  # a later creationTimestamp (whole seconds): the newest Master pod, and done first
        hand_made.make(stranger, {**pod_annotations(run_duration="1s"), **NAMES_ITSELF}, master_labels(name))

    maker = threading.Thread(target=make_the_copy, daemon=True)
    maker.start()
    result = run(local, body, execution)
    maker.join(15)

    assert result.status == "SUCCEEDED", result.cause
    assert hand_made.read(stranger).status.phase == "Succeeded"
    assert result.output["result"] == {
        "pod": f"{name}-master-0",
        "replica": "master",
        "index": "0",
        "container": "pytorch",
    }
    assert note(stranger) in ignored(local)

    # What the simulator makes of the same job, owner references and labels, is what the real operator made.
    job = control_plane.request("GET", f"/apis/kubeflow.org/v1/namespaces/{JOB_NAMESPACE}/pytorchjobs/{name}").body
    for rtype in ("Master", "Worker"):
        real = control_plane.request("GET", f"/api/v1/namespaces/{JOB_NAMESPACE}/pods/{name}-{rtype.lower()}-0").body
        simulated = build_pod(job, rtype, 0, "2026-01-01T00:00:00Z")
        assert real["metadata"]["ownerReferences"] == simulated["metadata"]["ownerReferences"]
        assert simulated["metadata"]["labels"].items() <= real["metadata"]["labels"].items()


def test_the_log_tail_and_diagnostics_of_a_failed_job_are_never_a_strangers_pods(
    control_plane: ControlPlane, local: LocalJobsync, hand_made: HandMade, monkeypatch: pytest.MonkeyPatch
) -> None:
    execution = "stranger-log"
    name = job_of(local, execution)
    stranger = f"{name}-cache"
    hand_made.make(stranger, pod_annotations("fail", exit_code=7), master_labels(name))
    hand_made.wait_phase(stranger, "Failed")
    control_plane.set_pod_log("epoch 1 loss=0.51\nRuntimeError: CUDA out of memory")
    read: list[str] = []
    real_read_log = KubeJobs.read_log

    def read_log(self: KubeJobs, namespace: str, pod: str, container: str, limit_bytes: int) -> str:
        read.append(pod)  # which pod's log the status step asks the API server for
        return real_read_log(self, namespace, pod, container, limit_bytes)

    monkeypatch.setattr(KubeJobs, "read_log", read_log)
    body = pytorch_input(pod_annotations("fail", exit_code=3), worker=pod_annotations("run-forever"))
    result = run(local, body, execution)

    assert result.status == "FAILED" and result.error == "JobFailed", result.cause
    cause = json.loads(result.cause or "{}")
    assert read == [f"{name}-master-0"]
    assert "RuntimeError: CUDA out of memory" in cause["logTail"]
    assert cause["diagnostics"] == [
        {"pod": f"{name}-master-0", "container": "pytorch", "reason": "Error", "exitCode": 3, "message": ""},
        {"reason": NOT_OWNED, "message": note(stranger)},
    ]
    assert cause["deleted"] is True
    assert hand_made.read(stranger).status.phase == "Failed"  # left alone
