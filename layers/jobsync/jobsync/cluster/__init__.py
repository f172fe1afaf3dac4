"""Reaching the Kubernetes API: ``connection`` (one client per cluster, EKS, kubeconfig or url
mode), ``eks_token``, ``jobs`` (the calls jobsync makes) and ``errors`` (HTTP answers and
transport failures as jobsync's errors)."""

from jobsync.cluster.connection import get_api_client, reset_cache
from jobsync.cluster.jobs import KubeJobs
from jobsync.settings import ClusterSettings

__all__ = ["ClusterSettings", "KubeJobs", "get_api_client", "reset_cache"]
