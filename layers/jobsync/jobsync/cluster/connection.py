"""Access to the Kubernetes API: one ``ApiClient`` per cluster per container.

Modes (``JOBSYNC_CLUSTER_MODE``):

- ``eks`` (default, the Lambda case): endpoint and CA from
  ``eks:DescribeCluster`` (once per container), an IAM bearer token from
  :mod:`jobsync.cluster.eks_token`. Needs ``JOBSYNC_CLUSTER_NAME`` and ``AWS_REGION``.
- ``kubeconfig`` (local runs against kind/minikube, or EKS through an
  ``aws eks get-token`` exec entry): ``KUBECONFIG`` (the client's default when
  unset) and optionally ``JOBSYNC_KUBE_CONTEXT``. The mode to prefer for
  anything that should exercise TLS and auth, the local harness included.
- ``incluster`` (the notifier, running in the cluster): the pod's service
  account, as ``kubectl`` inside a pod would use it.
- ``url``: ``JOBSYNC_KUBE_URL`` (e.g. ``http://127.0.0.1:8001``), no auth, no
  CA. Only for a local emulator or ``kubectl proxy``.

Callers get a ``kubernetes.client.ApiClient`` and use the generated APIs on it
(``CustomObjectsApi(get_api_client())``); call ``get_api_client()`` per
invocation (a dict lookup) rather than holding the client at module scope.
The client itself, on every call:

- re-mints the EKS token before a request once it is 14 minutes old
  (``Configuration.refresh_api_key_hook``); on a 401 it gets new credentials
  and retries the request exactly once; a second 401 raises
  ``ClusterAuthError``;
- uses ``(connect_timeout, read_timeout)`` when the call passes no
  ``_request_timeout``;
- turns transport failures (DNS, refused, TLS, timeouts) into
  ``TransientClusterError`` and forgets itself, so the next
  ``get_api_client()`` describes the cluster again (it may have been recreated
  under the same name). Other HTTP errors stay ``ApiException``.

Retries: the state machine owns retries (with backoff), so urllib3 retries only
what is safe and quick: up to two failed connects, and one read failure on
reads (GET, HEAD; never POST/PATCH, nor DELETE, whose lost answer the
cleanup must hear of: ``KubeJobs.delete``), which covers a pooled connection
that died while the container was frozen. Redirects are not followed, so the token
is never sent to another host. Worst case for one GET is about
3 x connect_timeout + 2 x read_timeout: give the Lambdas 60 s or more.

Nothing secret leaves this module: the token, the CA and the endpoint are in no
repr, exception message or log line. That takes quieting three libraries:
urllib3's loggers go to ERROR (it names hosts in its retry WARNINGs) and
``kubernetes.client.rest`` to INFO (bodies at DEBUG), process-wide, when the
first client is built; botocore is held at INFO only around our own two calls
(DescribeCluster, the presign), whose DEBUG lines would hold the endpoint, the
CA and the token's signature.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
import os
import tempfile
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.config import load_incluster_config, load_kube_config
from kubernetes.config.config_exception import ConfigException

from jobsync import aws
from jobsync.cluster import eks_token
from jobsync.cluster.errors import unauthorized, unreachable
from jobsync.errors import ClusterConfigError, JobsyncError, TransientClusterError
from jobsync.settings import ClusterSettings

if TYPE_CHECKING:
    from botocore.client import BaseClient

logger = logging.getLogger(__name__)


# DescribeCluster failures worth retrying later (anything 5xx is, too).
_RETRYABLE_AWS_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ServiceUnavailableException",
        "ServerException",
        "InternalFailure",
    }
)


def _error(cls: type[JobsyncError], label: str, message: str) -> JobsyncError:
    # Messages name the cluster, never its endpoint, CA or token.
    return cls(f"cluster {label!r}: {message}")


class _ClusterApiClient(k8s.ApiClient):
    """An ApiClient with default timeouts, one re-auth on 401, and endpoint-free transport errors."""

    def __init__(
        self,
        configuration: k8s.Configuration,
        *,
        label: str,
        timeout: tuple[float, float],
        reauth: Callable[[], None] | None,
        on_unreachable: Callable[[], None],
    ) -> None:
        super().__init__(configuration)
        self._label = label
        self._timeout = timeout
        self._reauth = reauth
        self._on_unreachable = on_unreachable

    def call_api(self, *args: Any, **kwargs: Any) -> Any:
        # Every generated API method ends here, so this covers them all.
        if kwargs.get("_request_timeout") is None:
            kwargs["_request_timeout"] = self._timeout
        try:
            return self._call_once(*args, **kwargs)
        except ApiException as exc:
            if exc.status != 401:
                raise
            if self._reauth is None:
                raise unauthorized(self._label, after_refresh=False) from None
        logger.warning("API server answered 401; retrying once with new credentials", extra={"cluster": self._label})
        self._reauth()
        try:
            return self._call_once(*args, **kwargs)
        except ApiException as exc:
            if exc.status != 401:
                raise
            raise unauthorized(self._label, after_refresh=True) from None

    def _call_once(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().call_api(*args, **kwargs)
        except urllib3.exceptions.HTTPError as exc:
            self._on_unreachable()
            raise unreachable(exc, self._label) from None

    def __repr__(self) -> str:
        return f"<ApiClient for {self._label}>"


@dataclass
class _Entry:
    client: _ClusterApiClient
    remove_ca_file: Callable[[], Any] = lambda: None


_clients: dict[ClusterSettings, _Entry] = {}
_eks_clients: dict[str, BaseClient] = {}
_lock = threading.RLock()


def get_api_client(settings: ClusterSettings | None = None) -> k8s.ApiClient:
    """The container's ApiClient for ``settings`` (``ClusterSettings.from_env()`` by default)."""
    settings = settings or ClusterSettings.from_env()
    with _lock:
        entry = _clients.get(settings)
        if entry is None:
            entry = _clients[settings] = _build(settings)
            logger.info("Kubernetes API client ready", extra={"cluster": settings.label, "mode": settings.mode})
        return entry.client


