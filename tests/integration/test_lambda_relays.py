"""What make sam-local's containers reach the host through, and how their answers become AWS's, without Docker.

``KubeProxy`` (lambda_runtime/relay.py) is kubectl proxy for the functions in containers: plain HTTP in, TLS and
the Lambdas' bearer token out, responses streamed (a watch is an open response). ``service_error`` turns SAM
CLI's answers into the Lambda service's error payloads. Here both run on loopback against the local API.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness.kubeapi import KubeAPI
from harness.local import pytorchjob_crd
from lambda_runtime.relay import KubeProxy, TcpRelay
from lambda_runtime.service import service_error
from tests.support.kube import PYTORCHJOBS

TOKEN = "jobsync-lambda-token"
JOBS = "/apis/kubeflow.org/v1/namespaces/ml-training/pytorchjobs"


@pytest.fixture
def tls_api(tmp_path: Path):
    api = KubeAPI(tls=True)
    api.accepted_tokens = {TOKEN}
    with api:
        api.register_crd(pytorchjob_crd())
        api.create_namespace("ml-training")
        assert api.ca_pem is not None
        (tmp_path / "ca.crt").write_bytes(api.ca_pem)
        yield api, str(tmp_path / "ca.crt")


def job(name: str) -> dict:
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name}, "spec": {}}


def test_kube_proxy_adds_the_token_and_speaks_tls(tls_api) -> None:
    api, ca = tls_api
    api.put((*PYTORCHJOBS, "ml-training", "a"), job("a"))
    proxy = KubeProxy("127.0.0.1", api.url, ca, TOKEN)
    try:
        with urllib.request.urlopen(proxy.url + JOBS, timeout=10) as answer:
            items = json.loads(answer.read())["items"]
        assert [item["metadata"]["name"] for item in items] == ["a"]
        # Whatever the caller sends as Authorization is replaced by the proxy's own token.
        request = urllib.request.Request(proxy.url + JOBS, headers={"Authorization": "Bearer someone-else"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
    finally:
        proxy.close()


def test_kube_proxy_passes_the_api_servers_refusal_on(tls_api) -> None:
    api, ca = tls_api
    proxy = KubeProxy("127.0.0.1", api.url, ca, "not-a-token-it-accepts")
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(proxy.url + JOBS, timeout=10)
        assert refused.value.code == 401
    finally:
        proxy.close()


def test_kube_proxy_streams_a_watch_as_it_happens(tls_api) -> None:
    """The event reaches the caller while the watch is open, not when it ends (watch mode in a container)."""
    api, ca = tls_api
    proxy = KubeProxy("127.0.0.1", api.url, ca, TOKEN)
    try:
        stream = urllib.request.urlopen(proxy.url + JOBS + "?watch=true&timeoutSeconds=30", timeout=30)
        threading.Timer(0.5, lambda: api.put((*PYTORCHJOBS, "ml-training", "b"), job("b"))).start()
        began = time.monotonic()
        event = json.loads(stream.readline())
        assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "b"
        assert time.monotonic() - began < 20  # well before the watch's 30 s end
        stream.close()
    finally:
        proxy.close()


def test_tcp_relay_carries_a_connection_unchanged(tls_api) -> None:
    api, ca = tls_api
    relay = TcpRelay("127.0.0.1", ("127.0.0.1", int(api.url.rsplit(":", 1)[1])))
    try:
        import ssl

        context = ssl.create_default_context(cafile=ca)
        request = urllib.request.Request(
            f"https://127.0.0.1:{relay.port}{JOBS}", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            assert answer.status == 200
    finally:
        relay.close()


# ---------------------------------------------------------------- SAM CLI's answers as the Lambda service's


def test_a_function_error_is_the_runtimes_payload() -> None:
    payload = {"errorType": "InvalidInput", "errorMessage": "cleanup: ...", "requestId": "r", "stackTrace": []}
    assert service_error(payload, "r") is payload


def test_a_result_is_no_error() -> None:
    assert service_error({"phase": "RUNNING", "errorType": "not an error without errorMessage"}, "r") is None
    assert service_error(["a", "list"], "r") is None
    assert service_error("a string the function returned", "r") is None


def test_sams_timeout_text_is_sandbox_timedout() -> None:
    assert service_error("Task timed out after 60.00 seconds", "r-9") == {
        "errorType": "Sandbox.Timedout",
        "errorMessage": "RequestId: r-9 Error: Task timed out after 60.00 seconds",
    }


def test_an_empty_answer_is_runtime_exit_error_with_the_emulators_reason() -> None:
    log = (
        "04 Dec 2026 19:27:03,514 [ERROR] (rapid) Init failed error=Runtime exited with error: signal: killed "
        "InvokeID=\n04 Dec 2026 19:27:03,514 [ERROR] (rapid) Invoke DONE failed: Sandbox.Failure\n"
    )
    assert service_error(None, "r-1", log) == {
        "errorType": "Runtime.ExitError",
        "errorMessage": "RequestId: r-1 Error: Runtime exited with error: signal: killed",
    }
    assert service_error("", "r-2", "")["errorMessage"] == "RequestId: r-2 Error: Runtime exited with error: " + (
        "exited without an answer"
    )
