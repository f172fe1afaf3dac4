"""Waiting for GPUs, a pod nothing can ever schedule, an image that does not exist: the real state machine.

Each scenario runs through LocalJobsync (the ASL in moto's interpreter, the
real handlers, the emulated API over HTTP, the operator simulator writing
the scheduler's, the Cluster Autoscaler's and the kubelet's events).
"""

from __future__ import annotations

import json

import pytest

from harness.kubeapi import KubeAPI
from harness.local import LocalJobsync
from jobsync.cluster import get_api_client, reset_cache
from jobsync.cluster.jobs import KubeJobs
from jobsync.settings import ClusterSettings
from tests.support.lambdas import QUIET, load_event

DIAGNOSE_AFTER = 120
# Every story in poll mode and in callback mode (the notifier beside the local API): stuck pods show
# only to a poll, so callback mode's Await times out when a verdict could be due, and its Status decides.
MODES = pytest.mark.parametrize("mode", ["poll", "callback"])


def run(
    scenario: str,
    timings: dict[str, float] | None = None,
    env: dict[str, str] | None = None,
    mode: str = "poll",
    **overrides,
):
    execution_input = {**load_event("run-job-input.json"), **overrides}
    env = {**QUIET, "JOBSYNC_COMPLETION_MODE": mode, **(env or {})}
    with LocalJobsync(scenario, timings, env=env) as local:
        result = local.run(execution_input, name=f"test-{scenario}")
        event_lists = [r for r in local.api.requests if r.verb == "list" and r.resource == "events"]
        return result, event_lists


def since_start(result, poll) -> float:
    return poll.at - result.started_at


@MODES
def test_a_job_waiting_for_gpus_the_autoscaler_is_adding_succeeds(mode):
    result, event_lists = run("gpu-scale-up", {"scale_up_s": 2400, "run_s": 1800}, mode=mode)
    assert result.status == "SUCCEEDED"
    assert result.output["reason"] == "PyTorchJobSucceeded"
    assert all(p.phase != "FAILED" for p in result.polls)
    waiting = [p for p in result.polls if p.reason == "WaitingForCapacity"]
    assert waiting and all(p.phase == "PENDING" for p in waiting)
    # Reported from the first diagnosed poll until the node came, 40 minutes after submission, long past the
    # 15 minutes that used to fail the job.
    assert since_start(result, waiting[0]) <= DIAGNOSE_AFTER + 60 + 10
    assert 2400 - 200 <= since_start(result, waiting[-1]) < 2400
    assert any(p.phase == "RUNNING" for p in result.polls)
    # The events were read while the pods were Unschedulable, and only then: one LIST per such poll (in callback
    # mode also per Await, which looks once right after the poll that armed it).
    assert len(event_lists) == len(waiting) * (2 if mode == "callback" else 1)
    assert all(r.query.get("fieldSelector", "").startswith("involvedObject.kind=Pod,") for r in event_lists)


@MODES
def test_the_capacity_wait_is_bounded_by_its_own_grace(mode):
    env = {"JOBSYNC_CAPACITY_GRACE_SECONDS": "1800"}
    result, _ = run("gpu-scale-up", {"scale_up_s": 4 * 3600, "run_s": 600}, env=env, mode=mode)
    assert result.status == "FAILED" and result.error == "JobFailed"
    cause = json.loads(result.cause)
    assert cause["reason"] == "WaitingForCapacity"
    assert "pod triggered scale-up: [{eks-gpu-ng-5ec4a1b2 1->2 (max: 4)}]" in cause["message"]
    assert "(1800s allowed)" in cause["message"]
    ended = since_start(result, result.polls[-1])
    assert DIAGNOSE_AFTER + 1800 <= ended <= DIAGNOSE_AFTER + 60 + 1800 + 130


@MODES
def test_a_pod_no_node_group_can_fit_fails_after_the_short_grace_saying_why(mode):
    result, event_lists = run("never-schedulable", mode=mode)
    assert result.status == "FAILED" and result.error == "JobFailed"
    cause = json.loads(result.cause)
    assert cause["reason"] == "NeverSchedulable"
    assert "no node group or NodePool can fit the pod" in cause["message"]
    assert "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector" in cause["message"]
    assert "(600s allowed)" in cause["message"]
    never = [p for p in result.polls if p.reason == "NeverSchedulable"]
    first, last = since_start(result, never[0]), since_start(result, result.polls[-1])
    assert result.polls[-1].phase == "FAILED"
    assert 600 <= last - first <= 600 + 70  # the short grace, from the first poll that saw it, and one wait
    assert last <= DIAGNOSE_AFTER + 60 + 600 + 70
    assert event_lists
    assert cause["deleted"] is True and result.jobs_left == []  # cleanup onFailure


@MODES
def test_a_tag_that_does_not_exist_fails_within_five_minutes_naming_the_pull_error(mode):
    result, _ = run("bad-image", mode=mode)
    assert result.status == "FAILED" and result.error == "JobFailed"
    cause = json.loads(result.cause)
    assert cause["reason"] in {"ErrImagePull", "ImagePullBackOff"}
    assert "manifest unknown" in cause["message"] or "not found" in cause["message"]
    assert "(120s allowed)" in cause["message"]
    assert since_start(result, result.polls[-1]) <= 300
    assert result.jobs_left == []


@MODES
def test_an_image_error_that_may_heal_keeps_the_stuck_grace(mode):
    result, _ = run("image-pull-backoff", mode=mode)
    cause = json.loads(result.cause)
    assert "toomanyrequests" in cause["message"] and "(900s allowed)" in cause["message"]
    assert since_start(result, result.polls[-1]) >= DIAGNOSE_AFTER + 900


def test_the_emulated_api_serves_a_pods_events_by_field_selector_over_http():
    with KubeAPI() as api:
        api.create_namespace("ml-training")
        for pod, reason in [("train-master-0", "TriggeredScaleUp"), ("other-master-0", "NotTriggerScaleUp")]:
            api.put(
                ("", "v1", "events", "ml-training", f"{pod}.17a"),
                {
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {"name": f"{pod}.17a"},
                    "involvedObject": {"kind": "Pod", "name": pod, "namespace": "ml-training"},
                    "reason": reason,
                    "message": "pod triggered scale-up: [{eks-gpu-ng 1->2 (max: 4)}]",
                },
            )
        reset_cache()
        try:
            jobs = KubeJobs(get_api_client(ClusterSettings(mode="url", url=api.url)))
            events = jobs.list_events("ml-training", "train-master-0")
        finally:
            reset_cache()
        assert [e["reason"] for e in events] == ["TriggeredScaleUp"]
        (request,) = [r for r in api.requests if r.resource == "events"]
        assert (request.verb, request.api_group, request.namespace) == ("list", "", "ml-training")
        assert request.query["fieldSelector"] == "involvedObject.kind=Pod,involvedObject.name=train-master-0"
