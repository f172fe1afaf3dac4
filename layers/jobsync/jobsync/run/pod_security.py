"""The Kubernetes Pod Security Standards Baseline profile, checked in every pod template a job holds.

Unless the deployment allows privileged pods (``JOBSYNC_ALLOW_PRIVILEGED_PODS``),
submit refuses a job that asks for anything Baseline forbids, naming each
field by its path (``job.spec.pytorchReplicaSpecs.Worker.template.spec.
containers[0].securityContext.privileged``). Pod Security Admission on the
namespace would refuse the pods too, but only once the operator creates
them: the job would be created, then sit with no pods. Checking here refuses
the request before anything exists.

One row per control in ``RULES`` (https://kubernetes.io/docs/concepts/security/pod-security-standards/,
Baseline), plus ``allowPrivilegeEscalation: true``, which is Restricted's and
was refused before this module. Pod templates are found by shape, so every
kind is covered: anything under the job's ``spec`` that holds
``containers``, ``initContainers``, ``ephemeralContainers`` or ``volumes``
as a list is a pod spec (Kubeflow ``spec.<x>ReplicaSpecs.*.template.spec``,
batch/v1 ``spec.template.spec``, TrainJob ``spec.podSpecOverrides[*]``), and
the ``metadata`` beside a pod spec is its template's (AppArmor and seccomp
annotations).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

Scope = Literal["pod", "container", "pod-annotation"]

CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_POD_SPEC_LISTS = (*CONTAINER_LISTS, "volumes")

# Baseline's allowed capabilities (the container runtime's default set).
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"


def _unset_or_false(value: Any) -> bool:
    return value is None or value is False


def _one_of(*allowed: Any) -> Callable[[Any], bool]:
    return lambda value: value is None or value in allowed


@dataclass(frozen=True)
class Rule:
    """One Baseline control: where it looks (``[*]`` is every item of a list) and what it allows."""

    name: str
    scope: Scope
    field: str
    allowed: Callable[[Any], bool]


RULES: tuple[Rule, ...] = (
    Rule("host-process", "pod", "securityContext.windowsOptions.hostProcess", _unset_or_false),
    Rule("host-process", "container", "securityContext.windowsOptions.hostProcess", _unset_or_false),
    Rule("host-namespaces", "pod", "hostNetwork", _unset_or_false),
    Rule("host-namespaces", "pod", "hostPID", _unset_or_false),
    Rule("host-namespaces", "pod", "hostIPC", _unset_or_false),
    Rule("privileged", "container", "securityContext.privileged", _unset_or_false),
    Rule("privilege-escalation", "container", "securityContext.allowPrivilegeEscalation", _unset_or_false),
    Rule("capabilities", "container", "securityContext.capabilities.add[*]", lambda v: v in BASELINE_CAPABILITIES),
    Rule("host-path", "pod", "volumes[*].hostPath", lambda v: v is None),
    Rule("host-ports", "container", "ports[*].hostPort", _one_of(0)),
    Rule("apparmor", "pod", "securityContext.appArmorProfile.type", _one_of("RuntimeDefault", "Localhost")),
    Rule("apparmor", "container", "securityContext.appArmorProfile.type", _one_of("RuntimeDefault", "Localhost")),
    Rule(
        "apparmor",
        "pod-annotation",
        APPARMOR_ANNOTATION + "*",
        lambda v: v is None or v == "runtime/default" or (isinstance(v, str) and v.startswith("localhost/")),
    ),
    Rule("selinux", "pod", "securityContext.seLinuxOptions.type", lambda v: v is None or v in SELINUX_TYPES),
    Rule("selinux", "container", "securityContext.seLinuxOptions.type", lambda v: v is None or v in SELINUX_TYPES),
    Rule("selinux", "pod", "securityContext.seLinuxOptions.user", _one_of("")),
    Rule("selinux", "container", "securityContext.seLinuxOptions.user", _one_of("")),
    Rule("selinux", "pod", "securityContext.seLinuxOptions.role", _one_of("")),
    Rule("selinux", "container", "securityContext.seLinuxOptions.role", _one_of("")),
    Rule("proc-mount", "container", "securityContext.procMount", _one_of("Default")),
    Rule("seccomp", "pod", "securityContext.seccompProfile.type", _one_of("RuntimeDefault", "Localhost")),
    Rule("seccomp", "container", "securityContext.seccompProfile.type", _one_of("RuntimeDefault", "Localhost")),
    Rule("seccomp", "pod-annotation", SECCOMP_POD_ANNOTATION, lambda v: v != "unconfined"),
    Rule("seccomp", "pod-annotation", SECCOMP_CONTAINER_ANNOTATION + "*", lambda v: v != "unconfined"),
    Rule("sysctls", "pod", "securityContext.sysctls[*].name", lambda v: v in SAFE_SYSCTLS),
)
RULE_NAMES = tuple(dict.fromkeys(rule.name for rule in RULES))


def violations(spec: Any, path: str = "job.spec") -> list[str]:
    """The path of every field in ``spec`` (a job's spec) that Baseline forbids, each once, in order."""
    found: dict[str, None] = {}
    for pod_path, pod_spec, pod_meta in pod_specs(spec, path):
        for rule in RULES:
            for where in _check(rule, pod_path, pod_spec, pod_meta):
                found.setdefault(where, None)
    return list(found)


def pod_specs(node: Any, path: str, parent: dict[str, Any] | None = None) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """Every pod spec under ``node``, by shape, with its path and the metadata beside it."""
    if isinstance(node, dict):
        if any(isinstance(node.get(key), list) for key in _POD_SPEC_LISTS):
            yield path, node, (parent or {}).get("metadata")
        for key, value in node.items():
            yield from pod_specs(value, f"{path}.{key}", node)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from pod_specs(item, f"{path}[{i}]")


def _check(rule: Rule, pod_path: str, pod_spec: dict[str, Any], pod_meta: Any) -> Iterator[str]:
    if rule.scope == "pod":
        targets: list[tuple[str, Any]] = [(pod_path, pod_spec)]
    elif rule.scope == "container":
        targets = [
            (f"{pod_path}.{key}[{i}]", c)
            for key in CONTAINER_LISTS
            if isinstance(pod_spec.get(key), list)
            for i, c in enumerate(pod_spec[key])
        ]
    else:
        yield from _check_annotations(rule, pod_path, pod_meta)
        return
    for base, obj in targets:
        for where, value in _values(obj, rule.field.split("."), base):
            if not rule.allowed(value):
                yield where


def _check_annotations(rule: Rule, pod_path: str, pod_meta: Any) -> Iterator[str]:
    annotations = pod_meta.get("annotations") if isinstance(pod_meta, dict) else None
    if not isinstance(annotations, dict):
        return
    meta_path = pod_path.removesuffix(".spec") + ".metadata.annotations"
    prefix = rule.field.removesuffix("*")
    for key, value in annotations.items():
        matches = key.startswith(prefix) if rule.field.endswith("*") else key == rule.field
        if matches and not rule.allowed(value):
            yield f"{meta_path}[{key!r}]"


def _values(obj: Any, parts: list[str], path: str) -> Iterator[tuple[str, Any]]:
    """``(path, value)`` for each field ``parts`` reaches; an absent field is not reached (Baseline allows unset)."""
    if not parts:
        yield path, obj
        return
    part, rest = parts[0], parts[1:]
    every = part.endswith("[*]")
    key = part.removesuffix("[*]")
    if not isinstance(obj, dict) or key not in obj:
        return
    value = obj[key]
    if every:
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from _values(item, rest, f"{path}.{key}[{i}]")
        return
    if rest and not isinstance(value, dict):
        return
    yield from _values(value, rest, f"{path}.{key}")
