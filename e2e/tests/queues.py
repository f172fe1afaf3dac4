"""Kueue's objects for the e2e tier, the jobs it queues, and the payloads each queue state is recorded as.

One ResourceFlavor, one ClusterQueue with a small CPU quota (preemption of lower priorities within it), one
LocalQueue in ``QUEUE_NAMESPACE`` (labelled so Kueue's webhooks see it), two WorkloadPriorityClasses. A job
is Kueue's when it carries the queue-name label; Kueue then creates it suspended and a Workload owned by it.

With ``JOBSYNC_E2E_RECORD_KUEUE`` set to a folder, ``record`` writes each state the tests reach as
``<folder>/<state>.yaml``: ``{"job": ..., "workload": ...}`` as the API served them (managedFields left
out), headed by what produced it. tests/payloads/kueue/ holds the ones committed.
"""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path
from typing import Any

import yaml

from e2e.controllers import KUEUE_NAMESPACE_LABEL, Controllers
from e2e.controlplane import RUN_DURATION_ANNOTATION, ControlPlane, pinned_versions
from e2e.tests.jobs import wait_for
from e2e.tests.runs import pod_annotations

QUEUE_NAMESPACE = "ml-queued"
LOCAL_QUEUE = "e2e"
CLUSTER_QUEUE = "e2e-cq"
FLAVOR = "default-flavor"
#: The ClusterQueue's whole CPU quota: two jobs of one CPU cannot run at once, and a job of 2 never fits.
QUOTA_CPU = "1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
IMAGE = "docker.io/library/busybox:1.36"


def install_queues(cp: ControlPlane) -> None:
    """The namespace, flavor, ClusterQueue, LocalQueue and priority classes the tests queue into."""
    cp.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": QUEUE_NAMESPACE, "labels": {KUEUE_NAMESPACE_LABEL: "true"}},
            },
            {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}},
            {
                "apiVersion": KUEUE_API,
                "kind": "ClusterQueue",
                "metadata": {"name": CLUSTER_QUEUE},
                "spec": {
                    "namespaceSelector": {},
                    "queueingStrategy": "BestEffortFIFO",
                    "preemption": {"withinClusterQueue": "LowerPriority"},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {
                                    "name": FLAVOR,
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": QUOTA_CPU},
                                        {"name": "memory", "nominalQuota": "4Gi"},
                                    ],
                                }
                            ],
                        }
                    ],
                },
            },
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {"name": LOCAL_QUEUE, "namespace": QUEUE_NAMESPACE},
                "spec": {"clusterQueue": CLUSTER_QUEUE},
            },
            {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": "low"}, "value": 100},
            {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": 1000},
        ]
    )
    wait_for(
        f"serviceaccount {QUEUE_NAMESPACE}/default",
        lambda: _exists(cp, f"/api/v1/namespaces/{QUEUE_NAMESPACE}/serviceaccounts/default"),
    )
    wait_for(
        "ClusterQueue active",
        lambda: _condition(_get(cp, f"/apis/{KUEUE_API}/clusterqueues/{CLUSTER_QUEUE}"), "Active"),
    )


def queued_labels(priority: str | None = None) -> dict[str, str]:
    labels = {QUEUE_LABEL: LOCAL_QUEUE}
    if priority:
        labels[PRIORITY_LABEL] = priority
    return labels


def batch_job(
    name: str, cpu: str, run: str = "1s", outcome: str = "succeed", priority: str | None = None
) -> dict[str, Any]:
    """A batch/v1 Job of one pod asking for ``cpu``, queued in the LocalQueue."""
    resources = {"requests": {"cpu": cpu, "memory": "64Mi"}}
    template = {
        "metadata": {"annotations": pod_annotations(outcome, run_duration=run)},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": IMAGE, "resources": resources}]},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": QUEUE_NAMESPACE, "labels": queued_labels(priority)},
        "spec": {"backoffLimit": 0, "template": template},
    }


