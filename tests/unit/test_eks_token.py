"""The EKS token (its shape and signature), its reuse on the jobsync clock, the
per-cluster client cache, the settings, and that no secret shows in a repr or
an error message."""

from __future__ import annotations

import base64
import hashlib
import hmac
import urllib.parse
from pathlib import Path

import boto3
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.eks.models import eks_backends

from jobsync.cluster import connection as cluster
from jobsync.cluster import eks_token
from jobsync.cluster.connection import ClusterSettings, get_api_client
from jobsync.errors import ClusterConfigError

REGION = "us-west-2"
ACCESS_KEY = "AKIDJOBSYNCTEST"
SECRET_KEY = "fake-secret-key-for-jobsync-tests"
SESSION_TOKEN = "fake-session-token-for-jobsync-tests"
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBjobsyncNOTAREALCERTIFICATE\n-----END CERTIFICATE-----\n"


@pytest.fixture(autouse=True)
def aws_credentials(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    cluster.reset_cache()
    yield
    cluster.reset_cache()


def decode(token: str) -> str:
    body = token.removeprefix(eks_token.TOKEN_PREFIX)
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


def sigv4_valid(url: str, cluster_name: str, secret: str = SECRET_KEY) -> bool:
    """Recompute the SigV4 query signature as STS does, with the x-k8s-aws-id header STS will be sent."""
    parts = urllib.parse.urlsplit(url)
    params = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    signature = params.pop("X-Amz-Signature")
    quote = lambda s: urllib.parse.quote(s, safe="-_.~")  # noqa: E731
    query = "&".join(f"{quote(k)}={quote(v)}" for k, v in sorted(params.items()))
    header_values = {"host": parts.netloc, eks_token.K8S_AWS_ID_HEADER: cluster_name}
    signed = params["X-Amz-SignedHeaders"].split(";")
    headers = "".join(f"{h}:{header_values[h]}\n" for h in signed)
    canonical = "\n".join(["GET", parts.path or "/", query, headers, ";".join(signed), hashlib.sha256(b"").hexdigest()])
    scope = params["X-Amz-Credential"].split("/", 1)[1]
    date, region, service, _ = scope.split("/")
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    to_sign = "\n".join(["AWS4-HMAC-SHA256", params["X-Amz-Date"], scope, digest])
    key = f"AWS4{secret}".encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.compare_digest(hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest(), signature)


def count_mints(region: str = REGION) -> list[int]:
    """One entry per STS presign for ``region`` (each mint signs once)."""
    seen: list[int] = []
    eks_token.sts_client(region).meta.events.register(
        "before-sign.sts.GetCallerIdentity", lambda **_: seen.append(1), unique_id="jobsync-test-count"
    )
    return seen


# --- the token ---------------------------------------------------------------


def test_token_is_an_unpadded_base64url_presigned_sts_get_caller_identity_url():
    token = eks_token.make_token("training", REGION)

    assert token.startswith("k8s-aws-v1.")
    assert "=" not in token
    body = token.removeprefix("k8s-aws-v1.")
    assert set(body) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    url = urllib.parse.urlsplit(decode(token))
    assert (url.scheme, url.netloc, url.path) == ("https", f"sts.{REGION}.amazonaws.com", "/")
    query = dict(urllib.parse.parse_qsl(url.query))
    assert query["Action"] == "GetCallerIdentity"
    assert query["Version"] == "2011-06-15"
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert query["X-Amz-Credential"].startswith(f"{ACCESS_KEY}/")
    assert query["X-Amz-Credential"].endswith(f"/{REGION}/sts/aws4_request")
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"].split(";")
    assert query["X-Amz-Security-Token"] == SESSION_TOKEN


def test_the_cluster_name_is_signed_so_the_token_is_only_good_for_that_cluster():
    url = decode(eks_token.make_token("training", REGION))

    assert sigv4_valid(url, "training")
    assert not sigv4_valid(url, "another-cluster")
    assert not sigv4_valid(url, "training", secret="some-other-secret")


def test_the_regional_sts_endpoint_is_used_even_when_the_environment_asks_for_the_global_one(monkeypatch):
    monkeypatch.setenv("AWS_STS_REGIONAL_ENDPOINTS", "legacy")
    eks_token.reset()

    url = urllib.parse.urlsplit(decode(eks_token.make_token("training", "us-east-1")))

    assert url.netloc == "sts.us-east-1.amazonaws.com"


@hsettings(max_examples=30, deadline=None)
@given(name=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}", fullmatch=True))
def test_any_eks_cluster_name_gives_a_valid_unpadded_token(name):
    token = eks_token.make_token(name, REGION)

    assert token.startswith("k8s-aws-v1.") and not token.endswith("=")
    assert sigv4_valid(decode(token), name)


# --- reuse on the jobsync clock ----------------------------------------------


def test_token_is_reused_until_14_minutes_old_then_reminted(fake_clock):
    mints = count_mints()
    source = eks_token.TokenSource("training", REGION)

    first = source.get()
    fake_clock.advance(14 * 60 - 1)
    assert source.get() == first
    assert len(mints) == 1

    fake_clock.advance(1)
    source.get()
    assert len(mints) == 2
    source.get()
    assert len(mints) == 2


def test_refresh_mints_now_whatever_the_age(fake_clock):
    mints = count_mints()
    source = eks_token.TokenSource("training", REGION)

    source.get()
    source.refresh()
    source.get()

    assert len(mints) == 2


# --- one client per cluster ---------------------------------------------------


def make_eks_cluster(name: str, endpoint: str = "https://example.invalid", ca_pem: str = CA_PEM) -> None:
    boto3.client("eks", region_name=REGION).create_cluster(
        name=name, roleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/eks", resourcesVpcConfig={"subnetIds": []}
    )
    record = eks_backends[DEFAULT_ACCOUNT_ID][REGION].clusters[name]
    record.endpoint = endpoint
    record.certificate_authority = {"data": base64.b64encode(ca_pem.encode()).decode()}


@mock_aws
def test_one_client_per_cluster_and_the_same_object_for_the_same_cluster():
    make_eks_cluster("a")
    make_eks_cluster("b")
    a = ClusterSettings(cluster_name="a", region=REGION)
    b = ClusterSettings(cluster_name="b", region=REGION)

    client_a = get_api_client(a)

    assert get_api_client(ClusterSettings(cluster_name="a", region=REGION)) is client_a
    assert get_api_client(b) is not client_a
    assert get_api_client(b) is get_api_client(b)


@mock_aws
def test_reset_cache_forgets_clients():
    make_eks_cluster("a")
    settings = ClusterSettings(cluster_name="a", region=REGION)
    before = get_api_client(settings)

    cluster.reset_cache()

    assert get_api_client(settings) is not before


@mock_aws
def test_the_ca_file_lives_as_long_as_the_client():
    make_eks_cluster("a")
    client = get_api_client(ClusterSettings(cluster_name="a", region=REGION))
    ca_file = Path(client.configuration.ssl_ca_cert)

    assert ca_file.read_text() == CA_PEM
    assert client.configuration.verify_ssl
    cluster.reset_cache()
    assert not ca_file.exists()


@mock_aws
def test_an_unknown_cluster_is_a_config_error_naming_it():
    with pytest.raises(ClusterConfigError, match=r"cluster 'missing': no such EKS cluster in us-west-2"):
        get_api_client(ClusterSettings(cluster_name="missing", region=REGION))


@mock_aws
def test_a_cluster_without_a_ca_yet_is_transient():
    from jobsync.errors import TransientClusterError

    make_eks_cluster("creating")
    record = eks_backends[DEFAULT_ACCOUNT_ID][REGION].clusters["creating"]
    record.certificate_authority = {}
    record.status = "CREATING"

    with pytest.raises(TransientClusterError, match="CREATING"):
        get_api_client(ClusterSettings(cluster_name="creating", region=REGION))


def test_no_aws_credentials_is_a_config_error_and_nothing_is_cached(monkeypatch, tmp_path):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)

    with pytest.raises(ClusterConfigError, match="no AWS credentials"):
        get_api_client(ClusterSettings(cluster_name="a", region=REGION))
    assert cluster._clients == {}


