"""A step-driven stand-in for the Kubeflow training-operator v1.9, for PyTorchJobs in a KubeAPI.

Each job follows a named scenario: a timeline of stages (Created, Running,
Succeeded, ...) at offsets in seconds from when the simulator first saw it.
``step()`` applies every stage whose time has come, in order, so a virtual
clock that jumps hours ahead still produces the same condition sequence and
watch events a real operator would. Condition handling copies the operator's
pkg/util/status.go; pods look like what the kubelet reports.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.kubeapi import KubeAPI, rfc3339

Obj = dict[str, Any]

GROUP, VERSION, PLURAL, KIND = "kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"
SCENARIO_ANNOTATION = "jobsync.local/scenario"
TIMINGS_ANNOTATION = "jobsync.local/timings"  # JSON object, e.g. {"run_s": 30}
# What the leading replica's container writes to /dev/termination-log: the pod's
# state.terminated.message once it ends, kept to its last 4096 bytes as the kubelet does
# (tail.ReadAtMost), unless TERMINATION_UNCAPPED_ANNOTATION is "true" (to test jobsync's own bound).
TERMINATION_MESSAGE_ANNOTATION = "jobsync.local/termination-message"
TERMINATION_UNCAPPED_ANNOTATION = "jobsync.local/termination-message-uncapped"
KUBELET_MESSAGE_BYTES = 4096
CONTAINER = "pytorch"
LABEL_PREFIX = "training.kubeflow.org"

DEFAULT_TIMINGS: dict[str, dict[str, float]] = {
    "success": {"pending_s": 60, "run_s": 1800},
    "failure": {"pending_s": 60, "run_s": 600},
    "restarting": {"pending_s": 60, "restart_at": 600, "restart_s": 60, "run_s": 1800},
    "image-pull-backoff": {"backoff_s": 20},
    "unschedulable": {},
    # Unschedulable for GPUs while the Cluster Autoscaler adds a node (TriggeredScaleUp), then runs.
    "gpu-scale-up": {"scale_up_s": 2400, "run_s": 1800},
    # Unschedulable, and the autoscaler says no node group can ever fit the pod (NotTriggerScaleUp).
    "never-schedulable": {},
    # The image's tag does not exist: ErrImagePull "manifest unknown" and the kubelet's Failed events.
    "bad-image": {"backoff_s": 20},
    "operator-down": {},
    "suspended": {},
}
SCENARIOS = frozenset(DEFAULT_TIMINGS)

OOM_TRACEBACK = """\
Traceback (most recent call last):
  File "/opt/pytorch-mnist/mnist.py", line 171, in <module>
    main()
  File "/opt/pytorch-mnist/mnist.py", line 163, in main
    train(args, model, device, train_loader, optimizer, epoch, writer)
  File "/opt/pytorch-mnist/mnist.py", line 47, in train
    loss.backward()
  File "/usr/local/lib/python3.10/site-packages/torch/_tensor.py", line 522, in backward
    torch.autograd.backward(
RuntimeError: CUDA error: out of memory
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
"""
UNSCHEDULABLE_MESSAGE = (
    "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. "
    "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
)

NO_FIT_MESSAGE = (
    "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)
# As the Cluster Autoscaler writes them (core/scaleup: "pod triggered scale-up: %v" over its
# ScaleUpInfo list; processors/status: "pod didn't trigger scale-up: " and the reasons per group).
SCALE_UP_MESSAGE = "pod triggered scale-up: [{eks-gpu-ng-5ec4a1b2 1->2 (max: 4)}]"
NO_SCALE_UP_MESSAGE = (
    "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector, 1 Insufficient nvidia.com/gpu"
)
# A registry's temporary refusal (image-pull-backoff heals once the limit resets); a tag that does not exist.
RATE_LIMITED = (
    "failed to copy: httpReadSeeker: failed open: unexpected status code {ref}: "
    "429 Too Many Requests - Server message: toomanyrequests: You have reached your pull rate limit"
)
MANIFEST_UNKNOWN = (
    'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": '
    'failed to resolve reference "{image}": {image}: not found: manifest unknown'
)


# --------------------------------------------------------------------------- conditions (pkg/util/status.go)


def set_condition(status: Obj, ctype: str, reason: str, message: str, at: str) -> None:
    """The operator's setCondition: one entry per type, re-appended at the end when it changes.

    Nothing changes once Failed; Restarting and Running replace each other;
    Succeeded/Failed flip Running to "False" (keeping its lastTransitionTime, as the operator does).
    """
    conditions: list[Obj] = status.setdefault("conditions", [])
    if any(c["type"] == "Failed" and c["status"] == "True" for c in conditions):
        return
    current = next((c for c in conditions if c["type"] == ctype), None)
    if current and current["status"] == "True" and current["reason"] == reason:
        return
    new = {
        "type": ctype,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastUpdateTime": at,
        "lastTransitionTime": current["lastTransitionTime"] if current and current["status"] == "True" else at,
    }
    kept = []
    for c in conditions:
        if c["type"] == ctype or {c["type"], ctype} == {"Running", "Restarting"}:
            continue
        if ctype in ("Succeeded", "Failed") and c["type"] == "Running":
            c = {**c, "status": "False"}
        kept.append(c)
    status["conditions"] = [*kept, new]


# --------------------------------------------------------------------------- pods


def _replicas(job: Obj) -> dict[str, int]:
    """{"Master": 1, "Worker": N} from the spec; a missing replicas field means 1, as the operator defaults it."""
    specs = (job.get("spec") or {}).get("pytorchReplicaSpecs") or {}
    out = {}
    for rtype in ("Master", "Worker"):
        if rtype in specs:
            replicas = specs[rtype].get("replicas", 1)
            out[rtype] = int(replicas) if replicas is not None else 1
    return out


def _container_spec(job: Obj, rtype: str) -> Obj:
    spec = ((job["spec"]["pytorchReplicaSpecs"].get(rtype) or {}).get("template") or {}).get("spec") or {}
    containers = spec.get("containers") or [{}]
    chosen = next((c for c in containers if c.get("name") == CONTAINER), containers[0])
    return {**copy.deepcopy(chosen), "name": CONTAINER}


def _pod_name(job: str, rtype: str, index: int) -> str:
    return f"{job}-{rtype.lower()}-{index}"


def build_pod(job: Obj, rtype: str, index: int, at: str) -> Obj:
    """A pod as the operator creates it: labels, owner reference, the replica's template."""
    meta = job["metadata"]
    labels = {
        f"{LABEL_PREFIX}/job-name": meta["name"],
        f"{LABEL_PREFIX}/operator-name": "pytorchjob-controller",
        f"{LABEL_PREFIX}/replica-type": rtype.lower(),
        f"{LABEL_PREFIX}/replica-index": str(index),
    }
    if rtype == "Master":
        labels[f"{LABEL_PREFIX}/job-role"] = "master"
    owner = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    container = _container_spec(job, rtype)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": _pod_name(meta["name"], rtype, index),
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [owner],
        },
        "spec": {"containers": [container], "restartPolicy": "Never", "schedulerName": "default-scheduler"},
        "status": pod_status("pending", container.get("image", ""), at),
    }


