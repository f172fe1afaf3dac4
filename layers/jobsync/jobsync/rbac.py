"""The Kubernetes RBAC a deployment needs, rendered from its settings rather than edited by hand.

``Lambdas``: the Role bound to the group the EKS access entry maps the
Lambdas' IAM role to. ``NOTIFIER``: the notifier's ServiceAccount, Role and
RoleBinding. Each verb is something the code calls (tests/integration/test_rbac.py
derives the set from the requests the Lambdas make and compares):

- submit: create + get the job kinds (get to adopt on a retried submit);
- status: get the job (watch in watch mode); list pods by label; get
  the objects between a job and its pods that their owner references name
  (a TrainJob's JobSet and batch Jobs, a JobSet's or an MPIJob launcher's
  batch Jobs, a RayJob's RayCluster and submitter Job: is the pod really the
  job's?); get pods/log of a failed pod; list the events of a stuck pod (is
  capacity coming? can its image ever be pulled?);
- cleanup: get + delete the job;
- the notifier: list + watch the job kinds.

Kinds are grouped by their real API group (kubeflow.org, batch,
trainer.kubeflow.org, jobset.x-k8s.io, ray.io, sparkoperator.k8s.io,
batch.volcano.sh, sagemaker.aws.amazon.com, ...), one rule each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from jobsync.evaluation.kinds import KindSpec

RBAC_API = "rbac.authorization.k8s.io"
# list: cleanup after an execution event whose Submit never answered names the jobs labelled for it (deletes none).
JOB_VERBS = ("create", "get", "list", "delete")
POD_RULES = (
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
)
# The objects between a job and its pods (KindSpec.owners) are only read, one by one.
OWNER_VERBS = ("get",)
NOTIFIER_VERBS = ("list", "watch")
NAME = "jobsync"
NOTIFIER_NAME = "jobsync-notifier"


def _labels(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": component}


def kind_rules(kinds: Iterable[KindSpec], verbs: Sequence[str]) -> list[dict[str, Any]]:
    """One rule per API group, its kinds' plurals, sorted so the output is stable."""
    by_group: dict[str, set[str]] = {}
    for spec in kinds:
        if spec.plural:  # Azure ML is not a Kubernetes resource
            by_group.setdefault(spec.group, set()).add(spec.plural)
    return [
        {"apiGroups": [group], "resources": sorted(plurals), "verbs": list(verbs)}
        for group, plurals in sorted(by_group.items())
    ]


def owner_rules(kinds: Iterable[KindSpec]) -> list[dict[str, Any]]:
    """get on the objects between the kinds' jobs and their pods, unless they are allowed kinds themselves."""
    kinds = list(kinds)
    allowed = {(spec.group, spec.plural) for spec in kinds}
    parts = [part for spec in kinds for part in spec.owners if (part.group, part.plural) not in allowed]
    return kind_rules(parts, OWNER_VERBS)


def lambda_role(namespace: str, kinds: Iterable[KindSpec], watch: bool = False) -> dict[str, Any]:
    kinds = list(kinds)
    verbs = (*JOB_VERBS, "watch") if watch else JOB_VERBS
    return {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "Role",
        "metadata": {"name": NAME, "namespace": namespace, "labels": _labels("lambdas")},
        "rules": [*kind_rules(kinds, verbs), *owner_rules(kinds), *POD_RULES],
    }


def binding(name: str, namespace: str, subject: dict[str, Any], component: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels(component)},
        "subjects": [subject],
        "roleRef": {"apiGroup": RBAC_API, "kind": "Role", "name": name},
    }


def lambdas(namespace: str, kinds: Iterable[KindSpec], group: str = NAME, watch: bool = False) -> list[dict[str, Any]]:
    """The Lambdas' Role and its binding to the Kubernetes group of the EKS access entry."""
    subject = {"apiGroup": RBAC_API, "kind": "Group", "name": group}
    return [lambda_role(namespace, kinds, watch), binding(NAME, namespace, subject, "lambdas")]


def notifier(namespace: str, kinds: Iterable[KindSpec]) -> list[dict[str, Any]]:
    """The notifier's ServiceAccount, a Role with list and watch on the job kinds, and the binding."""
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": NOTIFIER_NAME, "namespace": namespace, "labels": _labels("notifier")},
    }
    role = {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "Role",
        "metadata": {"name": NOTIFIER_NAME, "namespace": namespace, "labels": _labels("notifier")},
        "rules": kind_rules(kinds, NOTIFIER_VERBS),
    }
    subject = {"kind": "ServiceAccount", "name": NOTIFIER_NAME, "namespace": namespace}
    return [account, role, binding(NOTIFIER_NAME, namespace, subject, "notifier")]
