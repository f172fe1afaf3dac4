"""Kueue's objects for the e2e tier, the jobs it queues, and the payloads each queue state is recorded as.

One ResourceFlavor, one ClusterQueue with a small CPU quota (preemption of lower priorities within it), one
LocalQueue in ``QUEUE_NAMESPACE`` (labelled so Kueue's webhooks see it), two WorkloadPriorityClasses. A job
is Kueue's when it carries the queue-name label; Kueue then creates it suspended and a Workload owned by it.

With ``JOBSYNC_E2E_RECORD_KUEUE`` set to a folder, ``record`` writes each state the tests reach as
``<folder>/<state>.yaml``: ``{"job": ..., "workload": ...}`` as the API served them (managedFields left
out), headed by what produced it. tests/payloads/kueue/ holds the ones committed.
"""

from __future__ import annotations

import contextlib
import copy
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config, watch

from e2e import controllers
from e2e.controllers import KUEUE_NAMESPACE_LABEL, Controllers
from e2e.controlplane import JOB_NAMESPACE, RUN_DURATION_ANNOTATION, ControlPlane, pinned_versions
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
#: A second ClusterQueue, whose admission waits for an AdmissionCheck the tests play the controller of.
CHECKED_LOCAL_QUEUE = "checked"
CHECKED_CLUSTER_QUEUE = "e2e-checked-cq"
ADMISSION_CHECK = "manual-check"
#: Jobs with this label may not be resumed once suspended (a ValidatingAdmissionPolicy, ``hold_resumes``).
HOLD_LABEL = "e2e.jobsync.io/hold"
#: Kueue's Configuration for the requeuing limit story: pods not ready in 5 s evict, the first eviction deactivates.
WAIT_FOR_PODS_READY = {
    "waitForPodsReady": {
        "timeout": "5s",
        "blockAdmission": False,
        "requeuingStrategy": {"timestamp": "Eviction", "backoffLimitCount": 0, "backoffBaseSeconds": 1},
    }
}
#: The feature gates of Kueue's finer reasons for a workload that is not admitted (beta, off as released).
OBSERVABILITY_GATES = {"UnadmittedWorkloadsObservability": True, "UnadmittedWorkloadsExplicitStatus": True}


@contextlib.contextmanager
def kueue_running(cp: ControlPlane) -> Iterator[Controllers]:
    """Kueue, JobSet and Trainer v2 on ``cp``, the queues installed; stopped afterwards."""
    with controllers.running(cp) as running:
        install_queues(cp)
        yield running


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


def install_checked_queue(cp: ControlPlane) -> None:
    """An AdmissionCheck whose controller the tests play (it is Active: they say so in its status), and a
    ClusterQueue of 1 CPU that admits only once the check is Ready, with its LocalQueue ``checked``."""
    cp.apply(
        [
            {
                "apiVersion": KUEUE_API,
                "kind": "AdmissionCheck",
                "metadata": {"name": ADMISSION_CHECK},
                "spec": {"controllerName": "e2e.jobsync.io/manual"},
            }
        ]
    )
    active = {"type": "Active", "status": "True", "reason": "Active", "message": "played by the e2e tests"}
    path = f"/apis/{KUEUE_API}/admissionchecks/{ADMISSION_CHECK}/status"
    resp = cp.request("PATCH", path, {"status": {"conditions": [{**active, "lastTransitionTime": _now()}]}}, **MERGE)
    assert resp.status == 200, resp.body
    quota = [{"name": "cpu", "nominalQuota": QUOTA_CPU}, {"name": "memory", "nominalQuota": "4Gi"}]
    flavors = [{"name": FLAVOR, "resources": quota}]
    cp.apply(
        [
            {
                "apiVersion": KUEUE_API,
                "kind": "ClusterQueue",
                "metadata": {"name": CHECKED_CLUSTER_QUEUE},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": flavors}],
                    "admissionChecksStrategy": {"admissionChecks": [{"name": ADMISSION_CHECK}]},
                },
            },
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {"name": CHECKED_LOCAL_QUEUE, "namespace": QUEUE_NAMESPACE},
                "spec": {"clusterQueue": CHECKED_CLUSTER_QUEUE},
            },
        ]
    )
    wait_for(
        "the checked ClusterQueue active",
        lambda: _condition(_get(cp, f"/apis/{KUEUE_API}/clusterqueues/{CHECKED_CLUSTER_QUEUE}"), "Active"),
    )


def set_check(cp: ControlPlane, workload: dict[str, Any], state: str, message: str) -> None:
    """Write the AdmissionCheck's state on ``workload``, as a check's controller does."""
    check = {"name": ADMISSION_CHECK, "state": state, "message": message, "lastTransitionTime": _now()}
    resp = cp.request("PATCH", workload_path(workload) + "/status", {"status": {"admissionChecks": [check]}}, **MERGE)
    assert resp.status == 200, resp.body


def set_active(cp: ControlPlane, workload: dict[str, Any], active: bool) -> None:
    """Deactivate (or activate again) a Workload by hand, as ``kueuectl stop workload`` does."""
    resp = cp.request("PATCH", workload_path(workload), {"spec": {"active": active}}, **MERGE)
    assert resp.status == 200, resp.body


