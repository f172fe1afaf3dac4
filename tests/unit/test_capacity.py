"""Telling capacity on its way from a pod that can never be scheduled, and an image that can never be pulled.

The event strings are the components' own: the Cluster Autoscaler's
TriggeredScaleUp / NotTriggerScaleUp (core/scaleup, processors/status),
Karpenter's Nominated and FailedScheduling (pkg/controllers/provisioning),
the scheduler's FailedScheduling and the kubelet's pull errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jobsync import clock
from jobsync.core import stuck
from jobsync.core.stuck import Grace
from jobsync.run.inputs import LoopState
from jobsync.settings import Settings
from tests.cfn import load_template
from tests.support.cluster import RecordingCluster

T0 = clock.parse("2025-01-01T00:00:00Z") or 0.0
POD = "train-master-0"
INSUFFICIENT_GPU = (
    "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. "
    "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
)
AFFINITY = (
    "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)
TAINT = (
    "0/1 nodes are available: 1 node(s) had untolerated taint {CriticalAddonsOnly: }. "
    "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
)


def event(reason: str, message: str, at: float = T0, component: str = "cluster-autoscaler", uid: str = "") -> dict:
    stamp = clock.isoformat(at)
    return {
        "metadata": {"name": f"{POD}.{reason}", "namespace": "ml-training"},
        "involvedObject": {"kind": "Pod", "name": POD, "namespace": "ml-training", "uid": uid},
        "reason": reason,
        "message": message,
        "source": {"component": component},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


CAPACITY_COMING = [
    ("TriggeredScaleUp", "pod triggered scale-up: [{eks-gpu-ng 1->2 (max: 4)}]"),
    ("TriggeredScaleUp", "pod triggered scale-up: [{eks-p5-ng 0->1 (max: 2)} {eks-p4d-ng 0->1 (max: 2)}]"),
    ("Nominated", "Pod should schedule on: nodeclaim/default-abc12"),
    ("Nominated", "Pod should schedule on: node/ip-10-0-1-23.eu-west-2.compute.internal"),
    # The group that fits is full, or backing off after an EC2 capacity error: capacity frees up.
    ("NotTriggerScaleUp", "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector, "
     "1 max node group size reached"),
    ("NotTriggerScaleUp", "pod didn't trigger scale-up: 2 max node group size reached"),
    ("NotTriggerScaleUp", "pod didn't trigger scale-up: 1 in backoff after failed scale-up"),
    ("NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max cluster cpu limit reached"),
    ("FailedScaleUp", "Node scale up in zones us-east-1a associated with this pod failed: "
     "Instance type not available. Pod is at risk of not being scheduled."),
    ("FailedScheduling", 'Failed to schedule pod, incompatible with nodepool "system", daemonset overhead='
     '{"cpu":"821m","memory":"1350Mi","pods":"10"}, incompatible requirements, label "nvidia.com/gpu" does not '
     'have known values; all available instance types exceed limits for nodepool "gpu"'),
]  # fmt: skip

NEVER_SCHEDULABLE = [
    ("NotTriggerScaleUp", "pod didn't trigger scale-up: 3 node(s) didn't match Pod's node affinity/selector"),
    ("NotTriggerScaleUp", "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector, "
     "1 Insufficient nvidia.com/gpu"),
    ("NotTriggerScaleUp", "pod didn't trigger scale-up: 1 node(s) had untolerated taint(s), 1 Insufficient memory"),
    ("NotTriggerScaleUp", "pod didn't trigger scale-up (it wouldn't fit if a new node is added)"),
    ("FailedScheduling", 'Failed to schedule pod, incompatible with nodepool "gpu-pool", daemonset overhead='
     '{"cpu":"210m","memory":"240Mi","pods":"5"}, no instance type satisfied resources {"cpu":"1210m",'
     '"memory":"4336Mi","nvidia.com/gpu":"16","pods":"6"} and requirements karpenter.k8s.aws/instance-family '
     "In [g5 p3 p4], karpenter.sh/capacity-type In [on-demand spot]"),
    ("FailedScheduling", 'Failed to schedule pod, incompatible with nodepool "teama-spot", daemonset overhead='
     '{"cpu":"150m","pods":"2"}, incompatible requirements, key capacity_type, capacity_type In [on-demand] not '
     "in capacity_type In [spot]; incompatible with nodepool \"default\", did not tolerate "
     "workload-type=ci-runner:NoSchedule"),
    ("FailedScheduling", 'Could not schedule pod, incompatible with provisioner "default", no instance type '
     'satisfied resources {"aws.amazon.com/neuroncore":"1","cpu":"800m"} and requirements '
     "karpenter.k8s.aws/instance-family In [inf1]"),
]  # fmt: skip


@pytest.mark.parametrize(("reason", "message"), CAPACITY_COMING)
def test_the_autoscaler_bringing_or_freeing_capacity_is_waiting_for_capacity(reason, message):
    verdict = stuck.unschedulable(POD, INSUFFICIENT_GPU, [event(reason, message)])
    assert verdict.reason == "WaitingForCapacity" and verdict.grace == Grace.CAPACITY
    assert reason in verdict.message  # what the autoscaler said is reported
    assert message[:60] in verdict.message


@pytest.mark.parametrize(("reason", "message"), NEVER_SCHEDULABLE)
def test_no_node_group_or_nodepool_that_can_ever_fit_is_never_schedulable(reason, message):
    verdict = stuck.unschedulable(POD, AFFINITY, [event(reason, message)])
    assert verdict.reason == "NeverSchedulable" and verdict.grace == Grace.UNSCHEDULABLE
    assert verdict.message.startswith("no node group or NodePool can fit the pod: " + reason)
    assert len(verdict.message) <= 300


@pytest.mark.parametrize(
    ("scheduler", "reason", "grace"),
    [
        (INSUFFICIENT_GPU, "WaitingForCapacity", Grace.CAPACITY),  # the nodes are full: may free up
        ("0/4 nodes are available: 4 Too many pods.", "WaitingForCapacity", Grace.CAPACITY),
        (AFFINITY, "Unschedulable", Grace.UNSCHEDULABLE),  # no shortage named: only a person can fix it
        (TAINT, "Unschedulable", Grace.UNSCHEDULABLE),
    ],
)
def test_without_an_autoscaler_a_named_shortage_waits_for_capacity_and_anything_else_does_not(scheduler, reason, grace):
    scheduler_only = [event("FailedScheduling", scheduler, component="default-scheduler")]
    verdict = stuck.unschedulable(POD, scheduler, scheduler_only)
    assert (verdict.reason, verdict.grace) == (reason, grace)
    assert scheduler in verdict.message or verdict.message.endswith("…")


def test_the_latest_autoscaler_event_decides():
    refused = event("NotTriggerScaleUp", NEVER_SCHEDULABLE[0][1], T0)
    scaled = event("TriggeredScaleUp", CAPACITY_COMING[0][1], T0 + 60)
    assert stuck.unschedulable(POD, AFFINITY, stuck.pod_events([scaled, refused], {})).reason == "WaitingForCapacity"
    refused_later = {**refused, "lastTimestamp": clock.isoformat(T0 + 120)}
    assert stuck.unschedulable(POD, AFFINITY, stuck.pod_events([scaled, refused_later], {})).reason == (
        "NeverSchedulable"
    )


def test_the_events_of_an_earlier_pod_of_the_same_name_are_not_read():
    pod = {"metadata": {"name": POD, "uid": "uid-now"}}
    old = event("NotTriggerScaleUp", NEVER_SCHEDULABLE[0][1], T0 + 300, uid="uid-before")
    own = event("TriggeredScaleUp", CAPACITY_COMING[0][1], T0, uid="uid-now")
    assert [e["reason"] for e in stuck.pod_events([old, own], pod)] == ["TriggeredScaleUp"]


def test_an_event_time_falls_back_from_series_to_creation():
    assert stuck.event_time({"series": {"lastObservedTime": "2025-01-01T00:10:00.000000Z"}}) == T0 + 600
    assert stuck.event_time({"eventTime": "2025-01-01T00:01:00.123456Z"}) == pytest.approx(T0 + 60, abs=1)
    assert stuck.event_time({"metadata": {"creationTimestamp": "2025-01-01T00:02:00Z"}}) == T0 + 120
    assert stuck.event_time({}) == 0.0


IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/train:v1.2"
IMAGE_ERRORS = [
    ("ErrImagePull", f'rpc error: code = NotFound desc = failed to pull and unpack image "{IMAGE}": failed to '
     f'resolve reference "{IMAGE}": {IMAGE}: not found', True),
    ("ErrImagePull", "Error response from daemon: manifest for apache/storm:2.3.0 not found: manifest unknown: "
     "manifest unknown", True),
    ("ImagePullBackOff", 'Back-off pulling image "apache/storm:2.3.0": ErrImagePull: Error response from daemon: '
     "manifest for apache/storm:2.3.0 not found: manifest unknown: manifest unknown", True),
    ("ErrImagePull", f'failed to pull and unpack image "{IMAGE}": failed to resolve reference "{IMAGE}": '
     f"pull access denied, repository does not exist or may require authorization: server message: "
     "insufficient_scope: authorization failed", True),
    ("ErrImagePull", f'failed to pull and unpack image "{IMAGE}": failed to resolve reference "{IMAGE}": '
     "unexpected status from HEAD request: 401 Unauthorized", True),
    ("InvalidImageName", 'Failed to apply default image tag "Train:latest": couldn\'t parse image name', True),
    # Errors a retry may heal: a registry's rate limit, a timeout, no answer from the registry.
    ("ErrImagePull", 'failed to pull and unpack image "docker.io/library/python:3.11": failed to copy: '
     "httpReadSeeker: failed open: unexpected status code https://registry-1.docker.io/v2/library/python/"
     "manifests/3.11: 429 Too Many Requests - Server message: toomanyrequests: You have reached your pull "
     "rate limit", False),
    ("ErrImagePull", f'failed to pull and unpack image "{IMAGE}": failed to do request: Head "https://'
     '123456789012.dkr.ecr.us-east-1.amazonaws.com/v2/train/manifests/v1.2": dial tcp 52.94.0.1:443: i/o '
     "timeout", False),
    ("ImagePullBackOff", f'Back-off pulling image "{IMAGE}"', False),
]  # fmt: skip


@pytest.mark.parametrize(("reason", "message", "permanent"), IMAGE_ERRORS)
def test_an_image_error_that_no_retry_heals_has_the_short_grace(reason, message, permanent):
    assert stuck.image_error_is_permanent(reason, message) is permanent
    verdict = stuck.image_error({"pod": POD, "reason": reason, "message": message})
    assert verdict.grace == (Grace.IMAGE_ERROR if permanent else Grace.STUCK)
    assert verdict.reason == reason and len(verdict.message) <= 300
    assert verdict.message[:50] == message[:50] and verdict.message[-50:] == message[-50:]  # what, and why


def test_a_bare_back_off_learns_its_cause_from_the_kubelets_events():
    assert stuck.names_no_cause(f'Back-off pulling image "{IMAGE}"') and stuck.names_no_cause("")
    assert not stuck.names_no_cause(IMAGE_ERRORS[2][1])
    failed = event("Failed", f'Failed to pull image "{IMAGE}": {IMAGE_ERRORS[0][1]}', component="kubelet")
    noise = event("Failed", "Error: ImagePullBackOff", component="kubelet")
    finding = {"pod": POD, "reason": "ImagePullBackOff", "message": f'Back-off pulling image "{IMAGE}"'}
    verdict = stuck.image_error(finding, [failed, noise])
    assert verdict.grace == Grace.IMAGE_ERROR and "not found" in verdict.message
    assert verdict.message.startswith("ImagePullBackOff: Failed to pull image") and len(verdict.message) <= 300
    assert stuck.image_error(finding, [noise]).grace == Grace.STUCK


def test_a_pull_error_cut_short_in_the_findings_is_judged_on_the_pods_whole_message():
    long_ref = "123456789012.dkr.ecr.us-east-1.amazonaws.com/research/very-long-team-name/train:" + "a" * 64
    message = (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{long_ref}": failed to resolve '
        f'reference "{long_ref}": {long_ref}: not found'
    )
    waiting = {"waiting": {"reason": "ErrImagePull", "message": message}}
    full = {**pod(), "status": {**pod()["status"], "containerStatuses": [{"name": "pytorch", "state": waiting}]}}
    finding = {"pod": POD, "container": "pytorch", "reason": "ErrImagePull", "message": message[:299] + "…"}
    assert not stuck.image_error_is_permanent("ErrImagePull", finding["message"])
    judged = stuck.judge(finding, [full], state(), T0 + 130, RecordingCluster(expect=set()), SETTINGS)
    assert judged.stuck.grace == Grace.IMAGE_ERROR
    assert judged.stuck.message.endswith(": not found") and len(judged.stuck.message) <= 300


@pytest.mark.parametrize(
    ("grace", "field", "default"),
    [
        (Grace.CAPACITY, "capacity_grace_seconds", 6 * 3600),
        (Grace.UNSCHEDULABLE, "unschedulable_grace_seconds", 600),
        (Grace.IMAGE_ERROR, "image_error_grace_seconds", 120),
        (Grace.STUCK, "stuck_grace_seconds", 900),
    ],
)
def test_each_grace_is_its_own_setting(grace, field, default):
    assert stuck.grace_seconds(grace, Settings.from_env({})) == default
    variable = Settings.variable(field)
    assert stuck.grace_seconds(grace, Settings.from_env({variable: "42"})) == 42


# --------------------------------------------------------------------------- judge: requests and timers

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:run-1"


def state(stuck_since: float | None = None, reason: str = "PyTorchJobCreated") -> LoopState:
    return LoopState.model_validate(
        {
            "job": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": "t"},
            "execution": EXECUTION,
            "submittedAt": clock.isoformat(T0),
            "deadline": clock.isoformat(T0 + 86400),
            "phase": "PENDING",
            "reason": reason,
            "phaseSince": clock.isoformat(T0),
            "stuckSince": clock.isoformat(stuck_since) if stuck_since is not None else None,
        }
    )


def pod(started: float | None = T0 + 5) -> dict:
    status = {"startTime": clock.isoformat(started)} if started is not None else {}
    return {"metadata": {"name": POD, "uid": ""}, "status": status}


UNSCHEDULABLE = {"pod": POD, "reason": "Unschedulable", "message": INSUFFICIENT_GPU}
SETTINGS = Settings.from_env({})


def test_an_unschedulable_pod_costs_one_list_of_its_events():
    cluster = RecordingCluster(pod_events=[event("TriggeredScaleUp", CAPACITY_COMING[0][1])])
    judged = stuck.judge(UNSCHEDULABLE, [pod(None)], state(), T0 + 200, cluster, SETTINGS)
    assert cluster.calls == [("list_events", POD)]
    assert judged.stuck.reason == "WaitingForCapacity" and judged.since == T0 + 200
    assert judged.grace_seconds == 6 * 3600 and not judged.expired(T0 + 200 + 6 * 3600 - 1)
    assert judged.expired(T0 + 200 + 6 * 3600)


def test_an_image_error_that_says_its_cause_reads_no_events_and_counts_from_the_pods_start():
    cluster = RecordingCluster(expect=set())
    finding = {"pod": POD, "reason": "ErrImagePull", "message": IMAGE_ERRORS[1][1]}
    judged = stuck.judge(finding, [pod(T0 + 5)], state(), T0 + 130, cluster, SETTINGS)
    assert judged.stuck.grace == Grace.IMAGE_ERROR and judged.grace_seconds == 120
    assert judged.since == T0 + 5 and judged.expired(T0 + 130)  # pulling since the pod started, 125 s ago


def test_the_pods_start_counts_no_earlier_than_the_submission():
    finding = {"pod": POD, "reason": "InvalidImageName", "message": "couldn't parse image name"}
    judged = stuck.judge(finding, [pod(T0 - 3600)], state(), T0 + 130, RecordingCluster(expect=set()), SETTINGS)
    assert judged.since == T0


def test_a_healing_image_error_keeps_the_stuck_grace_and_its_first_sighting():
    cluster = RecordingCluster(expect=set())
    finding = {"pod": POD, "reason": "ErrImagePull", "message": IMAGE_ERRORS[6][1]}
    judged = stuck.judge(finding, [pod()], state(T0 + 130, "ImagePullBackOff"), T0 + 400, cluster, SETTINGS)
    assert judged.stuck.grace == Grace.STUCK and judged.since == T0 + 130 and judged.grace_seconds == 900


def test_a_bare_back_off_reads_the_events_only_once_they_could_shorten_the_wait():
    failed = event("Failed", f'Failed to pull image "{IMAGE}": {IMAGE_ERRORS[0][1]}', component="kubelet")
    finding = {"pod": POD, "reason": "ImagePullBackOff", "message": f'Back-off pulling image "{IMAGE}"'}
    early = RecordingCluster(pod_events=[failed], expect=set())
    assert stuck.judge(finding, [pod(T0 + 5)], state(), T0 + 100, early, SETTINGS).stuck.grace == Grace.STUCK
    late = RecordingCluster(pod_events=[failed])
    judged = stuck.judge(finding, [pod(T0 + 5)], state(), T0 + 130, late, SETTINGS)
    assert late.calls == [("list_events", POD)]
    assert judged.stuck.grace == Grace.IMAGE_ERROR and judged.expired(T0 + 130)


def test_a_stuck_pod_ends_when_its_grace_does_or_when_its_events_are_first_read():
    finding = {"pod": POD, "reason": "ImagePullBackOff", "message": f'Back-off pulling image "{IMAGE}"'}
    undecided = stuck.judge(finding, [pod(T0 + 5)], state(), T0 + 100, RecordingCluster(expect=set()), SETTINGS)
    # The events are read from 120 s of pulling on (since the pod's start), long before the 900 s grace ends.
    assert undecided.grace_seconds == 900 and undecided.ends_at() == T0 + 5 + 120
    unschedulable = stuck.judge(UNSCHEDULABLE, [pod(None)], state(), T0 + 200, RecordingCluster(), SETTINGS)
    assert unschedulable.ends_at() == T0 + 200 + 6 * 3600  # no shortage named by an autoscaler: capacity


@pytest.mark.parametrize(
    ("before", "scheduler", "events", "restarts"),
    [
        # Capacity that was coming is no excuse once no node group can fit the pod: the short grace from now.
        ("WaitingForCapacity", AFFINITY, [event("NotTriggerScaleUp", NEVER_SCHEDULABLE[0][1])], True),
        # And a scale-up after a "never" gets the capacity grace from now.
        ("NeverSchedulable", INSUFFICIENT_GPU, [event("TriggeredScaleUp", CAPACITY_COMING[0][1])], True),
        ("WaitingForCapacity", INSUFFICIENT_GPU, [event("TriggeredScaleUp", CAPACITY_COMING[0][1])], False),
        ("Unschedulable", AFFINITY, [event("NotTriggerScaleUp", NEVER_SCHEDULABLE[0][1])], False),
    ],
)
def test_the_timer_starts_again_when_the_kind_of_stuck_changes(before, scheduler, events, restarts):
    finding = {"pod": POD, "reason": "Unschedulable", "message": scheduler}
    cluster = RecordingCluster(pod_events=events)
    judged = stuck.judge(finding, [pod(None)], state(T0 + 130, before), T0 + 5000, cluster, SETTINGS)
    assert judged.since == (T0 + 5000 if restarts else T0 + 130)


def test_flipping_between_pull_errors_keeps_the_timer():
    finding = {"pod": POD, "reason": "ErrImagePull", "message": IMAGE_ERRORS[6][1]}
    judged = stuck.judge(finding, [pod()], state(T0 + 130, "ImagePullBackOff"), T0 + 200, RecordingCluster(), SETTINGS)
    assert judged.since == T0 + 130


# --------------------------------------------------------------------------- the template and the docs

GRACE_PARAMETERS = {
    "CapacityGraceSeconds": ("JOBSYNC_CAPACITY_GRACE_SECONDS", "capacity_grace_seconds", 21600),
    "UnschedulableGraceSeconds": ("JOBSYNC_UNSCHEDULABLE_GRACE_SECONDS", "unschedulable_grace_seconds", 600),
    "ImageErrorGraceSeconds": ("JOBSYNC_IMAGE_ERROR_GRACE_SECONDS", "image_error_grace_seconds", 120),
    "StuckGraceSeconds": ("JOBSYNC_STUCK_GRACE_SECONDS", "stuck_grace_seconds", 900),
}


@pytest.mark.parametrize("parameter", sorted(GRACE_PARAMETERS))
def test_each_grace_is_a_template_parameter_feeding_its_setting_and_documented(parameter):
    variable, field, default = GRACE_PARAMETERS[parameter]
    template = load_template()
    assert template["Parameters"][parameter]["Default"] == default
    assert template["Globals"]["Function"]["Environment"]["Variables"][variable] == {"Ref": parameter}
    assert Settings.variable(field) == variable
    settings = Settings.from_env({variable: str(template["Parameters"][parameter]["Default"])})
    assert getattr(settings, field) == default
    table = (Path(__file__).resolve().parents[2] / "docs" / "deployment.md").read_text()
    assert f"| `{parameter}` | `{default}` |" in table
