"""What only a real API server does to a running loop: watch mode across an expired resourceVersion, a job
deleted by hand, its CRD deleted and re-created, finalizers, an aborted execution's cleanup, Strict field
validation and an RBAC denial.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from e2e.controlplane import JOB_NAMESPACE, ControlPlane
from e2e.tests.jobs import wait_for
from e2e.tests.runs import (
    CRD_NAME,
    apply_role,
    custom_path,
    execution_arn,
    get_job,
    job_of,
    jobsync_run,
    pod_annotations,
    pods_of,
    pytorch_input,
    run,
    wait_gone,
)
from harness.local import LocalJobsync
from jobsync.cluster.jobs import KubeJobs
from jobsync.errors import WatchExpired
from jobsync.run import poll
from jobsync.settings import Settings
from tests.integration.test_aborts import status_change
from tests.support.lambdas import invoke

PLURAL = "pytorchjobs"
WATCH = {"JOBSYNC_COMPLETION_MODE": "watch", "JOBSYNC_WATCH_SECONDS": "30"}


def in_background(what: Callable[[], None]) -> threading.Thread:
    """Run ``what`` beside the execution; the test joins it and re-raises what it raised."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            what()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.errors = errors  # type: ignore[attr-defined]
    thread.start()
    return thread


def joined(thread: threading.Thread) -> None:
    thread.join(60)
    errors: list[BaseException] = thread.errors  # type: ignore[attr-defined]
    if errors:
        raise errors[0]


def running(cp: ControlPlane, name: str) -> Callable[[], bool]:
    def check() -> bool:
        job = get_job(cp, PLURAL, name)
        return any(
            c["type"] == "Running" and c["status"] == "True"
            for c in (job or {}).get("status", {}).get("conditions", [])
        )

    return check


# ---------------------------------------------------------------- watch mode


@pytest.fixture
def watching(control_plane: ControlPlane) -> Iterator[LocalJobsync]:
    apply_role(control_plane, "PyTorchJob", watch=True)
    with jobsync_run(control_plane, WATCH) as local:
        yield local
    apply_role(control_plane, "PyTorchJob")


