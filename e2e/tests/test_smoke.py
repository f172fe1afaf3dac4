"""Smoke tests that the e2e tier is a real cluster: version, RBAC, operator, job controller, compaction."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from e2e.controlplane import JOB_NAMESPACE, OUTCOME_ANNOTATION, RUN_DURATION_ANNOTATION, ControlPlane, pinned_versions
from e2e.tests.jobs import GROUP, PLURAL, VERSION, condition, pytorchjob, run_pytorchjob, wait_for
from e2e.tests.runs import install_chart


@pytest.fixture(scope="module")
def rbac(control_plane: ControlPlane) -> None:
    """The project's own Role and RoleBinding for group jobsync, installed by the chart with the real helm."""
    install_chart(control_plane)


def test_version_is_the_pinned_one(control_plane: ControlPlane, admin_api: client.ApiClient) -> None:
    info = client.VersionApi(admin_api).get_code()
    assert info.git_version == pinned_versions()["kube-apiserver"]
    assert info.major == "1"
    assert control_plane.versions()["etcd"].startswith("v3.6.")


def test_jobsync_may_do_what_its_role_allows(rbac: None, jobsync_api: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(jobsync_api)
    name = f"rbac-{uuid.uuid4().hex[:6]}"
    body = pytorchjob(name)

    # RBAC reaches the authorizer through an informer: the Role may take a moment to count.
    def created() -> dict | None:
        try:
            return custom.create_namespaced_custom_object(GROUP, VERSION, JOB_NAMESPACE, PLURAL, body)
        except ApiException as err:
            if err.status == 403:
                return None
            raise

    wait_for("the jobsync Role to take effect", created, timeout=10)
    got = custom.get_namespaced_custom_object(GROUP, VERSION, JOB_NAMESPACE, PLURAL, name)
    assert got["metadata"]["name"] == name
    custom.delete_namespaced_custom_object(GROUP, VERSION, JOB_NAMESPACE, PLURAL, name)
    client.CoreV1Api(jobsync_api).list_namespaced_pod(JOB_NAMESPACE)

    forbidden: list[Callable[[], Any]] = [
        lambda: client.CoreV1Api(jobsync_api).list_namespaced_secret(JOB_NAMESPACE),
        lambda: custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, pytorchjob(name)),
        lambda: custom.delete_collection_namespaced_custom_object(GROUP, VERSION, JOB_NAMESPACE, PLURAL),
        lambda: custom.patch_namespaced_custom_object(GROUP, VERSION, JOB_NAMESPACE, PLURAL, name, {}),
    ]
    for call in forbidden:
        with pytest.raises(ApiException) as err:
            call()
        assert err.value.status == 403, err.value.body


def test_pytorchjob_succeeds_through_the_real_operator(rbac: None, jobsync_api: client.ApiClient) -> None:
    job = run_pytorchjob(jobsync_api, pytorchjob(f"ok-{uuid.uuid4().hex[:6]}"), until="Succeeded")
    types = [c["type"] for c in job["status"]["conditions"]]
    assert types[0] == "Created" and "Running" in types, types
    assert job["status"]["replicaStatuses"]["Master"].get("succeeded") == 1, job["status"]
    assert job["status"].get("completionTime")


def test_pytorchjob_fails_when_its_pod_fails(rbac: None, jobsync_api: client.ApiClient) -> None:
    body = pytorchjob(f"bad-{uuid.uuid4().hex[:6]}", {OUTCOME_ANNOTATION: "fail"}, restart_policy="Never")
    job = run_pytorchjob(jobsync_api, body, until="Failed")
    failed = condition(job, "Failed")
    assert failed is not None and failed["reason"], job["status"]


def test_batch_job_completes_through_the_job_controller(admin_api: client.ApiClient) -> None:
    batch = client.BatchV1Api(admin_api)
    name = f"batch-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": {RUN_DURATION_ANNOTATION: "500ms"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}],
                },
            },
        },
    }
    batch.create_namespaced_job(JOB_NAMESPACE, body)

    def complete() -> Any:
        job = batch.read_namespaced_job(name, JOB_NAMESPACE)
        done = [c for c in job.status.conditions or [] if c.type == "Complete" and c.status == "True"]
        return job if done else None

    job = wait_for(f"Job {name} Complete", complete, timeout=60)
    assert job.status.succeeded == 1
    # The garbage collector removes the pods with the job.
    batch.delete_namespaced_job(name, JOB_NAMESPACE, propagation_policy="Background")
    core = client.CoreV1Api(admin_api)
    wait_for(
        "the job's pods to be collected",
        lambda: not core.list_namespaced_pod(JOB_NAMESPACE, label_selector=f"job-name={name}").items,
        timeout=30,
    )


def _watch_all(list_call: Callable[..., Any], resource_version: str) -> list[dict]:
    events = []
    for event in watch.Watch().stream(list_call, JOB_NAMESPACE, resource_version=resource_version, timeout_seconds=3):
        events.append(event)
        if len(events) == 3:
            break
    return events


