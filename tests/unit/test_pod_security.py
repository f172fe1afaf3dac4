"""Pod Security Standards Baseline, rule by rule, in every pod template of every kind.

Each rule has rows that must be refused (with the field's path in the
message) and rows that must pass, through ``jobsync.run.submit.submit`` with
a cluster that records what it is asked to create.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jobsync.errors import InvalidInput
from jobsync.run import pod_security
from jobsync.run.inputs import SubmitRequest
from jobsync.run.submit import submit
from jobsync.settings import Settings

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:pss"
ALL_KINDS = Settings(allowed_kinds="PyTorchJob,TFJob,batch/v1/Job,TrainJob")
PERMISSIVE = Settings(allowed_kinds="PyTorchJob,TFJob,batch/v1/Job,TrainJob", allow_privileged_pods=True)


class RecordingCluster:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    def create(self, spec, obj):
        self.created.append(obj)
        return {**obj, "metadata": {**obj["metadata"], "uid": "uid-1"}}

    def get(self, spec, namespace, name):
        raise AssertionError("not expected")


def pytorchjob(pod_spec: dict[str, Any], pod_meta: dict[str, Any] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": pod_spec}
    if pod_meta is not None:
        template["metadata"] = pod_meta
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "mnist"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
                "Worker": {"replicas": 2, "template": template},
            }
        },
    }


WORKER = "job.spec.pytorchReplicaSpecs.Worker.template"


def container(**security: Any) -> dict[str, Any]:
    return {"name": "c", "image": "i", **({"securityContext": security} if security else {})}


def submitted(manifest: dict[str, Any], settings: Settings = ALL_KINDS) -> RecordingCluster:
    cluster = RecordingCluster()
    submit(SubmitRequest(execution=EXECUTION, job=manifest), cluster, settings, lambda uri: "")
    return cluster


def refusal(manifest: dict[str, Any], settings: Settings = ALL_KINDS) -> str:
    cluster = RecordingCluster()
    with pytest.raises(InvalidInput) as caught:
        submit(SubmitRequest(execution=EXECUTION, job=manifest), cluster, settings, lambda uri: "")
    assert cluster.created == []
    return str(caught.value)


EMPTY_DIR = {"name": "v", "emptyDir": {}}
APPARMOR_C = "container.apparmor.security.beta.kubernetes.io/c"
SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"


def sysctl(name: str) -> dict[str, str]:
    return {"name": name, "value": "1"}


# (rule, pod spec, template metadata, the path refused or None when allowed)
ROWS: list[tuple[str, dict[str, Any], dict[str, Any] | None, str | None]] = [
    # HostProcess
    ("host-process", {"securityContext": {"windowsOptions": {"hostProcess": True}}, "containers": [container()]},
     None, "spec.securityContext.windowsOptions.hostProcess"),
    ("host-process", {"containers": [container(windowsOptions={"hostProcess": True})]},
     None, "spec.containers[0].securityContext.windowsOptions.hostProcess"),
    ("host-process", {"containers": [container(windowsOptions={"hostProcess": False})]}, None, None),
    # Host namespaces
    ("host-namespaces", {"hostNetwork": True, "containers": [container()]}, None, "spec.hostNetwork"),
    ("host-namespaces", {"hostPID": True, "containers": [container()]}, None, "spec.hostPID"),
    ("host-namespaces", {"hostIPC": True, "containers": [container()]}, None, "spec.hostIPC"),
    ("host-namespaces", {"hostNetwork": False, "hostPID": False, "containers": [container()]}, None, None),
    # Privileged containers, in every container list
    ("privileged", {"containers": [container(privileged=True)]}, None, "spec.containers[0].securityContext.privileged"),
    ("privileged", {"containers": [container()], "initContainers": [container(privileged=True)]},
     None, "spec.initContainers[0].securityContext.privileged"),
    ("privileged", {"containers": [container()], "ephemeralContainers": [container(privileged=True)]},
     None, "spec.ephemeralContainers[0].securityContext.privileged"),
    ("privileged", {"containers": [container(privileged=False)]}, None, None),
    # Privilege escalation (beyond Baseline, refused since before this module)
    ("privilege-escalation", {"containers": [container(allowPrivilegeEscalation=True)]},
     None, "spec.containers[0].securityContext.allowPrivilegeEscalation"),
    # Capabilities
    ("capabilities", {"containers": [container(capabilities={"add": ["NET_BIND_SERVICE", "SYS_ADMIN"]})]},
     None, "spec.containers[0].securityContext.capabilities.add[1]"),
    ("capabilities", {"containers": [container(capabilities={"add": ["NET_RAW"]})]},
     None, "spec.containers[0].securityContext.capabilities.add[0]"),
    ("capabilities", {"containers": [container(capabilities={"add": ["CHOWN", "KILL", "SETUID"], "drop": ["ALL"]})]},
     None, None),
    # HostPath volumes
    ("host-path", {"containers": [container()], "volumes": [EMPTY_DIR, {"name": "r", "hostPath": {"path": "/"}}]},
     None, "spec.volumes[1].hostPath"),
    ("host-path", {"containers": [container()], "volumes": [EMPTY_DIR]}, None, None),
    # Host ports
    ("host-ports", {"containers": [{**container(), "ports": [{"containerPort": 80, "hostPort": 80}]}]},
     None, "spec.containers[0].ports[0].hostPort"),
    ("host-ports", {"containers": [{**container(), "ports": [{"containerPort": 80, "hostPort": 0}]}]}, None, None),
    # AppArmor
    ("apparmor", {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}, "containers": [container()]},
     None, "spec.securityContext.appArmorProfile.type"),
    ("apparmor", {"containers": [container(appArmorProfile={"type": "Unconfined"})]},
     None, "spec.containers[0].securityContext.appArmorProfile.type"),
    ("apparmor", {"containers": [container()]}, {"annotations": {APPARMOR_C: "unconfined"}},
     "metadata.annotations['container.apparmor.security.beta.kubernetes.io/c']"),
    ("apparmor", {"containers": [container(appArmorProfile={"type": "Localhost", "localhostProfile": "p"})]},
     {"annotations": {APPARMOR_C: "localhost/p"}}, None),
    ("apparmor", {"containers": [container(appArmorProfile={"type": "RuntimeDefault"})]},
     {"annotations": {APPARMOR_C: "runtime/default"}}, None),
    # SELinux
    ("selinux", {"securityContext": {"seLinuxOptions": {"type": "spc_t"}}, "containers": [container()]},
     None, "spec.securityContext.seLinuxOptions.type"),
    ("selinux", {"containers": [container(seLinuxOptions={"user": "system_u"})]},
     None, "spec.containers[0].securityContext.seLinuxOptions.user"),
    ("selinux", {"containers": [container(seLinuxOptions={"role": "system_r"})]},
     None, "spec.containers[0].securityContext.seLinuxOptions.role"),
    ("selinux", {"containers": [container(seLinuxOptions={"type": "container_init_t", "level": "s0:c1,c2"})]},
     None, None),
    # /proc mount type
    ("proc-mount", {"containers": [container(procMount="Unmasked")]},
     None, "spec.containers[0].securityContext.procMount"),
    ("proc-mount", {"containers": [container(procMount="Default")]}, None, None),
    # Seccomp
    ("seccomp", {"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": [container()]},
     None, "spec.securityContext.seccompProfile.type"),
    ("seccomp", {"containers": [container(seccompProfile={"type": "Unconfined"})]},
     None, "spec.containers[0].securityContext.seccompProfile.type"),
    ("seccomp", {"containers": [container()]}, {"annotations": {SECCOMP_POD: "unconfined"}},
     "metadata.annotations['seccomp.security.alpha.kubernetes.io/pod']"),
    ("seccomp", {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                 "containers": [container(seccompProfile={"type": "Localhost", "localhostProfile": "p.json"})]},
     None, None),
    # Sysctls
    ("sysctls", {"securityContext": {"sysctls": [sysctl("net.ipv4.tcp_syncookies"), sysctl("kernel.msgmax")]},
                 "containers": [container()]},
     None, "spec.securityContext.sysctls[1].name"),
    ("sysctls", {"securityContext": {"sysctls": [sysctl("net.ipv4.ip_local_port_range"),
                                                 sysctl("kernel.shm_rmid_forced")]},
                 "containers": [container()]}, None, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "pod_spec", "pod_meta", "path"), ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)]
)
def test_each_baseline_rule(rule, pod_spec, pod_meta, path):
    assert rule in pod_security.RULE_NAMES
    manifest = pytorchjob(pod_spec, pod_meta)
    if path is None:
        assert len(submitted(manifest).created) == 1
        return
    message = refusal(manifest)
    assert f"{WORKER}.{path}" in message, message
    assert "privileged pod settings are not allowed" in message
    assert len(submitted(copy.deepcopy(manifest), PERMISSIVE).created) == 1  # allowed when the deployment allows them


def test_every_rule_has_a_refused_and_an_allowed_row():
    refused = {r[0] for r in ROWS if r[3] is not None}
    allowed = {r[0] for r in ROWS if r[3] is None}
    assert refused == set(pod_security.RULE_NAMES)
    assert allowed >= set(pod_security.RULE_NAMES) - {"privilege-escalation"}


def test_every_violation_is_named_at_once():
    message = refusal(pytorchjob({"hostPID": True, "containers": [container(privileged=True)]}))
    assert f"{WORKER}.spec.hostPID" in message and f"{WORKER}.spec.containers[0].securityContext.privileged" in message


BAD_POD = {"hostNetwork": True, "containers": [{"name": "c", "image": "i"}]}


@pytest.mark.parametrize(
    ("manifest", "path"),
    [
        (
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "j"},
                "spec": {"template": {"spec": BAD_POD}},
            },
            "job.spec.template.spec.hostNetwork",
        ),
        (
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "metadata": {"name": "t"},
                "spec": {"tfReplicaSpecs": {"PS": {"template": {"spec": BAD_POD}}}},
            },
            "job.spec.tfReplicaSpecs.PS.template.spec.hostNetwork",
        ),
        (
            {
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "TrainJob",
                "metadata": {"name": "t"},
                "spec": {
                    "runtimeRef": {"name": "torch-distributed"},
                    "podSpecOverrides": [
                        {"targetJobs": [{"name": "node"}], "volumes": [{"name": "r", "hostPath": {"path": "/"}}]}
                    ],
                },
            },
            "job.spec.podSpecOverrides[0].volumes[0].hostPath",
        ),
    ],
)
def test_pod_templates_of_every_kind_are_checked(manifest, path):
    message = refusal(manifest)
    assert path in message, message
    assert len(submitted(copy.deepcopy(manifest), PERMISSIVE).created) == 1


# --- finalizers and ownerReferences of the job itself -------------------------------------


@pytest.mark.parametrize(
    ("meta", "field"),
    [
        ({"finalizers": ["example.com/hold"]}, "job.metadata.finalizers: not allowed"),
        ({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u"}]},
         "job.metadata.ownerReferences: not allowed"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("settings", [ALL_KINDS, PERMISSIVE], ids=["baseline", "privileged-allowed"])
def test_finalizers_and_owner_references_are_refused(meta, field, settings):
    manifest = pytorchjob({"containers": [container()]})
    manifest["metadata"].update(meta)
    assert field in refusal(manifest, settings)


def test_empty_finalizers_and_owner_references_pass():
    manifest = pytorchjob({"containers": [container()]})
    manifest["metadata"].update(finalizers=[], ownerReferences=[])
    assert len(submitted(manifest).created) == 1
