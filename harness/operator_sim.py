"""A step-driven stand-in for the Kubeflow training-operator v1.9 (every v1 kind) and the batch/v1 job controller.

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

from harness.kubeapi import KubeAPI, rfc3339
from harness.operator_objects import (
    CONTAINER,
    LABEL_PREFIX,
    MANIFEST_UNKNOWN,
    NO_FIT_MESSAGE,
    OPERATORS,
    TERMINATION_MESSAGE_ANNOTATION,
    TERMINATION_UNCAPPED_ANNOTATION,
    UNSCHEDULABLE_MESSAGE,
    Obj,
    _failing_type,
    _leader,
    _replicas,
    _training_log,
    build_pod,
    container_name,
    operator_of,
    pod_name,
    pod_status,
    set_condition,
    termination_message,
)

__all__ = [  # and what the tests take from the objects the simulator writes (harness.operator_objects)
    "CONTAINER",
    "LABEL_PREFIX",
    "SCENARIOS",
    "SCENARIO_ANNOTATION",
    "TERMINATION_MESSAGE_ANNOTATION",
    "TERMINATION_UNCAPPED_ANNOTATION",
    "OperatorSim",
    "_training_log",
    "build_pod",
    "pod_status",
]

SCENARIO_ANNOTATION = "jobsync.local/scenario"
TIMINGS_ANNOTATION = "jobsync.local/timings"  # JSON object, e.g. {"run_s": 30}

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

# As the Cluster Autoscaler writes them (core/scaleup: "pod triggered scale-up: %v" over its
# ScaleUpInfo list; processors/status: "pod didn't trigger scale-up: " and the reasons per group).
SCALE_UP_MESSAGE = "pod triggered scale-up: [{eks-gpu-ng-5ec4a1b2 1->2 (max: 4)}]"
NO_SCALE_UP_MESSAGE = (
    "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector, 1 Insufficient nvidia.com/gpu"
)


# --------------------------------------------------------------------------- conditions (pkg/util/status.go)


# --------------------------------------------------------------------------- pods


# --------------------------------------------------------------------------- scenarios


@dataclass
class _Track:
    """What the simulator remembers about one job (by uid)."""

    namespace: str
    name: str
    uid: str
    key: tuple[str, str, str]  # the kind's (group, version, plural)
    scenario: str
    timings: dict[str, float]
    t0: float
    applied: int = 0  # stages of the timeline already applied
    pull_state: str = ""
    restarts: int = 0
    held: bool = False  # runPolicy.suspend: the timeline waits, and starts again once the job is resumed


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
    """Advance every job of the kinds it runs (``OPERATORS``) in ``api`` along its scenario, a ``step()`` at a time."""

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
        jobs = [job for op in OPERATORS for job in self.api.objects(op.group, op.version, op.plural)]
        live = {job["metadata"]["uid"] for job in jobs}
        for uid in set(self._tracks) - live:
            del self._tracks[uid]  # deleted: never touched again
        for job in jobs:
            track = self._tracks.get(job["metadata"]["uid"]) or self._track(job, now)
            with self.api.lock:  # the job cannot be deleted half-way through its update
                current = self.api.get((*track.key, track.namespace, track.name))
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
        merged = {**DEFAULT_TIMINGS[scenario], **timings}
        # The timeline starts at creation, so a clock that jumped before the first step still replays every stage.
        created = _parse_time(meta.get("creationTimestamp"))
        start = min(now, created) if created is not None else now
        op = operator_of(job)
        track = _Track(
            meta["namespace"], meta["name"], meta["uid"], (op.group, op.version, op.plural), scenario, merged, start
        )
        self._tracks[track.uid] = track
        return track

    def _advance(self, track: _Track, job: Obj, now: float) -> None:
        status = copy.deepcopy(job.get("status") or {})
        if track.scenario != "suspended" and self._hold(track, job, status, now):
            return
        stages = timeline(track.scenario, track.timings)
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
        if operator_of(job).batch:
            status.update(self._job_counts(job))
        else:
            status["lastReconcileTime"] = rfc3339(now)
            status["replicaStatuses"] = self._replica_statuses(job)
        self.api.update_status((*track.key, track.namespace, track.name), status, uid=track.uid)

    def _hold(self, track: _Track, job: Obj, status: Obj, now: float) -> bool:
        """``runPolicy.suspend`` as the operator's common/job.go reads it (a queue such as Kueue sets and clears it):
        suspended, the job's pods are deleted, Running turns False, Suspended True; resumed, Suspended turns False,
        ``startTime`` is now, and the scenario's timeline starts again from its beginning. True while it holds."""
        name, at, kind = track.name, rfc3339(now), job.get("kind", "PyTorchJob")
        if ((job.get("spec") or {}).get("runPolicy") or {}).get("suspend") is True:
            if track.held:
                return True
            for rtype, count in _replicas(job).items():
                for i in range(count):
                    self.api.delete(self._pod_key(job, rtype, i))
            message = f"{kind} {name} is suspended."
            if not any(c["type"] == "Created" for c in status.get("conditions") or []):
                set_condition(status, "Created", f"{kind}Created", f"{kind} {name} is created.", at)
            _set_false(status, "Running", f"{kind}Suspended", message, at)
            set_condition(status, "Suspended", f"{kind}Suspended", message, at)
            track.held = True
            self._write(track, job, status, now)
            return True
        if track.held:
            _set_false(status, "Suspended", f"{kind}Resumed", f"{kind} {name} is resumed.", at)
            status["startTime"] = at
            track.held, track.t0, track.applied = False, now, 0
            self._write(track, job, status, now)
        return False

    # stages -----------------------------------------------------------------

    def _stage_created(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        ns, name, kind = track.namespace, track.name, operator_of(job).kind
        if not operator_of(job).batch:  # the job controller writes no Created condition, only its counts
            set_condition(status, "Created", f"{kind}Created", f"{kind} {ns}/{name} is created.", at)
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
        ns, name, kind = track.namespace, track.name, operator_of(job).kind
        if track.restarts:
            # The failed worker's pod is deleted and recreated by the operator.
            self.api.delete(self._pod_key(job, _failing_type(job), 0))
            self._put_pod(build_pod(job, _failing_type(job), 0, at))
        self._set_pods(job, lambda _rtype, _i: "running", at)
        self._set_logs(job, done=False)
        if not operator_of(job).batch:
            set_condition(status, "Running", f"{kind}Running", f"{kind} {ns}/{name} is running.", at)

    def _stage_succeeded(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        ns, name, kind = track.namespace, track.name, operator_of(job).kind
        self._set_pods(job, lambda _rtype, _i: "succeeded", at)
        self._set_logs(job, done=True)
        if operator_of(job).batch:  # the job controller: the success criteria first, then Complete
            reached = ("CompletionsReached", "Reached expected number of succeeded pods")
            _batch_condition(status, "SuccessCriteriaMet", *reached, at)
            _batch_condition(status, "Complete", *reached, at)
        else:
            set_condition(status, "Succeeded", f"{kind}Succeeded", f"{kind} {ns}/{name} successfully completed.", at)
        status["completionTime"] = at

    def _stage_failed(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        ns, name, rtype, kind = track.namespace, track.name, _failing_type(job), operator_of(job).kind
        self._fail_first(job, rtype, at)
        if operator_of(job).batch:
            limit = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
            _batch_condition(status, "FailureTarget", *limit, at)
            _batch_condition(status, "Failed", *limit, at)
            return
        message = f"{kind} {ns}/{name} is failed because 1 {rtype} replica(s) failed."
        set_condition(status, "Failed", f"{kind}Failed", message, at)
        status["completionTime"] = at

    def _stage_restarting(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        ns, name, rtype, kind = track.namespace, track.name, _failing_type(job), operator_of(job).kind
        self._fail_first(job, rtype, at)
        track.restarts += 1
        if not operator_of(job).batch:  # a Job's failed pod only counts in status.failed; a new one replaces it
            message = f"{kind} {ns}/{name} is restarting because 1 {rtype} replica(s) failed."
            set_condition(status, "Restarting", f"{kind}Restarting", message, at)

    def _stage_suspended(self, track: _Track, job: Obj, status: Obj, at: str) -> None:
        ns, name, kind = track.namespace, track.name, operator_of(job).kind
        if operator_of(job).batch:
            _batch_condition(status, "Suspended", "JobSuspended", "Job suspended", at)
            return
        set_condition(status, "Created", f"{kind}Created", f"{kind} {ns}/{name} is created.", at)
        set_condition(status, "Suspended", f"{kind}Suspended", f"{kind} {ns}/{name} is suspended.", at)

    def _set_logs(self, job: Obj, done: bool) -> None:
        ns = job["metadata"]["namespace"]
        for rtype, count in _replicas(job).items():
            for i in range(count):
                log = _training_log(rtype, i, done=done)
                self.api.set_pod_log(ns, pod_name(job, rtype, i), container_name(job, rtype), log)

    # pods -------------------------------------------------------------------

    def _pod_key(self, job: Obj, rtype: str, index: int) -> tuple[str, str, str, str, str]:
        return ("", "v1", "pods", job["metadata"]["namespace"], pod_name(job, rtype, index))

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
        pod["status"] = pod_status(state, image, at, restarts, container=pod["spec"]["containers"][0]["name"])
        message = termination_message(job) if (rtype, index) == _leader(job) else None
        if message and state in ("succeeded", "failed"):
            pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"] = message
        if started and "startTime" in pod["status"]:
            pod["status"]["startTime"] = started  # the kubelet's start of this pod, not of its latest state
        self._put_pod(pod)

    def _fail_first(self, job: Obj, rtype: str, at: str) -> None:
        self._set_pod(job, rtype, 0, "failed", at)
        ns, name = job["metadata"]["namespace"], pod_name(job, rtype, 0)
        self.api.set_pod_log(ns, name, container_name(job, rtype), _training_log(rtype, 0, done=False) + OOM_TRACEBACK)

    def _job_counts(self, job: Obj) -> Obj:
        """A batch/v1 Job's counts, as the job controller keeps them: active, ready, succeeded, failed pods."""
        phases = [(pod.get("status") or {}).get("phase") for pod in self._pods(job)]
        counts = {
            "active": sum(phase in ("Pending", "Running") for phase in phases),
            "ready": sum(phase == "Running" for phase in phases),
            "succeeded": sum(phase == "Succeeded" for phase in phases),
            "failed": sum(phase == "Failed" for phase in phases),
        }
        return {key: value for key, value in counts.items() if value or key == "active"}

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


def _set_false(status: Obj, ctype: str, reason: str, message: str, at: str) -> None:
    """A condition that is True turns False with ``reason`` (updateJobConditions with ConditionFalse)."""
    for found in status.get("conditions") or []:
        if found["type"] == ctype and found["status"] == "True":
            found.update(status="False", reason=reason, message=message, lastUpdateTime=at, lastTransitionTime=at)


def _batch_condition(status: Obj, ctype: str, reason: str, message: str, at: str) -> None:
    """A condition of the job controller's: appended once, True, with its probe and transition times."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    if any(c["type"] == ctype for c in conditions):
        return
    conditions.append(
        {
            "type": ctype,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastProbeTime": at,
            "lastTransitionTime": at,
        }
    )


def _parse_time(value: str | None) -> float | None:
    try:
        return dt.datetime.strptime(value or "", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return None


def _check_scenario(scenario: str) -> None:
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {sorted(SCENARIOS)}")
