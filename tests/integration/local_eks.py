"""LocalJobsync as the Lambdas meet EKS: TLS, bearer tokens, and DescribeCluster.

``eks_jobsync()`` runs the same local service as ``harness.local.LocalJobsync``
but in ``JOBSYNC_CLUSTER_MODE=eks``: the in-process Kubernetes API serves
HTTPS with its own CA and accepts only EKS-style bearer tokens
(``k8s-aws-v1.…``); the Lambdas find its endpoint and CA through moto's
``eks:DescribeCluster`` and mint their tokens with ``jobsync.cluster.eks_token``, as in
AWS. Used by the tests that need credentials on the wire: re-auth on 401, a
throttled DescribeCluster, and the scan for leaked secrets.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import boto3
from moto.core import DEFAULT_ACCOUNT_ID
from moto.eks.models import eks_backends

from harness.kubeapi import KubeAPI
from harness.local import LocalJobsync
from jobsync import cluster, runtime
from jobsync.cluster.eks_token import TOKEN_PREFIX

CLUSTER_NAME = "training"
REGION = "us-east-1"  # the local Step Functions' region: moto's EKS and STS live there too


@contextmanager
def eks_jobsync(
    scenario: str = "success", timings: dict[str, float] | None = None, env: dict[str, str] | None = None
) -> Iterator[LocalJobsync]:
    with mock.patch("harness.local.KubeAPI", functools.partial(KubeAPI, tls=True)):
        local = LocalJobsync(scenario, timings, env=env).__enter__()
    try:
        api = local.api
        assert api is not None and api.ca_pem is not None
        api.accepted_tokens = lambda token: token.startswith(TOKEN_PREFIX)
        boto3.client("eks", region_name=REGION).create_cluster(
            name=CLUSTER_NAME,
            roleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/eks",
            resourcesVpcConfig={"subnetIds": []},
        )
        record = eks_backends[DEFAULT_ACCOUNT_ID][REGION].clusters[CLUSTER_NAME]
        record.endpoint = api.url
        record.certificate_authority = {"data": ca_data(local)}
        local._set_env(
            {
                "JOBSYNC_CLUSTER_MODE": "eks",
                "JOBSYNC_CLUSTER_NAME": CLUSTER_NAME,
                "AWS_REGION": REGION,
                "JOBSYNC_KUBE_URL": "",
            }
        )
        runtime.reset()
        cluster.reset_cache()
        yield local
    finally:
        local.__exit__(None, None, None)


def ca_data(local: LocalJobsync) -> str:
    """The CA as DescribeCluster returns it: base64 of the PEM."""
    assert local.api is not None and local.api.ca_pem is not None
    return base64.b64encode(local.api.ca_pem).decode()


def count_mints() -> list[Any]:
    """A list that grows by one each time a Lambda signs a new token."""
    from jobsync.cluster import eks_token

    mints: list[Any] = []
    eks_token.sts_client(REGION).meta.events.register("before-sign.sts.GetCallerIdentity", lambda **_: mints.append(1))
    return mints