def _cond(ctype: str, status: str, at: str, **extra: str) -> Obj:
    return {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": at, **extra}


def pod_status(state: str, image: str, at: str, restarts: int = 0) -> Obj:
    """What the kubelet reports for a pod in ``state``."""
    scheduled = _cond("PodScheduled", "True", at)
    if state in ("unschedulable", "unschedulable-no-fit"):
        message = NO_FIT_MESSAGE if state == "unschedulable-no-fit" else UNSCHEDULABLE_MESSAGE
        reason = {"reason": "Unschedulable", "message": message}
        return {
            "phase": "Pending",
            "conditions": [_cond("PodScheduled", "False", at, **reason)],
            "qosClass": "Burstable",
        }
    base: Obj = {"hostIP": "10.0.12.34", "podIP": "10.0.13.7", "startTime": at, "qosClass": "Burstable"}
    container: Obj = {"name": CONTAINER, "image": image, "imageID": "", "restartCount": restarts}
    not_ready = [_cond("Initialized", "True", at), _cond("Ready", "False", at), _cond("ContainersReady", "False", at)]
    if state in ("pending", "ErrImagePull", "ImagePullBackOff", "ErrImagePull-missing", "ImagePullBackOff-missing"):
        if state == "pending":
            waiting = {"reason": "ContainerCreating"}
        elif state == "ErrImagePull":
            waiting = {
                "reason": "ErrImagePull",
                "message": f'failed to pull and unpack image "{image}": ' + RATE_LIMITED.format(ref=image),
            }
        elif state == "ImagePullBackOff":
            # Kubernetes 1.30 on: the back-off names the error it backs off from.
            cause = f'failed to pull and unpack image "{image}": ' + RATE_LIMITED.format(ref=image)
            waiting = {
                "reason": "ImagePullBackOff",
                "message": f'Back-off pulling image "{image}": ErrImagePull: {cause}',
            }
        elif state == "ErrImagePull-missing":
            waiting = {"reason": "ErrImagePull", "message": MANIFEST_UNKNOWN.format(image=image)}
        else:  # an older kubelet's back-off, which does not say why: only the pod's events do
            waiting = {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}
        container |= {"ready": False, "started": False, "state": {"waiting": waiting}}
        return base | {"phase": "Pending", "conditions": [*not_ready, scheduled], "containerStatuses": [container]}
    if state == "running":
        container |= {"ready": True, "started": True, "state": {"running": {"startedAt": at}}}
        ready = [_cond("Initialized", "True", at), _cond("Ready", "True", at), _cond("ContainersReady", "True", at)]
        return base | {"phase": "Running", "conditions": [*ready, scheduled], "containerStatuses": [container]}
    succeeded = state == "succeeded"
    terminated = {
        "exitCode": 0 if succeeded else 1,
        "reason": "Completed" if succeeded else "Error",
        "startedAt": at,
        "finishedAt": at,
        "containerID": "containerd://" + "0" * 64,
    }
    container |= {"ready": False, "started": False, "state": {"terminated": terminated}}
    not_ready[1]["reason"] = not_ready[2]["reason"] = "PodCompleted" if succeeded else "PodFailed"
    phase = "Succeeded" if succeeded else "Failed"
    return base | {"phase": phase, "conditions": [*not_ready, scheduled], "containerStatuses": [container]}


# --------------------------------------------------------------------------- scenarios


@dataclass
class _Track:
    """What the simulator remembers about one job (by uid)."""

    namespace: str
    name: str
    uid: str
    scenario: str
    timings: dict[str, float]
    t0: float
    applied: int = 0  # stages of the timeline already applied
    pull_state: str = ""
    restarts: int = 0


def timeline(scenario: str, t: dict[str, float]) -> list[tuple[float, str]]:
    """(seconds after the job was first seen, stage) for a scenario."""
    if scenario == "success":
        return [(0, "created"), (t["pending_s"], "running"), (t["pending_s"] + t["run_s"], "succeeded")]
    if scenario == "failure":
        return [(0, "created"), (t["pending_s"], "running"), (t["pending_s"] + t["run_s"], "failed")]
    if scenario == "restarting":
        restart = t["pending_s"] + t["restart_at"]
        return [
            (0, "created"),
            (t["pending_s"], "running"),
            (restart, "restarting"),
            (restart + t["restart_s"], "running"),
            (max(t["pending_s"] + t["run_s"], restart + t["restart_s"]), "succeeded"),
        ]
    if scenario == "image-pull-backoff":
        return [(0, "created-image-pull")]
    if scenario == "unschedulable":
        return [(0, "created-unschedulable")]
    if scenario == "gpu-scale-up":
        up = t["scale_up_s"]
        return [(0, "created-waiting-for-gpus"), (up, "running"), (up + t["run_s"], "succeeded")]
    if scenario == "never-schedulable":
        return [(0, "created-never-schedulable")]
    if scenario == "bad-image":
        return [(0, "created-bad-image")]
    if scenario == "suspended":
        return [(0, "suspended")]
    return []  # operator-down: nothing is ever written


class OperatorSim:
    """Advance every PyTorchJob in ``api`` along its scenario, one ``step()`` at a time."""

    def __init__(
        self, api: KubeAPI, clock: Callable[[], float] | None = None, default_scenario: str = "success"
    ) -> None:
        self.api = api
        self.clock = clock or api.clock
        self.default_scenario = default_scenario
        self._plans: dict[tuple[str, str], tuple[str, dict[str, float]]] = {}
        self._tracks: dict[str, _Track] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def plan(self, namespace: str, name: str, scenario: str, **timings: float) -> None:
        """Give the job ``namespace/name`` (created now or later) a scenario and timing overrides."""
        _check_scenario(scenario)
        known = {name for defaults in DEFAULT_TIMINGS.values() for name in defaults}
        unknown = set(timings) - known
        if unknown:  # a typo; a timing of another scenario is fine, so callers can pass one dict to all
            raise ValueError(f"unknown timing {sorted(unknown)}; known: {sorted(known)}")
        self._plans[(namespace, name)] = (
            scenario,
            {k: v for k, v in timings.items() if k in DEFAULT_TIMINGS[scenario]},
        )

    # ----------------------------------------------------------------- driving

    def step(self) -> None:
        now = self.clock()
        jobs = self.api.objects(GROUP, VERSION, PLURAL)
        live = {job["metadata"]["uid"] for job in jobs}
        for uid in set(self._tracks) - live:
            del self._tracks[uid]  # deleted: never touched again
        for job in jobs:
            track = self._tracks.get(job["metadata"]["uid"]) or self._track(job, now)
            with self.api.lock:  # the job cannot be deleted half-way through its update
                current = self.api.get((GROUP, VERSION, PLURAL, track.namespace, track.name))
                if current is None or current["metadata"]["uid"] != track.uid:
                    continue
                self._advance(track, current, now)

    def run_in_background(self, interval: float = 0.05) -> None:
        """Step on a daemon thread until ``stop()``: for demos against the wall clock."""
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(interval):
                with contextlib.suppress(Exception):  # a racing delete must not kill the loop
                    self.step()

        self._thread = threading.Thread(target=loop, name="operator-sim", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
            self._thread = None

    def scenario_of(self, namespace: str, name: str) -> str | None:
        track = next((t for t in self._tracks.values() if (t.namespace, t.name) == (namespace, name)), None)
        return track.scenario if track else None

    # ----------------------------------------------------------------- internals

    def _track(self, job: Obj, now: float) -> _Track:
        meta = job["metadata"]
        annotations = meta.get("annotations") or {}
        scenario, timings = self._plans.get((meta["namespace"], meta["name"]), (None, {}))
        if scenario is None:
            scenario = annotations.get(SCENARIO_ANNOTATION, self.default_scenario)
            if scenario not in SCENARIOS:
                scenario = self.default_scenario
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                timings = {k: float(v) for k, v in json.loads(annotations.get(TIMINGS_ANNOTATION, "{}")).items()}
            timings = {k: v for k, v in timings.items() if k in DEFAULT_TIMINGS[scenario]}
        if ((job.get("spec") or {}).get("runPolicy") or {}).get("suspend"):
            scenario = "suspended"
        merged = {**DEFAULT_TIMINGS[scenario], **timings}
        # The timeline starts at creation, so a clock that jumped before the first step still replays every stage.
        created = _parse_time(meta.get("creationTimestamp"))
        start = min(now, created) if created is not None else now
        track = _Track(meta["namespace"], meta["name"], meta["uid"], scenario, merged, start)
        self._tracks[track.uid] = track
        return track

    def _advance(self, track: _Track, job: Obj, now: float) -> None:
        stages = timeline(track.scenario, track.timings)
        status = copy.deepcopy(job.get("status") or {})
        while track.applied < len(stages) and track.t0 + stages[track.applied][0] <= now:
            offset, stage = stages[track.applied]
            getattr(self, "_stage_" + stage.replace("-", "_"))(track, job, status, rfc3339(track.t0 + offset))
            track.applied += 1
            self._write(track, job, status, now)  # one write per stage: watchers see each transition
        if track.scenario in ("image-pull-backoff", "bad-image") and track.applied:
            # The kubelet alternates ErrImagePull and ImagePullBackOff while it backs off.
            period = max(track.timings["backoff_s"], 1e-9)
            state = "ErrImagePull" if int((now - track.t0) / period) % 2 == 0 else "ImagePullBackOff"
            if track.scenario == "bad-image":
                state += "-missing"
            if state != track.pull_state:
                track.pull_state = state
                self._set_pods(job, lambda _rtype, _i: state, rfc3339(now))

    def _write(self, track: _Track, job: Obj, status: Obj, now: float) -> None:
        status["lastReconcileTime"] = rfc3339(now)
        status["replicaStatuses"] = self._replica_statuses(job)
        self.api.update_status((GROUP, VERSION, PLURAL, track.namespace, track.name), status, uid=track.uid)

    # stages -----------------------------------------------------------------

    def _stage_created(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        ns, name = track.namespace, track.name
        set_condition(status, "Created", "PyTorchJobCreated", f"PyTorchJob {ns}/{name} is created.", at)
        status.setdefault("startTime", at)
        for rtype, count in _replicas(job).items():
            for i in range(count):
                self._put_pod(build_pod(job, rtype, i, at))

    def _stage_created_image_pull(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        self._stage_created(track, job, status, at)
        track.pull_state = "ErrImagePull"
        self._set_pods(job, lambda _rtype, _i: "ErrImagePull", at)

    def _stage_created_unschedulable(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        self._stage_created(track, job, status, at)
        self._set_pods(job, lambda _rtype, _i: "unschedulable", at)

    def _stage_created_waiting_for_gpus(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        self._stage_created_unschedulable(track, job, status, at)
        for pod in self._pods(job):
            self._event(pod, "Warning", "FailedScheduling", UNSCHEDULABLE_MESSAGE, "default-scheduler", at)
            self._event(pod, "Normal", "TriggeredScaleUp", SCALE_UP_MESSAGE, "cluster-autoscaler", at)

    def _stage_created_never_schedulable(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        self._stage_created(track, job, status, at)
        self._set_pods(job, lambda _rtype, _i: "unschedulable-no-fit", at)
        for pod in self._pods(job):
            self._event(pod, "Warning", "FailedScheduling", NO_FIT_MESSAGE, "default-scheduler", at)
            self._event(pod, "Normal", "NotTriggerScaleUp", NO_SCALE_UP_MESSAGE, "cluster-autoscaler", at)

    def _stage_created_bad_image(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        self._stage_created(track, job, status, at)
        track.pull_state = "ErrImagePull-missing"
        self._set_pods(job, lambda _rtype, _i: "ErrImagePull-missing", at)
        for pod in self._pods(job):
            image = pod["spec"]["containers"][0].get("image", "")
            pulled = f'Failed to pull image "{image}": ' + MANIFEST_UNKNOWN.format(image=image)
            self._event(pod, "Warning", "Failed", pulled, "kubelet", at)
            self._event(pod, "Warning", "Failed", "Error: ErrImagePull", "kubelet", at)

    def _stage_running(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        ns, name = track.namespace, track.name
        if track.restarts:
            # The failed worker's pod is deleted and recreated by the operator.
            self.api.delete(self._pod_key(job, _failing_type(job), 0))
            self._put_pod(build_pod(job, _failing_type(job), 0, at))
        self._set_pods(job, lambda _rtype, _i: "running", at)
        for rtype, count in _replicas(job).items():
            for i in range(count):
                self.api.set_pod_log(ns, _pod_name(name, rtype, i), CONTAINER, _training_log(rtype, i, done=False))
        set_condition(status, "Running", "PyTorchJobRunning", f"PyTorchJob {ns}/{name} is running.", at)

    def _stage_succeeded(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        ns, name = track.namespace, track.name
        self._set_pods(job, lambda _rtype, _i: "succeeded", at)
        for rtype, count in _replicas(job).items():
            for i in range(count):
                self.api.set_pod_log(ns, _pod_name(name, rtype, i), CONTAINER, _training_log(rtype, i, done=True))
        set_condition(status, "Succeeded", "PyTorchJobSucceeded", f"PyTorchJob {ns}/{name} successfully completed.", at)
        status["completionTime"] = at

    def _stage_failed(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        ns, name, rtype = track.namespace, track.name, _failing_type(job)
        self._fail_first(job, rtype, at)
        message = f"PyTorchJob {ns}/{name} is failed because 1 {rtype} replica(s) failed."
        set_condition(status, "Failed", "PyTorchJobFailed", message, at)
        status["completionTime"] = at

    def _stage_restarting(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        ns, name, rtype = track.namespace, track.name, _failing_type(job)
        self._fail_first(job, rtype, at)
        track.restarts += 1
        message = f"PyTorchJob {ns}/{name} is restarting because 1 {rtype} replica(s) failed."
        set_condition(status, "Restarting", "PyTorchJobRestarting", message, at)

    def _stage_suspended(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        ns, name = track.namespace, track.name
        set_condition(status, "Created", "PyTorchJobCreated", f"PyTorchJob {ns}/{name} is created.", at)
        set_condition(status, "Suspended", "PyTorchJobSuspended", f"PyTorchJob {ns}/{name} is suspended.", at)

    # pods -------------------------------------------------------------------

    def _pod_key(self, job: Obj, rtype: str, index: int) -> tuple[str, str, str, str, str]:
        return ("", "v1", "pods", job["metadata"]["namespace"], _pod_name(job["metadata"]["name"], rtype, index))

    def _put_pod(self, pod: Obj) -> None:
        meta = pod["metadata"]
        self.api.put(("", "v1", "pods", meta["namespace"], meta["name"]), pod)

    def _pods(self, job: Obj) -> list[Obj]:
        pods = (self.api.get(self._pod_key(job, rtype, i)) for rtype, n in _replicas(job).items() for i in range(n))
        return [pod for pod in pods if pod is not None]

    def _event(self, pod: Obj, etype: str, reason: str, message: str, component: str, at: str) -> None:
        """A core v1 Event about ``pod``, as the legacy recorder (scheduler, autoscaler, kubelet) writes one."""
        meta = pod["metadata"]
        name = f"{meta['name']}.{uuid.uuid4().hex[:16]}"
        involved = {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"], "uid": meta.get("uid", "")}
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": meta["namespace"]},
            "involvedObject": {**involved, "apiVersion": "v1"},
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "firstTimestamp": at,
            "lastTimestamp": at,
            "count": 1,
            "type": etype,
            "eventTime": None,
            "reportingComponent": component,
            "reportingInstance": "",
        }
        self.api.put(("", "v1", "events", meta["namespace"], name), event)

    def _set_pods(self, job: Obj, state_of: Callable[[str, int], str], at: str) -> None:
        for rtype, count in _replicas(job).items():
            for i in range(count):
                self._set_pod(job, rtype, i, state_of(rtype, i), at)

    def _set_pod(self, job: Obj, rtype: str, index: int, state: str, at: str) -> None:
        pod = self.api.get(self._pod_key(job, rtype, index))
        if pod is None:
            return  # deleted by someone else; the real operator would recreate it, the scenario does not need that
        image = pod["spec"]["containers"][0].get("image", "")
        restarts = pod.get("status", {}).get("containerStatuses", [{}])[0].get("restartCount", 0)
        started = (pod.get("status") or {}).get("startTime")
        pod["status"] = pod_status(state, image, at, restarts)
        message = termination_message(job) if (rtype, index) == _leader(job) else None
        if message and state in ("succeeded", "failed"):
            pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"] = message
        if started and "startTime" in pod["status"]:
            pod["status"]["startTime"] = started  # the kubelet's start of this pod, not of its latest state
        self._put_pod(pod)

    def _fail_first(self, job: Obj, rtype: str, at: str) -> None:
        self._set_pod(job, rtype, 0, "failed", at)
        ns, name = job["metadata"]["namespace"], _pod_name(job["metadata"]["name"], rtype, 0)
        self.api.set_pod_log(ns, name, CONTAINER, _training_log(rtype, 0, done=False) + OOM_TRACEBACK)

    def _replica_statuses(self, job: Obj) -> Obj:
        """Counts by pod phase, as updateJobReplicaStatuses does (Pending pods count nowhere)."""
        out: Obj = {}
        for rtype, count in _replicas(job).items():
            counts: dict[str, int] = {}
            for i in range(count):
                pod = self.api.get(self._pod_key(job, rtype, i))
                phase = (pod or {}).get("status", {}).get("phase")
                field_name = {"Running": "active", "Succeeded": "succeeded", "Failed": "failed"}.get(phase or "")
                if field_name:
                    counts[field_name] = counts.get(field_name, 0) + 1
            out[rtype] = counts
        return out


def _leader(job: Obj) -> tuple[str, int]:
    """The leading replica: Master 0, else Worker 0 (the pod whose termination message is the job's result)."""
    return ("Master", 0) if "Master" in _replicas(job) else ("Worker", 0)


def termination_message(job: Obj) -> str | None:
    """The message the job's annotation says its leading container writes, as the kubelet reports it."""
    annotations = job["metadata"].get("annotations") or {}
    message = annotations.get(TERMINATION_MESSAGE_ANNOTATION)
    if not isinstance(message, str) or not message:
        return None
    if annotations.get(TERMINATION_UNCAPPED_ANNOTATION) == "true":
        return message
    data = message.encode("utf-8", errors="surrogatepass")
    return data[-KUBELET_MESSAGE_BYTES:].decode("utf-8", errors="replace")


def _parse_time(value: str | None) -> float | None:
    try:
        return dt.datetime.strptime(value or "", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return None


def _failing_type(job: Obj) -> str:
    """The replica type whose first pod fails: a worker when there is one, else the master."""
    return "Worker" if _replicas(job).get("Worker") else "Master"


def _check_scenario(scenario: str) -> None:
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {sorted(SCENARIOS)}")


def _training_log(rtype: str, index: int, done: bool) -> str:
    lines = [
        f"INFO: {rtype.lower()}-{index} starting, WORLD_SIZE and RANK from the operator's environment",
        "Train Epoch: 1 [0/60000 (0%)]\tloss=2.3000",
        "Train Epoch: 1 [6400/60000 (11%)]\tloss=0.6412",
    ]
    if done:
        lines += ["Train Epoch: 1 [59520/60000 (99%)]\tloss=0.0716", "accuracy=0.9764", "Training finished."]
    return "\n".join(lines) + "\n"
