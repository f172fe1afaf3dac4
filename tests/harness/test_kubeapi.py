"""The Kubernetes API emulator, driven by the real ``kubernetes`` client over HTTP."""

from __future__ import annotations

import copy
import json
import threading
import time

import pytest
import urllib3
import yaml
from hypothesis import given
from hypothesis import strategies as st
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from harness.kubeapi import Fault, KubeAPI, Selector, merge_patch
from tests.conftest import shared_path

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "pytorchjobs"
NS = "ml-training"


def job(name: str = "train", **spec) -> dict:
    container = {"name": "pytorch", "image": "pytorch/pytorch:2.3.0"}
    replica = {"replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [container]}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Master": replica, "Worker": copy.deepcopy(replica)}, **spec},
    }


def pod(name: str, labels: dict | None = None, owner_uid: str | None = None) -> dict:
    meta: dict = {"name": name, "labels": labels or {}}
    if owner_uid:
        meta["ownerReferences"] = [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "name": "train",
                "uid": owner_uid,
                "controller": True,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "pytorch", "image": "x"}]},
    }


def make_client(api: KubeAPI, **settings) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = api.url
    for key, value in settings.items():
        setattr(cfg, key, value)
    return client.ApiClient(cfg)


def body_of(err: ApiException) -> dict:
    return json.loads(err.body)


@pytest.fixture
def api():
    server = KubeAPI().start()
    server.create_namespace(NS)
    yield server
    server.stop()


@pytest.fixture
def custom(api):
    with make_client(api) as api_client:
        yield client.CustomObjectsApi(api_client)


@pytest.fixture
def core(api):
    with make_client(api) as api_client:
        yield client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def pytorchjob_crd() -> dict:
    path = shared_path("crds", "kubeflow-training-operator-v1.9.0", "kubeflow.org_pytorchjobs.yaml")
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # parsed once: it is large


@pytest.fixture
def crd_api(api, pytorchjob_crd):
    api.register_crd(pytorchjob_crd)
    return api


def create(custom, body: dict, **kwargs) -> dict:
    return custom.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, body, **kwargs)


# ------------------------------------------------------------------ CRUD


def test_create_returns_the_object_with_server_fields(api, custom):
    before = api.resource_version
    created = create(custom, job())
    meta = created["metadata"]
    assert meta["namespace"] == NS and meta["generation"] == 1
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > before
    assert api.requests[-1].status == 201
    assert api.get((GROUP, VERSION, PLURAL, NS, "train"))["metadata"]["uid"] == meta["uid"]


def test_create_twice_is_409_already_exists(custom):
    create(custom, job())
    with pytest.raises(ApiException) as exc:
        create(custom, job())
    assert exc.value.status == 409
    assert body_of(exc.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pytorchjobs.kubeflow.org "train" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "train", "group": "kubeflow.org", "kind": "pytorchjobs"},
        "code": 409,
    }


def test_core_conflict_names_the_plural_without_group(core):
    core.create_namespaced_pod(NS, pod("p"))
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod(NS, pod("p"))
    assert body_of(exc.value)["message"] == 'pods "p" already exists'
    assert body_of(exc.value)["details"]["group"] == ""


def test_get_missing_is_404_not_found(custom):
    with pytest.raises(ApiException) as exc:
        custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "nope")
    body = body_of(exc.value)
    assert exc.value.status == 404 and body["reason"] == "NotFound"
    assert body["message"] == 'pytorchjobs.kubeflow.org "nope" not found'


def test_missing_namespace_is_404(custom):
    with pytest.raises(ApiException) as exc:
        custom.create_namespaced_custom_object(GROUP, VERSION, "ghost", PLURAL, job())
    assert exc.value.status == 404
    assert body_of(exc.value)["message"] == 'namespaces "ghost" not found'


def test_namespaces_are_resources(core):
    core.create_namespace({"metadata": {"name": "team-a"}})
    assert core.read_namespace("team-a").metadata.name == "team-a"
    assert "team-a" in [n.metadata.name for n in core.list_namespace().items]


