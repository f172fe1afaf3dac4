"""Cluster access end to end: moto's EKS describes a cluster whose endpoint is a
small HTTPS API server started here, and the real ``kubernetes`` client reaches
it over TLS verified against the CA DescribeCluster returned.

The server is deliberately tiny and local to this file (one PyTorchJob, bearer
tokens required, scripted 401s and stalls); the full emulator lives in
harness/kubeapi/.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import logging
import ssl
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
import yaml
from botocore.exceptions import ClientError
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes.client import CustomObjectsApi
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.eks.models import eks_backends

from jobsync.cluster import connection as cluster
from jobsync.cluster import eks_token
from jobsync.cluster.connection import ClusterSettings, get_api_client
from jobsync.errors import ClusterAuthError, TransientClusterError

REGION = "us-west-2"
NAME = "training"
JOB_PATH = "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/x"
SESSION_TOKEN = "fake-session-token-for-jobsync-tests"


# --- a CA, a server certificate, and a tiny HTTPS API server -------------------


class Pki:
    """A CA and a certificate it signs for 127.0.0.1, in PEM."""

    def __init__(self) -> None:
        now = dt.datetime.now(dt.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jobsync test CA")])
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
                ),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        self.ca_pem = ca.public_bytes(serialization.Encoding.PEM)
        self.cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        self.key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


@pytest.fixture(scope="module")
def pki() -> Pki:
    return Pki()


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}  # fmt: skip


class ApiServer:
    """Answers GET JOB_PATH with a PyTorchJob when the bearer token looks like an EKS token.

    ``plan`` scripts the next requests ("401", "stall"); ``always_401`` refuses everything.
    ``requests`` records (path, Authorization header) of every request that reached a handler.
    """

    def __init__(self, pki: Pki | None, tmp_path: Any, require_token: bool = True) -> None:
        self.requests: list[tuple[str, str]] = []
        self.plan: list[str] = []
        self.always_401 = False
        self.stall_seconds = 2.0
        self.require_token = require_token
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                auth = self.headers.get("Authorization", "")
                server.requests.append((self.path, auth))
                action = server.plan.pop(0) if server.plan else ""
                if action == "stall":
                    time.sleep(server.stall_seconds)
                if action == "401" or server.always_401:
                    return self._send(401, _status(401, "Unauthorized", "Unauthorized"))
                if server.require_token and not auth.startswith("Bearer k8s-aws-v1."):
                    return self._send(401, _status(401, "Unauthorized", "Unauthorized"))
                if self.path.split("?")[0] != JOB_PATH:
                    return self._send(404, _status(404, "NotFound", "not found"))
                job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                       "metadata": {"name": "x", "namespace": "ns"}, "status": {}}  # fmt: skip
                return self._send(200, job)

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.tls = pki is not None
        if pki is not None:
            cert, key = tmp_path / "server.crt", tmp_path / "server.key"
            cert.write_bytes(pki.cert_pem)
            key.write_bytes(pki.key_pem)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
            self._httpd.socket = ctx.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def tokens(self) -> list[str]:
        return [auth.removeprefix("Bearer ") for _, auth in self.requests]

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def server(pki, tmp_path):
    srv = ApiServer(pki, tmp_path)
    yield srv
    srv.stop()


# --- moto's EKS pointing at the server -----------------------------------------


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDJOBSYNCTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-key-for-jobsync-tests")
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    monkeypatch.setenv("AWS_REGION", REGION)
    with mock_aws():
        cluster.reset_cache()
        yield
        cluster.reset_cache()


def make_eks_cluster(name: str, endpoint: str, ca_pem: bytes) -> ClusterSettings:
    boto3.client("eks", region_name=REGION).create_cluster(
        name=name, roleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/eks", resourcesVpcConfig={"subnetIds": []}
    )
    record = eks_backends[DEFAULT_ACCOUNT_ID][REGION].clusters[name]
    record.endpoint = endpoint
    record.certificate_authority = {"data": base64.b64encode(ca_pem).decode()}
    return ClusterSettings(cluster_name=name, region=REGION)


@pytest.fixture
def eks(aws, server, pki) -> ClusterSettings:
    return make_eks_cluster(NAME, server.url, pki.ca_pem)


def count_describes() -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    cluster._eks(REGION).meta.events.register("before-call.eks.DescribeCluster", lambda **kw: calls.append(kw))
    return calls


def count_mints() -> list[int]:
    mints: list[int] = []
    eks_token.sts_client(REGION).meta.events.register("before-sign.sts.GetCallerIdentity", lambda **_: mints.append(1))
    return mints


def get_job(settings: ClusterSettings | None = None) -> dict[str, Any]:
    api = CustomObjectsApi(get_api_client(settings))
    return api.get_namespaced_custom_object("kubeflow.org", "v1", "ns", "pytorchjobs", "x")


def decoded(token: str) -> str:
    body = token.removeprefix("k8s-aws-v1.")
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


# --- EKS mode -------------------------------------------------------------------


def test_reads_a_job_over_https_verified_against_the_clusters_ca(eks, server):
    job = get_job(eks)

    assert job["metadata"] == {"name": "x", "namespace": "ns"}
    [(path, auth)] = server.requests
    assert path == JOB_PATH
    assert auth.startswith("Bearer k8s-aws-v1.")
    url = decoded(auth.removeprefix("Bearer "))
    assert url.startswith(f"https://sts.{REGION}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15&")
    assert "X-Amz-SignedHeaders=host%3Bx-k8s-aws-id" in url


def test_describes_the_cluster_once_per_container(eks, server):
    describes = count_describes()

    clients = {id(get_api_client(eks)) for _ in range(5)}
    for _ in range(5):
        get_job(eks)

    assert len(describes) == 1
    assert len(clients) == 1
    assert len(server.requests) == 5


def test_environment_settings_reach_the_same_cluster(eks, server, monkeypatch):
    monkeypatch.setenv("JOBSYNC_CLUSTER_NAME", NAME)
    monkeypatch.delenv("JOBSYNC_CLUSTER_MODE", raising=False)

    assert get_job()["metadata"]["name"] == "x"
    assert get_api_client() is get_api_client(eks)


def test_an_endpoint_the_ca_does_not_vouch_for_is_refused(aws, server):
    other_ca = Pki().ca_pem
    settings = make_eks_cluster("impostor", server.url, other_ca)

    with pytest.raises(TransientClusterError, match=r"cluster 'impostor': Kubernetes API unreachable \(SSLError\)"):
        get_job(settings)
    assert server.requests == []  # no request, so no token, went to the impostor


def test_throttled_describe_is_retryable_and_caches_nothing(eks, server):
    describes = count_describes()

    def throttle_once(**_: Any) -> None:
        if len(describes) == 1:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"},
                               "ResponseMetadata": {"HTTPStatusCode": 400}}, "DescribeCluster")  # fmt: skip

    cluster._eks(REGION).meta.events.register("before-call.eks.DescribeCluster", throttle_once)

    with pytest.raises(TransientClusterError, match=r"cluster 'training': .*ThrottlingException") as caught:
        get_api_client(eks)
    assert caught.value.__cause__ is None

    assert get_job(eks)["metadata"]["name"] == "x"
    assert len(describes) == 2


def test_a_401_remints_the_token_and_retries_once(eks, server):
    mints = count_mints()
    server.plan = ["401"]

    assert get_job(eks)["metadata"]["name"] == "x"

    assert len(server.requests) == 2
    assert len(mints) == 2  # the first token, and one more after the 401


def test_a_second_401_is_a_clear_error_after_exactly_one_retry(eks, server):
    mints = count_mints()
    server.always_401 = True

    with pytest.raises(ClusterAuthError) as caught:
        get_job(eks)

    message = str(caught.value)
    assert "cluster 'training'" in message and "401" in message and "access entry" in message
    assert len(server.requests) == 2
    assert len(mints) == 2
    assert all(token not in message for token in server.tokens)


def test_the_token_is_reminted_once_14_minutes_old(eks, server, fake_clock):
    mints = count_mints()

    get_job(eks)
    fake_clock.advance(10 * 60)
    get_job(eks)
    assert len(mints) == 1

    fake_clock.advance(4 * 60)
    get_job(eks)
    assert len(mints) == 2
    assert len(server.requests) == 3


def test_a_stalled_api_server_times_out_and_the_client_is_rebuilt(aws, server, pki):
    make_eks_cluster("slow", server.url, pki.ca_pem)
    settings = ClusterSettings(cluster_name="slow", region=REGION, connect_timeout=2, read_timeout=0.5)
    describes = count_describes()
    server.plan = ["stall", "stall"]
    first = get_api_client(settings)

    started = time.monotonic()
    with pytest.raises(TransientClusterError, match=r"cluster 'slow': Kubernetes API unreachable \(ReadTimeoutError\)"):
        get_job(settings)  # no _request_timeout given: the client's default applies

    assert time.monotonic() - started < server.stall_seconds
    assert len(server.requests) == 2  # a GET is read-retried once, no more
    assert get_api_client(settings) is not first
    assert get_job(settings)["metadata"]["name"] == "x"
    assert len(describes) == 2


def test_nothing_secret_reaches_logs_or_errors(eks, server, pki, caplog, monkeypatch):
    # Powertools' logger, when a handler made one, stops propagation at "jobsync".
    monkeypatch.setattr(logging.getLogger("jobsync"), "propagate", True)
    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []

    server.plan = ["401"]
    get_job(eks)
    server.plan = ["stall", "stall"]
    slow = ClusterSettings(cluster_name=NAME, region=REGION, read_timeout=0.3)
    for settings, always_401 in ((slow, False), (eks, True)):
        server.always_401 = always_401
        try:
            get_job(settings)
        except Exception as exc:
            errors.append(exc)

    assert [type(e) for e in errors] == [TransientClusterError, ClusterAuthError]
    assert "401" in caplog.text  # the capture works: the re-auth warning is there
    ca_body = pki.ca_pem.decode().splitlines()[1]
    signatures = [parse_qs(urlsplit(decoded(t)).query)["X-Amz-Signature"][0] for t in set(server.tokens)]
    ca_data = base64.b64encode(pki.ca_pem).decode()[:60]  # as DescribeCluster returns it
    secrets = [*set(server.tokens), *signatures, SESSION_TOKEN, ca_body, ca_data, "127.0.0.1"]
    texts = [caplog.text] + ["".join(traceback.format_exception(e)) for e in errors] + [repr(get_api_client(eks))]
    for secret in secrets:
        for text in texts:
            assert secret not in text


# --- kubeconfig and url modes ---------------------------------------------------


def write_kubeconfig(path: Any, server: ApiServer, ca_pem: bytes, token: str) -> Any:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": server.url,
                                                  "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": "test", "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "current-context": "test",
    }  # fmt: skip
    path.write_text(yaml.safe_dump(config))
    return path


def test_kubeconfig_mode_reaches_the_same_api(server, pki, tmp_path, monkeypatch):
    cluster.reset_cache()
    kubeconfig = write_kubeconfig(tmp_path / "config", server, pki.ca_pem, "k8s-aws-v1.from-kubeconfig")
    monkeypatch.setenv("JOBSYNC_CLUSTER_MODE", "kubeconfig")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("JOBSYNC_KUBE_CONTEXT", "test")
    server.plan = ["401"]  # re-reading the kubeconfig counts as new credentials

    try:
        assert get_job()["metadata"]["name"] == "x"
    finally:
        cluster.reset_cache()
    assert server.tokens == ["k8s-aws-v1.from-kubeconfig"] * 2


def test_kubeconfig_mode_with_a_missing_file_is_a_config_error(tmp_path):
    from jobsync.errors import ClusterConfigError

    settings = ClusterSettings(mode="kubeconfig", kubeconfig=str(tmp_path / "absent"), context="test")
    with pytest.raises(ClusterConfigError, match="kubeconfig context test"):
        get_api_client(settings)


def test_url_mode_talks_plain_http_without_credentials(tmp_path):
    plain = ApiServer(None, tmp_path, require_token=False)
    settings = ClusterSettings(mode="url", url=plain.url)
    try:
        assert get_job(settings)["metadata"]["name"] == "x"
        plain.always_401 = True
        with pytest.raises(ClusterAuthError, match="local API"):
            get_job(settings)
    finally:
        plain.stop()
        cluster.reset_cache()
    assert plain.tokens == ["", ""]  # no Authorization header; a 401 is not retried without credentials