def hold_resumes(cp: ControlPlane) -> None:
    """A ValidatingAdmissionPolicy that refuses to resume a suspended batch/v1 Job labelled ``HOLD_LABEL``: Kueue
    admits its Workload, then cannot start the job (what kueue#11931 reports: admitted, still suspended)."""
    rules = [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["jobs"]}]
    suspended = "has(oldObject.spec.suspend) && oldObject.spec.suspend"
    cp.apply(
        [
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": "e2e-hold-resumes"},
                "spec": {
                    "failurePolicy": "Fail",
                    "matchConstraints": {
                        "resourceRules": rules,
                        "objectSelector": {"matchLabels": {HOLD_LABEL: "true"}},
                    },
                    "validations": [
                        {
                            "expression": f"!({suspended}) || (has(object.spec.suspend) && object.spec.suspend)",
                            "message": "held: this job may not be resumed",
                        }
                    ],
                },
            },
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "e2e-hold-resumes"},
                "spec": {"policyName": "e2e-hold-resumes", "validationActions": ["Deny"]},
            },
        ]
    )


def wait_until_held(cp: ControlPlane) -> None:
    """The policy counts (the API server compiles it a moment after it is made): a dry-run resume of a held
    probe Job, in a namespace Kueue does not see, is refused."""
    probe = batch_job("hold-probe", "100m")
    probe["metadata"] = {"name": "hold-probe", "namespace": JOB_NAMESPACE, "labels": {HOLD_LABEL: "true"}}
    probe["spec"]["suspend"] = True
    path = f"/apis/batch/v1/namespaces/{JOB_NAMESPACE}/jobs"
    resp = cp.request("POST", path, probe)
    assert resp.status == 201, resp.body
    resume = {"spec": {"suspend": False}}

    def refused() -> bool:
        answer = cp.request("PATCH", f"{path}/hold-probe?dryRun=All", resume, **MERGE)
        return answer.status in (403, 422) and "held" in str(answer.body)

    wait_for("the hold policy refuses a resume", refused, timeout=30)
    cp.request("DELETE", f"{path}/hold-probe?propagationPolicy=Background")


def release_resumes(cp: ControlPlane) -> None:
    for plural in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
        cp.request("DELETE", f"/apis/admissionregistration.k8s.io/v1/{plural}/e2e-hold-resumes")


class WorkloadWatch:
    """Every version of the Workloads in ``QUEUE_NAMESPACE`` the API server sends from now on (a watch), so
    that a state Kueue writes for an instant is seen: ``first(job, check)`` is the first version of the job's
    Workload whose conditions satisfy ``check``."""

    def __init__(self, cp: ControlPlane) -> None:
        self._api = config.new_client_from_config(config_file=str(cp.write_kubeconfig("admin")))
        self._custom = client.CustomObjectsApi(self._api)
        group, version = KUEUE_API.split("/")
        listed = self._custom.list_namespaced_custom_object(group, version, QUEUE_NAMESPACE, "workloads")
        self._seen: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._watch = watch.Watch()
        self._args = (group, version, QUEUE_NAMESPACE, "workloads")
        self._version = listed["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, name="workload-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            stream = self._watch.stream(
                self._custom.list_namespaced_custom_object,
                *self._args,
                resource_version=self._version,
                timeout_seconds=5,
            )
            for event in stream:
                obj = event["object"]
                self._version = obj["metadata"]["resourceVersion"]
                self._seen.append(copy.deepcopy(obj))
                if self._stop.is_set():
                    break

    def first(self, job: dict[str, Any], what: str, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        name = job["metadata"]["name"]

        def found() -> dict[str, Any] | None:
            for obj in list(self._seen):
                owners = [r["name"] for r in obj["metadata"].get("ownerReferences", [])]
                if name in owners and check(conditions(obj)):
                    return obj
            return None

        return dict(wait_for(f"{name}: {what} (watched)", found, timeout=60))

    def close(self) -> None:
        self._stop.set()
        self._watch.stop()
        self._thread.join(timeout=10)
        self._api.close()


def queued_labels(priority: str | None = None, queue: str = LOCAL_QUEUE) -> dict[str, str]:
    labels = {QUEUE_LABEL: queue}
    if priority:
        labels[PRIORITY_LABEL] = priority
    return labels


def batch_job(
    name: str,
    cpu: str,
    run: str = "1s",
    outcome: str = "succeed",
    priority: str | None = None,
    queue: str = LOCAL_QUEUE,
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A batch/v1 Job of one pod asking for ``cpu`` (and ``extra`` resources), queued in the LocalQueue ``queue``."""
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": "64Mi"}}
    if extra:
        resources = {"requests": {**resources["requests"], **extra}, "limits": dict(extra)}
    template = {
        "metadata": {"annotations": pod_annotations(outcome, run_duration=run)},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": IMAGE, "resources": resources}]},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": QUEUE_NAMESPACE, "labels": queued_labels(priority, queue)},
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


def workload_path(workload: dict[str, Any]) -> str:
    return f"/apis/{KUEUE_API}/namespaces/{QUEUE_NAMESPACE}/workloads/{workload['metadata']['name']}"


def delete(cp: ControlPlane, job: dict[str, Any]) -> None:
    resp = cp.request("DELETE", job_path(job, job["metadata"]["name"]) + "?propagationPolicy=Background")
    assert resp.status == 200, resp.body


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


#: A JSON merge patch: lists are replaced whole, which is what a status written by hand wants.
MERGE = {"content_type": "application/merge-patch+json"}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _exists(cp: ControlPlane, path: str) -> bool:
    return cp.request("GET", path).status == 200


def _condition(obj: dict[str, Any], kind: str) -> bool:
    return any(c["type"] == kind and c["status"] == "True" for c in obj.get("status", {}).get("conditions", []))