def test_status_subresource_changes_only_status(custom):
    create(custom, job())
    patched = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, NS, PLURAL, "train", {"status": {"conditions": []}, "spec": {"nprocPerNode": "4"}}
    )
    assert patched["status"] == {"conditions": []}
    assert "nprocPerNode" not in patched["spec"]
    # A main-resource write keeps the stored status whatever it sends.
    replaced = custom.replace_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train", {**patched, "status": {}})
    assert replaced["status"] == {"conditions": []}


def test_merge_patch_sets_and_removes_fields(custom):
    create(custom, job())
    patched = custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        NS,
        PLURAL,
        "train",
        {"metadata": {"labels": {"team": "ml"}}, "spec": {"runPolicy": {"suspend": True}}},
    )
    assert patched["metadata"]["labels"] == {"team": "ml"}
    assert patched["metadata"]["generation"] == 2
    patched = custom.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train", {"spec": {"runPolicy": None}})
    assert "runPolicy" not in patched["spec"]


def test_json_patch(core):
    core.create_namespaced_pod(NS, pod("p", {"a": "1"}))
    patched = core.patch_namespaced_pod("p", NS, [{"op": "replace", "path": "/metadata/labels/a", "value": "2"}])
    assert patched.metadata.labels == {"a": "2"}


def test_replace_with_stale_resource_version_is_409_conflict(custom):
    created = create(custom, job())
    custom.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train", {"metadata": {"labels": {"x": "y"}}})
    with pytest.raises(ApiException) as exc:
        custom.replace_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train", created)
    assert exc.value.status == 409 and body_of(exc.value)["reason"] == "Conflict"


def test_delete_background_removes_owned_pods(api, custom, core):
    uid = create(custom, job())["metadata"]["uid"]
    core.create_namespaced_pod(NS, pod("train-master-0", owner_uid=uid))
    core.create_namespaced_pod(NS, pod("unrelated"))
    deleted = custom.delete_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "train", propagation_policy="Background"
    )
    # A custom object deleted outright is answered with a success Status naming it, as the real server does.
    assert (deleted["kind"], deleted["status"], deleted["details"]["name"]) == ("Status", "Success", "train")
    assert [p.metadata.name for p in core.list_namespaced_pod(NS).items] == ["unrelated"]
    with pytest.raises(ApiException) as exc:
        custom.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train")
    assert exc.value.status == 404


def test_delete_orphan_keeps_owned_pods(custom, core):
    uid = create(custom, job())["metadata"]["uid"]
    core.create_namespaced_pod(NS, pod("train-master-0", owner_uid=uid))
    custom.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train", body={"propagationPolicy": "Orphan"})
    assert [p.metadata.name for p in core.list_namespaced_pod(NS).items] == ["train-master-0"]


# ------------------------------------------------------------------ selectors


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=a", ["p1", "p2"]),
        ("app==a", ["p1", "p2"]),
        ("app!=a", ["p3", "p4"]),
        ("tier", ["p1", "p3"]),
        ("!tier", ["p2", "p4"]),
        ("app in (a,b)", ["p1", "p2", "p3"]),
        ("app notin (a, b)", ["p4"]),
        ("app=a,tier=gpu", ["p1"]),
        ("app in (a,b),!tier", ["p2"]),
    ],
)
def test_label_selectors(core, selector, expected):
    core.create_namespaced_pod(NS, pod("p1", {"app": "a", "tier": "gpu"}))
    core.create_namespaced_pod(NS, pod("p2", {"app": "a"}))
    core.create_namespaced_pod(NS, pod("p3", {"app": "b", "tier": "cpu"}))
    core.create_namespaced_pod(NS, pod("p4", {}))
    assert [p.metadata.name for p in core.list_namespaced_pod(NS, label_selector=selector).items] == expected


def test_list_shape_and_field_selector(custom):
    create(custom, job("a"))
    create(custom, job("b"))
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, field_selector="metadata.name=b")
    assert listed["kind"] == "PyTorchJobList" and listed["apiVersion"] == "kubeflow.org/v1"
    assert listed["metadata"]["resourceVersion"]
    assert [i["metadata"]["name"] for i in listed["items"]] == ["b"]


# ------------------------------------------------------------------ logs


def test_pod_log_tail_and_missing_pod(api, core):
    core.create_namespaced_pod(NS, pod("p"))
    api.set_pod_log(NS, "p", "pytorch", "one\ntwo\nthree\n")
    assert core.read_namespaced_pod_log("p", NS, container="pytorch", tail_lines=2) == "two\nthree\n"
    assert core.read_namespaced_pod_log("p", NS, limit_bytes=3) == "one"
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod_log("ghost", NS)
    assert exc.value.status == 404 and body_of(exc.value)["message"] == 'pods "ghost" not found'