def pytorchjob(name: str, cpu_each: str, run: str = "1s") -> dict[str, Any]:
    """A PyTorchJob, Master and one Worker each asking for ``cpu_each``, queued in the LocalQueue."""

    def replica() -> dict[str, Any]:
        container = {"name": "pytorch", "image": IMAGE, "resources": {"requests": {"cpu": cpu_each, "memory": "64Mi"}}}
        template = {"metadata": {"annotations": {RUN_DURATION_ANNOTATION: run}}, "spec": {"containers": [container]}}
        return {"replicas": 1, "restartPolicy": "Never", "template": template}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": QUEUE_NAMESPACE, "labels": queued_labels()},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(), "Worker": replica()}},
    }


def job_path(obj: dict[str, Any], name: str | None = None) -> str:
    api, kind = obj["apiVersion"], obj["kind"]
    plural = {"Job": "jobs", "PyTorchJob": "pytorchjobs"}[kind]
    prefix = f"/apis/{api}/namespaces/{QUEUE_NAMESPACE}/{plural}"
    return f"{prefix}/{name}" if name else prefix


def create(cp: ControlPlane, obj: dict[str, Any]) -> dict[str, Any]:
    resp = cp.request("POST", job_path(obj), obj)
    assert resp.status == 201, resp.body
    return dict(resp.body)


def get(cp: ControlPlane, obj: dict[str, Any]) -> dict[str, Any]:
    return _get(cp, job_path(obj, obj["metadata"]["name"]))


def workload_of(cp: ControlPlane, job: dict[str, Any]) -> dict[str, Any] | None:
    """The Workload Kueue made for ``job``: the one its owner references name by the job's uid."""
    uid = get(cp, job)["metadata"]["uid"]
    items = _get(cp, f"/apis/{KUEUE_API}/namespaces/{QUEUE_NAMESPACE}/workloads").get("items", [])
    owned = [w for w in items if any(r.get("uid") == uid for r in w["metadata"].get("ownerReferences", []))]
    return owned[0] if owned else None


def conditions(workload: dict[str, Any] | None) -> dict[str, tuple[str, str, str]]:
    """The Workload's conditions by type: (status, reason, message)."""
    found = (workload or {}).get("status", {}).get("conditions", [])
    return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", "")) for c in found}


def wait_workload(cp: ControlPlane, job: dict[str, Any], what: str, check: Any, timeout: float = 60) -> dict[str, Any]:
    """The job's Workload once ``check(conditions)`` holds."""

    def ready() -> dict[str, Any] | None:
        workload = workload_of(cp, job)
        return workload if workload and check(conditions(workload)) else None

    return dict(wait_for(f"{job['metadata']['name']}: {what}", ready, timeout=timeout))


def record(
    cp: ControlPlane, state: str, job: dict[str, Any], workload: dict[str, Any], how: str, gates: Controllers
) -> None:
    """Write ``state`` as a payload when JOBSYNC_E2E_RECORD_KUEUE names a folder; a no-op otherwise."""
    folder = os.environ.get("JOBSYNC_E2E_RECORD_KUEUE")
    if not folder:
        return
    pinned = pinned_versions() | gates.versions()
    header = [
        f"Kueue state: {state}. Recorded by e2e/tests/test_kueue.py ({how}) on {time.strftime('%Y-%m-%d')}:",
        f"Kueue {pinned['kueue']} (sigs.k8s.io/kueue), feature gates set: {gates.kueue_feature_gates}, the rest",
        "as released;",
        f"kube-apiserver {pinned['kube-apiserver']}, training-operator {pinned['training-operator']},",
        f"JobSet {pinned['jobset']}, Trainer {pinned['trainer']}; pods played by kwok {pinned['kwok']}.",
        "The job and its Workload as the API server served them at that moment; managedFields left out.",
    ]
    body = {"job": _clean(job), "workload": _clean(workload)}
    text = "".join(f"# {line}\n" for line in header) + yaml.safe_dump(body, sort_keys=False)
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / f"{state}.yaml").write_text(text)


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


def _get(cp: ControlPlane, path: str) -> dict[str, Any]:
    resp = cp.request("GET", path)
    assert resp.status == 200, (path, resp.status, resp.body)
    return dict(resp.body)


def _exists(cp: ControlPlane, path: str) -> bool:
    return cp.request("GET", path).status == 200


def _condition(obj: dict[str, Any], kind: str) -> bool:
    return any(c["type"] == kind and c["status"] == "True" for c in obj.get("status", {}).get("conditions", []))
