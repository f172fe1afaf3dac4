"""The notifier's objects in the cluster, rendered for a deployment.

One replica with the Recreate strategy: two notifiers at once only publish
the same change twice, which the callback side ignores (an ended
execution's token is gone), so no leader election is needed. AWS
credentials come from EKS Pod Identity (the stack's
``NotifierPodIdentityAssociation``) or, with ``irsa_role_arn``, from IRSA.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jobsync import rbac
from jobsync.evaluation.kinds import KindSpec

HEALTH_PORT = 8080


def deployment(namespace: str, kinds: Iterable[KindSpec], image: str, event_bus: str, region: str) -> dict[str, Any]:
    kinds = list(kinds)
    labels = {"app.kubernetes.io/name": rbac.NAME, "app.kubernetes.io/component": "notifier"}
    env = {
        "JOBSYNC_CLUSTER_MODE": "incluster",
        "JOBSYNC_NAMESPACE": namespace,
        "JOBSYNC_ALLOWED_KINDS": ",".join(f"{k.api_version}/{k.kind}" for k in kinds),
        "JOBSYNC_EVENT_BUS_NAME": event_bus,
        "JOBSYNC_HEALTH_PORT": str(HEALTH_PORT),
        "AWS_REGION": region,
        "POWERTOOLS_SERVICE_NAME": "jobsync-notifier",
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }
    probe = {"periodSeconds": 10, "timeoutSeconds": 3, "failureThreshold": 3}
    container = {
        "name": "notifier",
        "image": image,
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "ports": [{"name": "health", "containerPort": HEALTH_PORT}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "health"}, **probe},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "health"}, **probe},
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": rbac.NOTIFIER_NAME, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": rbac.NOTIFIER_NAME,
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                },
            },
        },
    }


def objects(
    namespace: str,
    kinds: Iterable[KindSpec],
    image: str,
    event_bus: str,
    region: str,
    irsa_role_arn: str | None = None,
) -> list[dict[str, Any]]:
    """ServiceAccount, Role (list and watch on the kinds), RoleBinding and Deployment."""
    kinds = list(kinds)
    docs = rbac.notifier(namespace, kinds)
    if irsa_role_arn:
        docs[0]["metadata"]["annotations"] = {"eks.amazonaws.com/role-arn": irsa_role_arn}
    return [*docs, deployment(namespace, kinds, image, event_bus, region)]