# ------------------------------------------------------------------ watch


def test_watch_sends_current_state_then_changes_and_ends_at_timeout(api, custom):
    create(custom, job("train"))
    create(custom, job("other"))

    def later():
        time.sleep(0.2)
        api.update_status(
            (GROUP, VERSION, PLURAL, NS, "train"), {"conditions": [{"type": "Created", "status": "True"}]}
        )
        api.update_status((GROUP, VERSION, PLURAL, NS, "other"), {"conditions": []})
        api.delete((GROUP, VERSION, PLURAL, NS, "train"))

    threading.Thread(target=later, daemon=True).start()
    started = time.monotonic()
    events = [
        (e["type"], e["object"]["metadata"]["name"])
        for e in watch.Watch().stream(
            custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            NS,
            PLURAL,
            field_selector="metadata.name=train",
            timeout_seconds=1,
        )
    ]
    elapsed = time.monotonic() - started
    assert events == [("ADDED", "train"), ("MODIFIED", "train"), ("DELETED", "train")]
    assert 0.9 <= elapsed < 3


def test_watch_from_resource_version_replays_later_events(api, core):
    core.create_namespaced_pod(NS, pod("a", {"app": "x"}))
    rv = core.list_namespaced_pod(NS).metadata.resource_version
    core.create_namespaced_pod(NS, pod("b", {"app": "x"}))
    core.create_namespaced_pod(NS, pod("c", {"app": "y"}))
    stream = watch.Watch().stream(
        core.list_namespaced_pod, NS, label_selector="app=x", resource_version=rv, timeout_seconds=1
    )
    assert [(e["type"], e["object"].metadata.name) for e in stream] == [("ADDED", "b")]


def test_watch_time_cap(api, custom):
    api.watch_real_cap_seconds = 0.2
    started = time.monotonic()
    list(watch.Watch().stream(custom.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, timeout_seconds=30))
    assert time.monotonic() - started < 2


# ------------------------------------------------------------------ faults


@pytest.mark.parametrize(
    ("fault", "status", "reason"),
    [
        (Fault.internal_error(), 500, "InternalError"),
        (Fault.unavailable(), 503, "ServiceUnavailable"),
        (Fault.unauthorized(), 401, "Unauthorized"),
        (Fault.forbidden(name="train"), 403, "Forbidden"),
    ],
)
def test_status_faults(api, custom, fault, status, reason):
    api.inject(fault, method="GET", path_contains="/pytorchjobs/")
    with pytest.raises(ApiException) as exc:
        custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train")
    assert exc.value.status == status and body_of(exc.value)["reason"] == reason
    # Consumed: the next request reaches the store.
    with pytest.raises(ApiException) as exc:
        custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train")
    assert exc.value.status == 404


def test_forbidden_message_is_the_rbac_one(api, custom):
    api.inject(Fault.forbidden(name="train"))
    with pytest.raises(ApiException) as exc:
        custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train")
    assert body_of(exc.value)["message"] == (
        'pytorchjobs.kubeflow.org "train" is forbidden: User "arn:aws:sts::123456789012:assumed-role/jobsync/fn" '
        'cannot get resource "pytorchjobs" in API group "kubeflow.org" in the namespace "ml-training"'
    )


def test_429_carries_retry_after(api, custom):
    api.inject(Fault.too_many_requests(retry_after=7), method="POST")
    with pytest.raises(ApiException) as exc:
        create(custom, job())
    assert exc.value.status == 429 and exc.value.headers["Retry-After"] == "7"
    assert body_of(exc.value)["reason"] == "TooManyRequests"


def test_faults_match_in_order_and_count(api, custom):
    api.inject(Fault.unavailable(), method="POST", times=2)
    api.inject(Fault.internal_error(), path_contains="pytorchjobs")
    codes = []
    for _ in range(4):
        try:
            custom.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)
            codes.append(200)
        except ApiException as err:
            codes.append(err.status)
    assert codes == [500, 200, 200, 200]
    assert [r.status for r in api.requests[-4:]] == [500, 200, 200, 200]