# --- settings -------------------------------------------------------------------


def test_settings_default_to_eks_from_the_lambda_environment():
    settings = ClusterSettings.from_env({"JOBSYNC_CLUSTER_NAME": "training", "AWS_REGION": REGION})

    assert (settings.mode, settings.cluster_name, settings.region) == ("eks", "training", REGION)


def test_settings_for_kubeconfig_and_url_modes():
    kube = ClusterSettings.from_env(
        {"JOBSYNC_CLUSTER_MODE": "kubeconfig", "KUBECONFIG": "/k/config", "JOBSYNC_KUBE_CONTEXT": "kind-jobsync"}
    )
    url = ClusterSettings.from_env({"JOBSYNC_CLUSTER_MODE": "URL", "JOBSYNC_KUBE_URL": "http://127.0.0.1:8001"})

    assert (kube.mode, kube.kubeconfig, kube.context) == ("kubeconfig", "/k/config", "kind-jobsync")
    assert (url.mode, url.url) == ("url", "http://127.0.0.1:8001")


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"AWS_REGION": REGION}, "JOBSYNC_CLUSTER_NAME"),
        ({"JOBSYNC_CLUSTER_NAME": "training"}, "AWS_REGION"),
        ({"JOBSYNC_CLUSTER_MODE": "url"}, "JOBSYNC_KUBE_URL"),
        ({"JOBSYNC_CLUSTER_MODE": "ssh"}, "JOBSYNC_CLUSTER_MODE"),
    ],
)
def test_incomplete_settings_say_which_variable_is_missing(env, needle):
    with pytest.raises(ClusterConfigError, match=needle):
        ClusterSettings.from_env(env)


# --- nothing secret in reprs or messages ---------------------------------------


def test_token_source_repr_shows_the_cluster_not_the_token():
    source = eks_token.TokenSource("training", REGION)
    token = source.get()

    text = repr(source) + str(vars(source).keys())
    assert "training" in repr(source)
    assert token not in text and SESSION_TOKEN not in text


def test_settings_repr_hides_the_url():
    settings = ClusterSettings(mode="url", url="http://127.0.0.1:8001")

    assert "127.0.0.1" not in repr(settings)
    assert "127.0.0.1" not in settings.label


@mock_aws
def test_client_repr_names_the_cluster_not_its_endpoint():
    make_eks_cluster("training", endpoint="https://ABCDEF0123.gr7.us-west-2.eks.amazonaws.com")

    client = get_api_client(ClusterSettings(cluster_name="training", region=REGION))

    assert "training" in repr(client)
    assert "ABCDEF0123" not in repr(client) and "k8s-aws-v1" not in repr(client)