def test_watch_from_before_a_compaction_is_gone(control_plane: ControlPlane, admin_api: client.ApiClient) -> None:
    """etcd answers a watch from a compacted revision with 410; the client raises ApiException(410)."""
    core = client.CoreV1Api(admin_api)
    name = f"rv-{uuid.uuid4().hex[:6]}"
    # podtemplates are the one resource without a watch cache (UNCACHED_RESOURCE): etcd serves their watches.
    template = {"metadata": {"name": name}, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    old_rv = core.create_namespaced_pod_template(JOB_NAMESPACE, template).metadata.resource_version
    for n in range(3):
        core.patch_namespaced_pod_template(name, JOB_NAMESPACE, {"metadata": {"labels": {"n": str(n)}}})
    control_plane.compact_etcd()

    with pytest.raises(ApiException) as err:
        _watch_all(core.list_namespaced_pod_template, old_rv)
    assert err.value.status == 410, err.value
    assert "Expired" in str(err.value.reason), err.value.reason


def test_a_compaction_right_after_the_watch_revision_is_a_500(
    control_plane: ControlPlane, admin_api: client.ApiClient
) -> None:
    """etcd starts the watch, but the first event's previous value is compacted: InternalError, not Expired."""
    core = client.CoreV1Api(admin_api)
    name = f"rv-{uuid.uuid4().hex[:6]}"
    template = {"metadata": {"name": name}, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    old_rv = core.create_namespaced_pod_template(JOB_NAMESPACE, template).metadata.resource_version
    core.patch_namespaced_pod_template(name, JOB_NAMESPACE, {"metadata": {"labels": {"n": "1"}}})
    control_plane.compact_etcd(revision=int(old_rv) + 1)

    with pytest.raises(ApiException) as err:
        _watch_all(core.list_namespaced_pod_template, old_rv)
    assert err.value.status == 500, err.value
    assert "PrevKv=nil" in str(err.value.reason), err.value.reason


def test_the_watch_cache_outlives_a_compaction(control_plane: ControlPlane, admin_api: client.ApiClient) -> None:
    """What EKS does too: a cached resource's watch from before the compaction still gets its events."""
    core = client.CoreV1Api(admin_api)
    name = f"rv-{uuid.uuid4().hex[:6]}"
    old_rv = core.create_namespaced_config_map(JOB_NAMESPACE, {"metadata": {"name": name}}).metadata.resource_version
    for n in range(3):
        core.patch_namespaced_config_map(name, JOB_NAMESPACE, {"data": {"n": str(n)}})
    control_plane.compact_etcd()

    events = _watch_all(core.list_namespaced_config_map, old_rv)
    assert [e["type"] for e in events] == ["MODIFIED"] * 3


def test_jobsync_reads_the_log_of_a_failed_pod(
    control_plane: ControlPlane, rbac: None, jobsync_api: client.ApiClient
) -> None:
    """pods/log goes API server -> kwok's kubelet endpoint; the CRI framing is gone, the lines are as written."""
    control_plane.set_pod_log("epoch 1 loss=0.51\nTraceback (most recent call last):\nRuntimeError: CUDA out of memory")
    name = f"log-{uuid.uuid4().hex[:6]}"
    run_pytorchjob(jobsync_api, pytorchjob(name, {OUTCOME_ANNOTATION: "fail"}, restart_policy="Never"), until="Failed")
    core = client.CoreV1Api(jobsync_api)
    pods = core.list_namespaced_pod(
        JOB_NAMESPACE, label_selector=f"training.kubeflow.org/job-name={name},training.kubeflow.org/replica-type=master"
    ).items
    assert [p.status.phase for p in pods] == ["Failed"]
    log = core.read_namespaced_pod_log(pods[0].metadata.name, JOB_NAMESPACE, container="pytorch", tail_lines=1)
    assert log == "RuntimeError: CUDA out of memory\n"

    # The generated client parses a log that happens to be JSON and returns its Python repr; raw bytes do not lie.
    control_plane.set_pod_log('{"level": "error", "msg": "boom"}')
    parsed = core.read_namespaced_pod_log(pods[0].metadata.name, JOB_NAMESPACE)
    raw = core.read_namespaced_pod_log(pods[0].metadata.name, JOB_NAMESPACE, _preload_content=False).data
    assert parsed == "{'level': 'error', 'msg': 'boom'}"
    assert raw == b'{"level": "error", "msg": "boom"}\n'


def test_the_scheduler_places_gpu_pods_on_the_gpu_node(admin_api: client.ApiClient) -> None:
    core = client.CoreV1Api(admin_api)
    suffix = uuid.uuid4().hex[:6]

    def pod(name: str, gpus: int) -> dict:
        resources = {"limits": {"nvidia.com/gpu": str(gpus)}}
        container = {"name": "c", "image": "x", "resources": resources}
        meta = {"name": name, "annotations": {OUTCOME_ANNOTATION: "run-forever"}}
        return {"metadata": meta, "spec": {"restartPolicy": "Never", "containers": [container]}}

    core.create_namespaced_pod(JOB_NAMESPACE, pod(f"gpu-one-{suffix}", 1))
    core.create_namespaced_pod(JOB_NAMESPACE, pod(f"gpu-many-{suffix}", 8))
    try:
        placed = wait_for(
            "the 1-GPU pod to run",
            lambda: (p := core.read_namespaced_pod(f"gpu-one-{suffix}", JOB_NAMESPACE)).status.phase == "Running" and p,
            timeout=30,
        )
        assert placed.spec.node_name == "kwok-gpu-0"

        def unschedulable() -> Any:
            p = core.read_namespaced_pod(f"gpu-many-{suffix}", JOB_NAMESPACE)
            return [c for c in p.status.conditions or [] if c.type == "PodScheduled" and c.reason == "Unschedulable"]

        cond = wait_for("the 8-GPU pod to be Unschedulable", unschedulable, timeout=30)[0]
        assert "Insufficient nvidia.com/gpu" in cond.message, cond.message
    finally:
        for name in (f"gpu-one-{suffix}", f"gpu-many-{suffix}"):
            core.delete_namespaced_pod(name, JOB_NAMESPACE, grace_period_seconds=0)
