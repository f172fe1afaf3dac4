"""EKS bearer tokens, made the way ``aws eks get-token`` makes them.

A token is ``k8s-aws-v1.`` + base64url (no padding) of a presigned STS
``GetCallerIdentity`` GET URL whose signature covers the ``x-k8s-aws-id``
header naming the cluster (aws/aws-cli customizations/eks/get_token.py,
kubernetes-sigs/aws-iam-authenticator pkg/token/token.go). EKS accepts it for
15 minutes; it is treated as stale after 14, as the CLI and client-go do.

Presigning is local: no request leaves the Lambda. The token carries the
caller's (session) credentials, so it is never logged or shown in a repr.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from jobsync import aws, clock

if TYPE_CHECKING:
    from botocore.client import BaseClient

TOKEN_PREFIX = "k8s-aws-v1."
K8S_AWS_ID_HEADER = "x-k8s-aws-id"
URL_EXPIRES_SECONDS = 60  # how long the presigned URL is valid for exchange; EKS still honours the token 15 min
TOKEN_TTL_SECONDS = 14 * 60

_sts_clients: dict[str, BaseClient] = {}
_sts_lock = threading.Lock()


def _move_cluster_id_to_context(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    # GetCallerIdentity has no such parameter; stash it so validation passes.
    if K8S_AWS_ID_HEADER in params:
        context[K8S_AWS_ID_HEADER] = params.pop(K8S_AWS_ID_HEADER)


def _add_cluster_id_header(request: Any, **_: Any) -> None:
    # before-sign: the header is added before SigV4 runs, so it is signed.
    if K8S_AWS_ID_HEADER in request.context:
        request.headers[K8S_AWS_ID_HEADER] = request.context[K8S_AWS_ID_HEADER]


@contextlib.contextmanager
def quiet_botocore() -> Iterator[None]:
    """Hold botocore at INFO for one call of ours.

    At DEBUG botocore logs each canonical request and signature (enough to rebuild
    the bearer token) and each response body (DescribeCluster's endpoint and CA).
    Only our calls are quieted; other code keeps whatever logging it asked for.
    """
    log = logging.getLogger("botocore")
    level = log.level
    if log.getEffectiveLevel() < logging.INFO:
        log.setLevel(logging.INFO)
    try:
        yield
    finally:
        log.setLevel(level)


def sts_client(region: str) -> BaseClient:
    """A regional STS client that can presign a cluster-bound GetCallerIdentity."""
    with _sts_lock:
        client = _sts_clients.get(region)
        if client is None:
            boto3 = aws.boto3()
            import botocore.session

            # Always the regional endpoint (sts.<region>.<partition suffix>), whatever
            # AWS_STS_REGIONAL_ENDPOINTS says: the regional endpoint is what EKS expects.
            core = botocore.session.get_session()
            core.set_config_variable("sts_regional_endpoints", "regional")
            # Presigning makes no call; bounded all the same, as every client is.
            session = boto3.session.Session(botocore_session=core)
            client = aws.client("sts", session=session, region_name=region)
            client.meta.events.register("provide-client-params.sts.GetCallerIdentity", _move_cluster_id_to_context)
            client.meta.events.register("before-sign.sts.GetCallerIdentity", _add_cluster_id_header)
            _sts_clients[region] = client
        return client


def make_token(cluster_name: str, region: str) -> str:
    """A fresh bearer token for ``cluster_name`` (no network call)."""
    with quiet_botocore():
        url = sts_client(region).generate_presigned_url(
            "get_caller_identity",
            Params={K8S_AWS_ID_HEADER: cluster_name},
            ExpiresIn=URL_EXPIRES_SECONDS,
            HttpMethod="GET",
        )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


class TokenSource:
    """The current token for one cluster, re-minted when 14 minutes old.

    Age is read from ``jobsync.clock`` so the local harness's virtual time
    ages tokens too. The signature itself always uses the real clock.
    """

    def __init__(self, cluster_name: str, region: str) -> None:
        self.cluster_name = cluster_name
        self.region = region
        self._token: str | None = None
        self._minted_at = 0.0
        self._lock = threading.Lock()

    def get(self) -> str:
        with self._lock:
            if self._token is None or clock.now() - self._minted_at >= TOKEN_TTL_SECONDS:
                self._mint()
            assert self._token is not None
            return self._token

    def refresh(self) -> str:
        """Mint a new token now (after the API server answered 401)."""
        with self._lock:
            self._mint()
            assert self._token is not None
            return self._token

    def _mint(self) -> None:
        self._token = make_token(self.cluster_name, self.region)
        self._minted_at = clock.now()

    def __repr__(self) -> str:
        return f"TokenSource(cluster_name={self.cluster_name!r}, region={self.region!r})"


def reset() -> None:
    """Forget the STS clients (tests; a new credential environment)."""
    with _sts_lock:
        _sts_clients.clear()