def test_drop_closes_the_connection(api):
    api.inject(Fault.drop())
    with make_client(api, retries=False) as api_client, pytest.raises(urllib3.exceptions.ProtocolError):
        client.CustomObjectsApi(api_client).list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)
    assert api.requests[-1].status is None


def test_delay_causes_a_read_timeout(api):
    # The client takes an int or a (connect, read) tuple; a bare float is silently ignored.
    api.inject(Fault.delay(1.0))
    with make_client(api, retries=False) as api_client, pytest.raises(urllib3.exceptions.ReadTimeoutError):
        client.CustomObjectsApi(api_client).list_namespaced_custom_object(
            GROUP, VERSION, NS, PLURAL, _request_timeout=(1, 0.2)
        )


# ------------------------------------------------------------------ TLS and auth


def test_tls_with_the_ca_verified_by_the_client(tmp_path):
    with KubeAPI(tls=True) as server:
        server.create_namespace(NS)
        assert server.url.startswith("https://127.0.0.1:")
        ca = tmp_path / "ca.crt"
        ca.write_bytes(server.ca_pem)
        with make_client(server, ssl_ca_cert=str(ca)) as api_client:
            assert client.CoreV1Api(api_client).list_namespaced_pod(NS).items == []
        # Without the CA the client refuses the server: the system CAs do not trust it.
        untrusted = make_client(server, retries=False)
        with untrusted, pytest.raises(ApiException, match="CERTIFICATE_VERIFY_FAILED"):
            client.CoreV1Api(untrusted).list_namespaced_pod(NS)


@pytest.mark.parametrize("accepted", [{"good-token"}, lambda token: token == "good-token"])
def test_bearer_token_auth(api, accepted):
    api.accepted_tokens = accepted
    for token, expected in [("good-token", 200), ("bad-token", 401), (None, 401)]:
        settings = {"api_key": {"authorization": token}, "api_key_prefix": {"authorization": "Bearer"}} if token else {}
        with make_client(api, **settings) as api_client:
            core = client.CoreV1Api(api_client)
            if expected == 200:
                core.list_namespaced_pod(NS)
            else:
                with pytest.raises(ApiException) as exc:
                    core.list_namespaced_pod(NS)
                assert exc.value.status == 401 and body_of(exc.value)["reason"] == "Unauthorized"


# ------------------------------------------------------------------ validation


@pytest.mark.shared
def test_strict_unknown_field_is_400_with_the_apiserver_message(crd_api, custom):
    body = job()
    body["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["imagee"] = "typo"
    body["spec"]["bogus"] = 1
    with pytest.raises(ApiException) as exc:
        create(custom, body, field_validation="Strict")
    err = body_of(exc.value)
    assert exc.value.status == 400 and err["reason"] == "BadRequest"
    assert err["message"] == (
        'PyTorchJob in version "v1" cannot be handled as a PyTorchJob: strict decoding error: '
        'unknown field "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].imagee", '
        'unknown field "spec.bogus"'
    )


@pytest.mark.shared
def test_unknown_fields_are_pruned_without_strict_and_warned_with_warn(crd_api, custom):
    body = job()
    body["spec"]["bogus"] = 1
    assert "bogus" not in create(custom, body)["spec"]
    # The Warning header is only visible through the *_with_http_info variant.
    body["metadata"]["name"] = "warned"
    _, status, headers = custom.create_namespaced_custom_object_with_http_info(
        GROUP, VERSION, NS, PLURAL, body, field_validation="Warn"
    )
    assert status == 201 and headers["Warning"] == '299 - "unknown field \\"spec.bogus\\""'


@pytest.mark.shared
def test_valid_sample_manifest_is_accepted_strictly(crd_api, custom):
    sample = yaml.safe_load(
        shared_path("samples", "kubeflow-training-operator-v1.9.0", "pytorch_simple.yaml").read_text()
    )
    sample["metadata"]["namespace"] = NS
    created = create(custom, sample, field_validation="Strict")
    assert created["spec"] == sample["spec"]


@pytest.mark.shared
def test_type_mismatch_is_422_naming_the_field(crd_api, custom):
    with pytest.raises(ApiException) as exc:
        create(custom, job(runPolicy={"backoffLimit": "three"}))
    err = body_of(exc.value)
    assert exc.value.status == 422 and err["reason"] == "Invalid"
    assert err["message"] == (
        'PyTorchJob.kubeflow.org "train" is invalid: spec.runPolicy.backoffLimit: Invalid value: "string": '
        'spec.runPolicy.backoffLimit in body must be of type integer: "string"'
    )
    assert err["details"]["causes"][0]["field"] == "spec.runPolicy.backoffLimit"


@pytest.mark.shared
def test_required_field_is_422(crd_api, custom):
    body = job()
    del body["spec"]["pytorchReplicaSpecs"]
    with pytest.raises(ApiException) as exc:
        create(custom, body)
    assert exc.value.status == 422
    assert body_of(exc.value)["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.pytorchReplicaSpecs"}
    ]


