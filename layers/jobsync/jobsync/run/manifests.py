"""From a submit request to the manifest jobsync creates, with its guardrails.

Everything here is pure: a rejected request is rejected before anything
touches the cluster, so nothing is ever half-created.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from jobsync.core.ours import EXECUTION_ANNOTATION, EXECUTION_LABEL, MANAGED_BY, execution_label, job_labels
from jobsync.errors import InvalidInput
from jobsync.evaluation.kinds import KindSpec
from jobsync.run import pod_security, templates
from jobsync.run.templates import Parameter
from jobsync.settings import Settings

__all__ = [
    "EXECUTION_ANNOTATION",
    "EXECUTION_LABEL",
    "MANAGED_BY",
    "MAX_JOB_NAME",
    "check_kind",
    "execution_label",
    "job_labels",
    "job_name",
    "load_template",
    "manifest_name",
    "prepare",
]

# Pod names are "<job>-worker-<index>" and must stay a DNS-1123 label (63);
# a 40-character job name leaves room for the operator's suffixes.
MAX_JOB_NAME = 40
_HASH_LEN = 8


def job_name(execution_arn: str, manifest_name: str | None) -> str:
    """The job's name: the manifest's own name, then a hash of the execution, so a retried submit finds the same job.

    A pure function of the two: every place that derives the name (submit,
    cleanup after an execution event, the harness) gets the same one. The
    manifest's ``metadata.name`` (or its ``generateName``; without either, the
    execution's name) is cut to DNS-1035 (lowercase letters, digits and ``-``,
    starting with a letter: the training-operator asks for it) and to fit
    MAX_JOB_NAME with the suffix: ``resnet50-imagenet`` becomes
    ``resnet50-imagenet-4b6d92d0``. The hash is of the whole ARN (execution
    names repeat across state machines).
    """
    base = manifest_name or execution_arn.rsplit(":", 1)[-1]
    readable = re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-")
    if not readable[:1].isalpha():
        readable = "job-" + readable
    readable = readable[: MAX_JOB_NAME - _HASH_LEN - 1].rstrip("-")
    return f"{readable}-{hashlib.sha256(execution_arn.encode()).hexdigest()[:_HASH_LEN]}"


def manifest_name(manifest: Any) -> str | None:
    """The name the manifest asks for: ``metadata.name``, else ``generateName``; None when it gives neither."""
    metadata = manifest.get("metadata") if isinstance(manifest, Mapping) else None
    if not isinstance(metadata, Mapping):
        return None
    for key in ("name", "generateName"):
        value = metadata.get(key)
        if isinstance(value, str) and value.strip("-"):
            return value
    return None


def load_template(text: str, parameters: Mapping[str, Parameter], source: str, settings: Settings) -> dict[str, Any]:
    """The manifest an S3 template and its parameters make, as plain JSON (see jobsync.run.templates)."""
    return templates.render(text, parameters, source, settings.max_manifest_bytes)


def prepare(manifest: Mapping[str, Any], execution_arn: str, namespace: str, settings: Settings) -> dict[str, Any]:
    """The object to create: checked against the guardrails, named, labelled.

    Raises InvalidInput naming what is wrong.
    """
    check_kind(manifest, settings)
    size = len(json.dumps(manifest))
    if size > settings.max_manifest_bytes:
        raise InvalidInput(f"job: manifest is {size} bytes, over the limit of {settings.max_manifest_bytes}")
    metadata = manifest.get("metadata", {})
    if not isinstance(metadata, dict):
        raise InvalidInput("job.metadata: must be a mapping")
    if metadata.get("namespace") not in (None, namespace):
        raise InvalidInput(
            f"job.metadata.namespace: {metadata['namespace']!r} is not allowed; jobs run in {namespace!r}"
        )
    if metadata.get("ownerReferences"):
        # The garbage collector deletes an object whose owners are gone: the job could vanish mid-run.
        raise InvalidInput("job.metadata.ownerReferences: not allowed; jobsync owns the job's lifecycle")
    if metadata.get("finalizers"):
        # A finalizer nobody removes keeps a deleted job in Terminating: cleanup would never finish.
        raise InvalidInput(
            "job.metadata.finalizers: not allowed; a finalizer no controller removes would keep the job "
            "from being deleted, and jobsync owns the job's lifecycle"
        )
    if not isinstance(manifest.get("spec"), dict):
        raise InvalidInput("job.spec: must be a mapping")
    if not settings.allow_privileged_pods:
        found = pod_security.violations(manifest["spec"], "job.spec")
        found += [f"job.spec.{w}" for w in privileged_settings(manifest["spec"]) if f"job.spec.{w}" not in found]
        if found:
            raise InvalidInput(
                f"{', '.join(found)}: privileged pod settings are not allowed by this deployment "
                "(Kubernetes Pod Security Standards, Baseline profile)"
            )

    obj: dict[str, Any] = json.loads(json.dumps(manifest))  # a deep copy that is plain JSON
    meta = obj.setdefault("metadata", {})
    meta["name"] = job_name(execution_arn, manifest_name(manifest))
    meta.pop("generateName", None)
    meta["namespace"] = namespace
    meta["labels"] = {**_str_map(meta.get("labels"), "labels"), **job_labels(execution_arn)}
    meta["annotations"] = {**_str_map(meta.get("annotations"), "annotations"), EXECUTION_ANNOTATION: execution_arn}
    obj.pop("status", None)
    return obj


def check_kind(manifest: Mapping[str, Any], settings: Settings) -> KindSpec:
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    if not isinstance(api_version, str) or not api_version:
        raise InvalidInput("job.apiVersion: required, a string such as 'kubeflow.org/v1'")
    if not isinstance(kind, str) or not kind:
        raise InvalidInput("job.kind: required, a string such as 'PyTorchJob'")
    spec = settings.allowed(api_version, kind)
    if spec is None:
        allowed = ", ".join(f"{s.api_version}/{s.kind}" for s in settings.allowed_kinds)
        raise InvalidInput(f"job.kind: {api_version}/{kind} is not allowed here (allowed: {allowed})")
    return spec


def _str_map(value: Any, field: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise InvalidInput(f"job.metadata.{field}: must map names to strings")
    return value


# Settings that give a pod the node, looked for anywhere in the spec (pod_security checks every pod
# template it finds by shape; this also catches a kind that nests them some other way).
_PRIVILEGED_FLAGS = frozenset({"hostNetwork", "hostPID", "hostIPC", "privileged", "allowPrivilegeEscalation"})


def privileged_settings(node: Any, path: str = "") -> Iterator[str]:
    """Where a manifest asks for host access or privilege, anywhere in it."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}" if path else str(key)
            if (key in _PRIVILEGED_FLAGS and value is True) or key == "hostPath":
                yield here
            else:
                yield from privileged_settings(value, here)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from privileged_settings(item, f"{path}[{i}]")
