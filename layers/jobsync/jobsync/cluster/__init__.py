"""Reaching the Kubernetes API: ``connection`` (one client per cluster, EKS, kubeconfig or url
mode), ``eks_token``, ``jobs`` (the calls jobsync makes) and ``errors`` (HTTP answers and
transport failures as jobsync's errors)."""

from jobsync.cluster.connection import ClusterSettings, get_api_client, reset_cache
from jobsync.cluster.jobs import KubeJobs

__all__ = ["ClusterSettings", "KubeJobs", "get_api_client", "reset_cache"]