def test_invalid_name_is_422(custom):
    with pytest.raises(ApiException) as exc:
        create(custom, job("Bad_Name"))
    err = body_of(exc.value)
    assert exc.value.status == 422 and err["reason"] == "Invalid"
    assert err["message"].startswith(
        'PyTorchJob.kubeflow.org "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
        "a lowercase RFC 1123 subdomain must consist of"
    )
    assert err["details"]["causes"][0]["field"] == "metadata.name"


def test_unregistered_group_accepts_anything_unless_strict_resources(api, custom):
    assert create(custom, {**job(), "anything": 1})["anything"] == 1
    api.strict_resources = True
    with pytest.raises(ApiException) as exc:
        custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train")
    # As kube-apiserver answers a path nothing serves: text, no Status (e2e/tests/test_emulator_contract.py).
    assert (exc.value.status, exc.value.body) == (404, "404 page not found\n")


# ------------------------------------------------------------------ request log


def test_request_log_and_rbac_verbs(api, custom, core):
    api.clear_requests()
    create(custom, job())
    custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train")
    custom.patch_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "train", {"status": {}})
    list(watch.Watch().stream(custom.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, timeout_seconds=0))
    core.create_namespaced_pod(NS, pod("p"))
    core.read_namespaced_pod_log("p", NS)
    custom.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train")
    first = api.requests[0]
    assert (first.method, first.path, first.status, first.verb) == (
        "POST",
        f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/{PLURAL}",
        201,
        "create",
    )
    assert first.body["metadata"]["name"] == "train"
    assert api.verbs_used() == {
        ("create", "kubeflow.org", "pytorchjobs"),
        ("get", "kubeflow.org", "pytorchjobs"),
        ("patch", "kubeflow.org", "pytorchjobs/status"),
        ("watch", "kubeflow.org", "pytorchjobs"),
        ("create", "", "pods"),
        ("get", "", "pods/log"),
        ("delete", "kubeflow.org", "pytorchjobs"),
    }
    api.clear_requests()
    assert api.requests == []


# ------------------------------------------------------------------ properties of the pure parts

label_keys = st.sampled_from(["app", "tier", "team"])
label_values = st.sampled_from(["a", "b", "gpu"])
labels_st = st.dictionaries(label_keys, label_values)
json_leaf = st.one_of(st.integers(), st.text(max_size=3), st.booleans())
json_doc = st.recursive(json_leaf, lambda inner: st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=8)


@given(labels_st, label_keys, st.lists(label_values, min_size=1, max_size=3))
def test_selector_operators_agree_with_their_definitions(labels, key, values):
    value = values[0]
    assert Selector(f"{key}={value}").matches(labels) == (labels.get(key) == value)
    assert Selector(f"{key}!={value}").matches(labels) == (labels.get(key) != value)
    assert Selector(key).matches(labels) == (key in labels)
    assert Selector(f"!{key}").matches(labels) == (key not in labels)
    assert Selector(f"{key} in ({','.join(values)})").matches(labels) == (labels.get(key) in values)
    assert Selector(f"{key} notin ({','.join(values)})").matches(labels) == (labels.get(key) not in values)
    both = Selector(f"{key}={value},{key} in ({','.join(values)})").matches(labels)
    assert both == (labels.get(key) == value)


@given(json_doc, json_doc)
def test_merge_patch_is_idempotent_and_a_document_patches_to_itself(target, patch):
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once
    if isinstance(target, dict):
        assert merge_patch(target, target) == target