def check_reachable(settings: ClusterSettings, timeout: float = 3.0) -> None:
    """Fail at once, saying so, when the cluster's API server cannot be reached at all.

    For a person at a terminal (``jobsync wait``, ``jobsync logs``, ``make demo KUBECONFIG_FILE=``):
    a kubeconfig that points at a cluster that is down would otherwise be retried, silently, for
    minutes, as a run retries a look. One ``GET /version`` with short timeouts; any HTTP answer
    (even 401 or 403) means the server is there, and what it refuses is the next call's to report.
    Raises ClusterConfigError naming the kubeconfig and its context, never the endpoint.
    """
    client = get_api_client(settings)  # a kubeconfig that cannot be loaded raises here, saying why
    try:
        k8s.VersionApi(client).get_code(_request_timeout=(timeout, timeout))
    except ApiException:
        return
    except (TransientClusterError, *_TRANSPORT) as exc:
        failure = str(exc).rsplit("(", 1)[-1].rstrip(")") if isinstance(exc, JobsyncError) else type(exc).__name__
        which = f"is {settings.kubeconfig} its kubeconfig?" if settings.kubeconfig else "is this its kubeconfig?"
        raise _error(
            ClusterConfigError,
            settings.label,
            f"the API server does not answer ({failure}, {timeout:g}s a try): is the cluster running, and {which}",
        ) from None


_TRANSPORT = (urllib3.exceptions.HTTPError, OSError)


def reset_cache() -> None:
    """Forget every client, endpoint and token (tests; the harness between runs)."""
    with _lock:
        for entry in _clients.values():
            _dispose(entry)
        _clients.clear()
        _eks_clients.clear()
    eks_token.reset()


# Methods urllib3 may send again after a read failure (a connect failure never reached the server).
READ_RETRIED_METHODS = frozenset({"GET", "HEAD"})


def _build(settings: ClusterSettings) -> _Entry:
    _quiet_transport_logs()
    cfg = k8s.Configuration()
    cfg.retries = urllib3.Retry(
        total=2,
        connect=2,
        read=1,
        status=0,
        other=0,
        redirect=False,
        backoff_factor=0.2,
        allowed_methods=READ_RETRIED_METHODS,
    )
    reauth: Callable[[], None] | None = None
    ca_file: str | None = None

    if settings.mode == "eks":
        endpoint, ca_pem = _describe(settings)
        source = eks_token.TokenSource(settings.cluster_name or "", settings.region or "")
        cfg.api_key = {"authorization": _sign(settings, source.get)}
        cfg.api_key_prefix = {"authorization": "Bearer"}

        def renew_when_old(c: k8s.Configuration) -> None:
            # The client calls this before every request; the source re-mints at 14 minutes.
            c.api_key["authorization"] = _sign(settings, source.get)

        cfg.refresh_api_key_hook = renew_when_old
        cfg.host = endpoint
        cfg.ssl_ca_cert = ca_file = _write_ca(ca_pem)

        def reauth() -> None:
            cfg.api_key["authorization"] = _sign(settings, source.refresh)

    elif settings.mode == "kubeconfig":

        def reauth() -> None:
            # Reading the kubeconfig again re-runs its exec plugin (e.g. aws eks get-token).
            try:
                load_kube_config(settings.kubeconfig, settings.context, client_configuration=cfg, persist_config=False)
            except (ConfigException, OSError) as exc:
                raise _error(ClusterConfigError, settings.label, f"cannot load the kubeconfig: {exc}") from None

        reauth()
    elif settings.mode == "incluster":

        def reauth() -> None:
            # The pod's service-account token is rotated; the loader re-reads the file when it is due.
            try:
                load_incluster_config(client_configuration=cfg, try_refresh_token=True)
            except (ConfigException, OSError) as exc:
                raise _error(ClusterConfigError, settings.label, f"not running in a pod: {exc}") from None

        reauth()
    else:
        cfg.host = (settings.url or "").rstrip("/")

    def forget() -> None:
        with _lock:
            if _clients.get(settings) is entry:
                del _clients[settings]

    timeout = (settings.connect_timeout, settings.read_timeout)
    client = _ClusterApiClient(cfg, label=settings.label, timeout=timeout, reauth=reauth, on_unreachable=forget)
    entry = _Entry(client=client)
    if ca_file:
        # The CA file lives exactly as long as the client, even one forgotten after a transport error.
        entry.remove_ca_file = weakref.finalize(client, _remove, ca_file)
    return entry