def test_watch_mode_across_an_api_server_restart_expires_and_still_succeeds(
    control_plane: ControlPlane, watching: LocalJobsync, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The restart starts the watch cache at etcd's revision: the job's own (older) resourceVersion is 410.

    What is asserted is behaviour, and spacing in seconds of the run's clock, never how many polls a
    machine of some speed manages: how long the job stays pending, and how long the restart takes, are
    the machine's.

    The Lambdas send no new request to the cluster until the restarted server is ready (the open watch
    is cut, and its Status retried): a server still starting answers 403 until its RBAC caches sync,
    which ends a run with ClusterAccessDenied (docs/reliability.md, known gap), a matter apart from 410.
    """
    watches: list[tuple[str, str, float, float]] = []  # version; "expired", "ended" or "cut"; began; ended
    open_now: list[float] = []  # when each watch open now began
    real_watch = poll._watch

    def spy(*args: Any, **kwargs: Any) -> Any:
        version, began = args[3], watching.clock.now()
        open_now.append(began)
        try:
            changed = real_watch(*args, **kwargs)
        except WatchExpired:
            watches.append((version, "expired", began, watching.clock.now()))
            raise
        except Exception:
            watches.append((version, "cut", began, watching.clock.now()))
            raise
        finally:
            open_now.remove(began)
        watches.append((version, "ended", began, watching.clock.now()))
        return changed

    monkeypatch.setattr(poll, "_watch", spy)
    ready = threading.Event()
    ready.set()
    for method in ("get", "watch", "list_pods", "list_events", "read_log"):
        monkeypatch.setattr(KubeJobs, method, _after(ready, getattr(KubeJobs, method)))
    name = job_of(watching, "watch-410")
    restart: list[float] = []

    def restart_mid_watch() -> None:
        wait_for("the job to run", running(control_plane, name), timeout=60, interval=0.2)
        wait_for("a watch of the running job", lambda: bool(open_now), timeout=60, interval=0.1)
        time.sleep(1)  # the watch is open now (unless news ended it): the restart cuts it
        ready.clear()
        restart.append(watching.clock.now())
        # Compacted too: a watch the restarted server hands to etcd (its cache still initialising) is 410 as well.
        control_plane.compact_etcd()
        control_plane.restart_apiserver()
        restart.append(watching.clock.now())
        ready.set()

    chaos = in_background(restart_mid_watch)
    # The job must outlive the restart (10-30 s on a loaded machine) and one whole watch after it (WatchSeconds,
    # plus the retried Status's backoff): with 60 s, a 23 s restart on a machine at load 12 left no watch that
    # ended without news before the job did. A deadline far off (not the tier's 120 s), so a slow machine
    # cannot end the run at it, and the polls as it nears never hold a shortened watch.
    execution_input = pytorch_input(pod_annotations(run_duration="90s"), timeoutSeconds=300)
    result = run(watching, execution_input, "watch-410", timeout_s=300)
    joined(chaos)
    began = result.polls[0].at if result.polls else 0.0
    for p in result.polls:
        print(f"poll +{p.at - began:6.1f}s held {(p.answered or p.at) - p.at:5.1f}s {p.phase} {p.reason}")
    print("watches:", [(v, how, round(b - began, 1), round(e - b, 1)) for v, how, b, e in watches])
    print("restart:", [round(t - began, 1) for t in restart])
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["reason"] == "PyTorchJobSucceeded"

    # After the restart: the watch from the GET's (old) version is 410, the next starts from now and holds.
    after = [w for w in watches if w[2] >= restart[1]]
    expired = [i for i, w in enumerate(after) if w[0] and w[1] == "expired"]
    assert expired, f"no watch from an old version answered 410 after the restart: {after}"
    assert [w[:2] for w in after[expired[0] + 1 : expired[0] + 2]] == [("", "ended")], after

    # Watch mode's spacing: no Wait between polls (the watch did the waiting), and a poll of the running job
    # that brought no news held its watch the whole WatchSeconds (less under 2 s: the watch's timeout is whole
    # seconds), unless the restart cut it short. Polling instead would answer within a second.
    assert all(p.wait_seconds == 0 for p in result.polls), [(p.phase, p.wait_seconds) for p in result.polls]
    watch_seconds = Settings().watch_seconds  # as the watching fixture's environment sets it
    held = []
    for previous, current in zip(result.polls, result.polls[1:], strict=False):
        assert current.answered is not None
        news = (current.phase, current.reason) != (previous.phase, previous.reason)
        cut = restart[0] <= current.answered and current.at <= restart[1]
        # A restarted server still initialising its cache may expire even a watch from now.
        expired_again = any(not w[0] and w[1] == "expired" and current.at <= w[2] <= current.answered for w in watches)
        if current.phase == "RUNNING" and not (news or cut or expired_again):
            held.append(current.answered - current.at)
    assert held, "no poll of the running job held a watch without news"
    assert all(seconds >= watch_seconds - 2 for seconds in held), (held, watch_seconds)


def _after(ready: threading.Event, method: Callable[..., Any]) -> Callable[..., Any]:
    """``method``, called once ``ready`` is set: no request goes to a server that is still starting."""

    def gated(*args: Any, **kwargs: Any) -> Any:
        assert ready.wait(180), "the API server did not come back"
        return method(*args, **kwargs)

    return gated


def test_a_job_deleted_by_hand_mid_run_ends_as_not_found(
    control_plane: ControlPlane, watching: LocalJobsync, admin_api: client.ApiClient
) -> None:
    name = job_of(watching, "deleted-by-hand")

    def delete_it() -> None:
        wait_for("the job to run", running(control_plane, name), timeout=60, interval=0.2)
        time.sleep(1)
        resp = control_plane.request("DELETE", custom_path(PLURAL, name))
        assert resp.status == 200, resp.body

    chaos = in_background(delete_it)
    result = run(watching, pytorch_input(pod_annotations("run-forever")), "deleted-by-hand")
    joined(chaos)
    assert result.status == "FAILED" and result.error == "JobNotFound", (result.error, result.cause)
    assert name in (result.cause or "")
    assert result.polls[-1].phase == "NOT_FOUND"
    wait_gone(control_plane, admin_api, PLURAL, name)


# ---------------------------------------------------------------- poll mode


@pytest.fixture
def polling(control_plane: ControlPlane) -> Iterator[LocalJobsync]:
    apply_role(control_plane, "PyTorchJob")
    with jobsync_run(control_plane) as local:
        yield local


CRD_PATH = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"


def test_the_crd_unserved_for_a_while_under_a_running_loop_does_not_end_it(
    control_plane: ControlPlane, polling: LocalJobsync
) -> None:
    """While the API server does not serve the resource type it answers the job's GET ``404 page not found``.

    That 404 (plain text) names no object: jobsync takes it for the API catching up (TransientClusterError),
    not for a lost job, and the run goes on when the type is back. (The type is taken away by marking v1 not
    served: a deleted CRD takes its objects with it, see the next test.)
    """
    name = job_of(polling, "crd-gap")
    crd = control_plane.request("GET", CRD_PATH).body
    gap: dict[str, Any] = {}

    def serve_v1(served: bool) -> None:
        body = control_plane.request("GET", CRD_PATH).body
        body["spec"]["versions"][0]["served"] = served
        resp = control_plane.request("PUT", CRD_PATH, body)
        assert resp.status == 200, resp.body

    def unserve_for_a_while() -> None:
        wait_for("the job to run", running(control_plane, name), timeout=60, interval=0.2)
        serve_v1(False)
        wait_for("v1 unserved", lambda: control_plane.request("GET", custom_path(PLURAL, name)).status == 404, 30)
        gone = control_plane.request("GET", custom_path(PLURAL, name))
        gap["answer"] = (gone.status, gone.headers.get("Content-Type"), gone.body)
        time.sleep(6)  # a few polls (1-3 s apart) meet the 404
        serve_v1(True)
        wait_for("the job back", lambda: control_plane.request("GET", custom_path(PLURAL, name)).status == 200, 30)

    chaos = in_background(unserve_for_a_while)
    try:
        result = run(polling, pytorch_input(pod_annotations(run_duration="20s")), "crd-gap", timeout_s=180)
        joined(chaos)
    finally:
        if crd["spec"]["versions"][0]["served"] is not False:
            serve_v1(True)
    assert gap["answer"] == (404, "text/plain; charset=utf-8", "404 page not found\n"), gap
    assert result.status == "SUCCEEDED", result.cause
    lost = [p for p in result.polls if p.phase not in ("PENDING", "RUNNING", "SUCCEEDED")]
    assert not lost, lost  # no poll said NOT_FOUND
    assert polling.sfn
    errors = [c.error for c in polling.sfn.invocations if c.function_name == "jobsync-status" and c.error]
    assert errors and {e.get("errorType") for e in errors} == {"TransientClusterError"}, errors
    assert "answered 404 for the resource, not for PyTorchJob" in errors[0].get("errorMessage", ""), errors[0]


def test_the_crd_deleted_and_recreated_takes_the_job_with_it(
    control_plane: ControlPlane, polling: LocalJobsync, admin_api: client.ApiClient
) -> None:
    """The real API server deletes a CRD's objects before the CRD (its ``customresourcecleanup`` finalizer,
    which a DELETE puts back even when it was taken off): once the type is back, the job is really gone."""
    name = job_of(polling, "crd-deleted")
    crd = control_plane.request("GET", CRD_PATH).body
    seen: dict[str, Any] = {}

    def delete_and_recreate() -> None:
        wait_for("the job to run", running(control_plane, name), timeout=60, interval=0.2)
        patch = {"metadata": {"finalizers": None}}
        assert (
            control_plane.request("PATCH", CRD_PATH, patch, content_type="application/merge-patch+json").status == 200
        )
        deleted = control_plane.request("DELETE", CRD_PATH)
        seen["finalizers"] = deleted.body["metadata"].get("finalizers")
        wait_for("the CRD gone", lambda: control_plane.request("GET", CRD_PATH).status == 404, 30)
        fresh = {k: v for k, v in crd.items() if k != "status"}
        fresh["metadata"] = {"name": CRD_NAME}
        control_plane.apply([fresh])
        wait_for("the type back", lambda: control_plane.request("GET", custom_path(PLURAL)).status == 200, 30)

    chaos = in_background(delete_and_recreate)
    result = run(polling, pytorch_input(pod_annotations("run-forever")), "crd-deleted", timeout_s=120)
    joined(chaos)
    assert seen["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"], seen
    assert result.status == "FAILED" and result.error == "JobNotFound", (result.error, result.cause)
    # The pods outlive their owner for a while: the garbage collector only acts on the type again after its
    # discovery resync (30 s in kube-controller-manager), then removes the pods whose owner is gone.
    began = time.monotonic()
    wait_for(f"the pods of {name} collected", lambda: not pods_of(admin_api, name), timeout=120)
    print(f"pods of a job deleted with its CRD collected after {time.monotonic() - began:.0f}s")


def test_cleanup_of_a_job_with_a_finalizer_waits_for_it_then_the_pods_go(
    control_plane: ControlPlane, polling: LocalJobsync, admin_api: client.ApiClient
) -> None:
    name = job_of(polling, "finalizer")

    def add_a_finalizer() -> None:
        wait_for("the job", lambda: get_job(control_plane, PLURAL, name) is not None, 30, 0.1)
        patch = {"metadata": {"finalizers": ["e2e.jobsync.io/hold"]}}
        resp = control_plane.request(
            "PATCH", custom_path(PLURAL, name), patch, content_type="application/merge-patch+json"
        )
        assert resp.status == 200, resp.body

    helper = in_background(add_a_finalizer)
    result = run(polling, pytorch_input(pod_annotations("fail", run_duration="3s")), "finalizer")
    joined(helper)
    assert result.error == "JobFailed", result.cause
    assert json.loads(result.cause or "{}")["deleted"] is True
    # Deleted, but held by the finalizer: the job is still there, with a deletionTimestamp. (Its pods may or may
    # not be gone yet: both were seen, so nothing is asserted of them until the finalizer is off.)
    job = get_job(control_plane, PLURAL, name)
    assert job is not None and job["metadata"].get("deletionTimestamp"), job and job["metadata"]
    patch = {"metadata": {"finalizers": None}}
    resp = control_plane.request("PATCH", custom_path(PLURAL, name), patch, content_type="application/merge-patch+json")
    assert resp.status == 200, resp.body
    wait_gone(control_plane, admin_api, PLURAL, name)


def test_an_aborted_execution_is_cleaned_up_through_its_status_change_event(
    control_plane: ControlPlane, polling: LocalJobsync, admin_api: client.ApiClient
) -> None:
    assert polling.sfn
    execution = "aborted"
    name = job_of(polling, execution)
    arn = polling.start(pytorch_input(pod_annotations("run-forever")), name=execution)
    wait_for("the job to run", running(control_plane, name), timeout=60, interval=0.2)
    polling.sfn.stop(arn, error="Cancelled", cause="stopped by hand")
    description = polling.sfn.wait(arn)
    assert description["status"] == "ABORTED"
    assert get_job(control_plane, PLURAL, name) is not None  # no Catch ran: the job runs on

    out = invoke("cleanup", status_change(description))
    assert out["deleted"] is True and out["reason"] == "deleted", out
    wait_gone(control_plane, admin_api, PLURAL, name)
    assert invoke("cleanup", status_change(description))["reason"] == "already gone"


def test_strict_field_validation_by_the_real_server_rejects_an_unknown_field(
    control_plane: ControlPlane, polling: LocalJobsync
) -> None:
    body = pytorch_input()
    body["job"]["spec"]["pytorchReplicaSpecs"]["Master"]["replicaz"] = 1
    result = run(polling, body, "unknown-field")
    assert result.status == "FAILED" and result.error == "InvalidInput", (result.error, result.cause)
    message = json.loads(result.cause or "{}")["errorMessage"]
    assert message == (
        'the Kubernetes API rejected the job (400 Bad Request): PyTorchJob in version "v1" cannot be handled as a '
        'PyTorchJob: strict decoding error: unknown field "spec.pytorchReplicaSpecs.Master.replicaz"'
    ), message
    assert get_job(control_plane, PLURAL, job_of(polling, "unknown-field")) is None
    assert control_plane.request("GET", custom_path(PLURAL)).body["items"] == [] or all(
        item["metadata"]["name"] != job_of(polling, "unknown-field")
        for item in control_plane.request("GET", custom_path(PLURAL)).body["items"]
    )


def test_a_role_without_get_is_a_clear_access_denied(control_plane: ControlPlane, polling: LocalJobsync) -> None:
    apply_role(control_plane, "PyTorchJob", without=("pytorchjobs", "get"))
    try:
        result = run(polling, pytorch_input(pod_annotations("run-forever")), "no-get")
    finally:
        apply_role(control_plane, "PyTorchJob")
    assert result.status == "FAILED" and result.error == "ClusterAccessDenied", (result.error, result.cause)
    cause = json.loads(result.cause or "{}")["errorMessage"]
    assert 'User "jobsync-lambda" cannot get resource "pytorchjobs" in API group "kubeflow.org"' in cause, cause
    # The job was created (create is allowed) and is left: cleanup could not read it either.
    name = job_of(polling, "no-get")
    assert get_job(control_plane, PLURAL, name) is not None
    control_plane.request("DELETE", custom_path(PLURAL, name) + "?propagationPolicy=Background")
    print("denied:", cause[:300], execution_arn(polling, "no-get"), JOB_NAMESPACE)