def _eks(region: str) -> BaseClient:
    with _lock:
        client = _eks_clients.get(region)
        if client is None:
            session = aws.boto3().session.Session()
            client = _eks_clients[region] = aws.client("eks", session=session, region_name=region)
        return client


def _describe(settings: ClusterSettings) -> tuple[str, str]:
    """Endpoint and PEM CA of an EKS cluster, or an error that says what to do about it."""
    name, region = settings.cluster_name or "", settings.region or ""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    try:
        with eks_token.quiet_botocore():  # its DEBUG log has the response: endpoint and CA
            cluster = _eks(region).describe_cluster(name=name)["cluster"]
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if code in _RETRYABLE_AWS_CODES or status >= 500:
            raise _error(TransientClusterError, name, f"eks:DescribeCluster failed ({code or status}); retry") from None
        if code == "ResourceNotFoundException":
            raise _error(ClusterConfigError, name, f"no such EKS cluster in {region}") from None
        raise _error(ClusterConfigError, name, f"eks:DescribeCluster failed ({code or status})") from None
    except NoCredentialsError:
        raise _error(ClusterConfigError, name, "no AWS credentials to call eks:DescribeCluster") from None
    except BotoCoreError as exc:
        raise _error(TransientClusterError, name, f"eks:DescribeCluster failed ({type(exc).__name__})") from None

    endpoint = cluster.get("endpoint")
    ca_data = (cluster.get("certificateAuthority") or {}).get("data")
    if not endpoint or not ca_data:
        status = cluster.get("status", "unknown")
        raise _error(TransientClusterError, name, f"no endpoint or CA yet (cluster status {status})")
    try:
        ca_pem = base64.b64decode(ca_data, validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        raise _error(ClusterConfigError, name, "DescribeCluster returned a CA that is not base64 PEM") from None
    return endpoint, ca_pem


def _sign(settings: ClusterSettings, fetch: Callable[[], str]) -> str:
    from botocore.exceptions import BotoCoreError, NoCredentialsError

    try:
        return fetch()
    except NoCredentialsError:
        raise _error(ClusterConfigError, settings.label, "no AWS credentials to sign an EKS token") from None
    except BotoCoreError as exc:
        raise _error(ClusterConfigError, settings.label, f"cannot sign an EKS token ({type(exc).__name__})") from None


def _write_ca(ca_pem: str) -> str:
    # kubernetes 35's Configuration takes the CA only as a path (ssl_ca_cert; there is
    # no ca_cert_data), and urllib3 reads it on every new connection: the file lives
    # as long as the client (in Lambda, under /tmp).
    fd, path = tempfile.mkstemp(prefix="jobsync-ca-", suffix=".pem")
    with os.fdopen(fd, "w") as f:
        f.write(ca_pem)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _dispose(entry: _Entry) -> None:
    with contextlib.suppress(Exception):
        entry.client.close()
        entry.client.rest_client.pool_manager.clear()
    entry.remove_ca_file()


def _quiet_transport_logs() -> None:
    # urllib3 names the host in WARNINGs (retries, full pools) and the kubernetes client
    # logs bodies at DEBUG. The child loggers are set because every Configuration()
    # resets the "urllib3" logger itself to WARNING. urllib3 logs nothing above WARNING.
    for name in ("connectionpool", "connection", "poolmanager", "response", "util.retry"):
        logging.getLogger(f"urllib3.{name}").setLevel(logging.ERROR)
    logging.getLogger("kubernetes.client.rest").setLevel(logging.INFO)
