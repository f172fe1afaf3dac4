"""A small stand-in for Kueue v0.19.2 (its UnadmittedWorkloadsObservability gate off, as released), for the
PyTorchJobs and batch/v1 Jobs of a KubeAPI. It writes each Workload as the e2e tier recorded the real Kueue
writing it (tests/payloads/kueue/; tests/harness/test_kueue_sim.py holds it to those recordings), its
messages computed from the job's CPU requests (a pod set asking none counts 500m, as the recorded jobs ask)
against a ClusterQueue of one CPU held by another job:

- its webhook: a job labelled ``kueue.x-k8s.io/queue-name`` is created suspended (``runPolicy.suspend``,
  a batch/v1 Job's ``spec.suspend``);
- its Workload, named and owned to the job as Kueue's jobframework does, validated against Kueue's CRD
  (harness/crds/), follows the job's story, a timeline of stages from the job's creation:

  ``admitted``   admitted at once: the queue is free
  ``queued``     waits ``queued_s`` for quota (``QuotaReserved False Pending`` "insufficient unused quota ..."),
                 then admitted
  ``refused``    asks for more than the ClusterQueue's whole quota: ``... > maximum capacity (1)``, for ever
  ``preempted``  admitted at once; evicted by a higher priority at ``preempt_at`` (``Evicted``, ``Preempted``,
                 ``Requeued``, ``schedulingStats.evictions``), readmitted ``requeue_s`` later

- admitted, the job is resumed; evicted, suspended again (the operator simulator deletes its pods and runs it
  again once resumed); its job ended, the Workload is ``Finished``; running, ``PodsReady``.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.kubeapi import KubeAPI, Route, rfc3339, validate_schema
from jobsync.core.queue import QUEUE_LABEL, WORKLOAD, workload_names
from jobsync.evaluation.kinds import lookup

Obj = dict[str, Any]
CRDS = Path(__file__).resolve().parent / "crds"
# The kinds it queues: (group, version, plural) -> where the spec suspends the job.
KINDS: dict[tuple[str, str, str], tuple[str, ...]] = {
    ("kubeflow.org", "v1", "pytorchjobs"): ("runPolicy", "suspend"),
    ("batch", "v1", "jobs"): ("suspend",),
}
CAPACITY_MILLI = 1000  # the ClusterQueue's whole CPU quota
KUEUE_VERSION = "v1beta2"
STORY_ANNOTATION = "jobsync.local/queue"
TIMINGS_ANNOTATION = "jobsync.local/queue-timings"  # JSON object, e.g. {"queued_s": 300}
CLUSTER_QUEUE = "e2e-cq"
FLAVOR = "default-flavor"

DEFAULT_TIMINGS: dict[str, dict[str, float]] = {
    "admitted": {},
    "queued": {"queued_s": 600},
    "refused": {},
    "preempted": {"preempt_at": 300, "requeue_s": 600},
}
STORIES = frozenset(DEFAULT_TIMINGS)

# Kueue's words, as the recordings have them.
QUEUED = (
    "couldn't assign flavors to pod set {pod_set}: insufficient unused quota for cpu in flavor {flavor}, "
    "{need} more needed"
)
REFUSED = (
    "couldn't assign flavors to pod set {pod_set}: insufficient quota for cpu in flavor {flavor}, previously "
    "considered podsets requests ({before}) + current podset request ({asked}) > maximum capacity ({capacity})"
)
PREEMPTED = (
    "Preempted to accommodate a workload (UID: {preemptor}, JobUID: {preemptor_job}) due to prioritization in the "
    "ClusterQueue; preemptor path: /{cq}; preemptee path: /{cq}"
)


def timeline(story: str, t: dict[str, float]) -> list[tuple[float, str]]:
    if story == "queued":
        return [(0, "queued"), (t["queued_s"], "admitted")]
    if story == "refused":
        return [(0, "refused")]
    if story == "preempted":
        back = t["preempt_at"] + t["requeue_s"]
        return [(0, "queued"), (0, "admitted"), (t["preempt_at"], "preempted"), (back, "readmitted")]
    return [(0, "queued"), (0, "admitted")]


@dataclass
class _Track:
    uid: str
    story: str
    timings: dict[str, float]
    t0: float
    workload: str
    applied: int = 0
    admitted_at: float | None = None
    evictions: int = 0
    seen: set[str] = field(default_factory=set)


class KueueSim:
    """Moves the Workload of every queued PyTorchJob in ``api`` along its story, one ``step()`` at a time."""

    def __init__(self, api: KubeAPI, clock: Callable[[], float], default_story: str = "admitted") -> None:
        self.api = api
        self.clock = clock
        self.default_story = default_story
        self._plans: dict[tuple[str, str], tuple[str, dict[str, float]]] = {}
        self._tracks: dict[str, _Track] = {}
        for name in ("workloads", "localqueues"):
            api.register_crd(yaml.safe_load((CRDS / f"kueue.x-k8s.io_{name}.yaml").read_text()))
        api.mutators.append(_suspend_queued)

    def plan(self, namespace: str, name: str, story: str, **timings: float) -> None:
        if story not in STORIES:
            raise ValueError(f"unknown queue story {story!r}; known: {sorted(STORIES)}")
        self._plans[(namespace, name)] = (story, {**DEFAULT_TIMINGS[story], **timings})

    def local_queue(self, namespace: str, name: str, cluster_queue: str = CLUSTER_QUEUE) -> None:
        """A LocalQueue, as a platform team makes one (its ClusterQueue is the simulator's)."""
        queue = {"apiVersion": f"kueue.x-k8s.io/{KUEUE_VERSION}", "kind": "LocalQueue"}
        queue |= {"metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cluster_queue}}
        self.api.put(("kueue.x-k8s.io", KUEUE_VERSION, "localqueues", namespace, name), queue)

    def step(self) -> None:
        now = self.clock()
        jobs = [
            j for kind in KINDS for j in self.api.objects(*kind) if (j["metadata"].get("labels") or {}).get(QUEUE_LABEL)
        ]
        for uid in set(self._tracks) - {j["metadata"]["uid"] for j in jobs}:
            del self._tracks[uid]
        for job in jobs:
            with self.api.lock:
                track = self._tracks.get(job["metadata"]["uid"]) or self._track(job, now)
                stages = timeline(track.story, track.timings)
                while track.applied < len(stages) and track.t0 + stages[track.applied][0] <= now:
                    offset, stage = stages[track.applied]
                    getattr(self, f"_{stage}")(track, job, track.t0 + offset)
                    track.applied += 1
                    job = self.api.get(_job_key(job)) or job
                self._follow(track, job, now)

    # ----------------------------------------------------------------- the Workload

    def _track(self, job: Obj, now: float) -> _Track:
        meta = job["metadata"]
        annotations = meta.get("annotations") or {}
        story, timings = self._plans.get((meta["namespace"], meta["name"]), (None, {}))
        if story is None:
            story = annotations.get(STORY_ANNOTATION, self.default_story)
            story = story if story in STORIES else self.default_story
            timings = {**DEFAULT_TIMINGS[story], **json.loads(annotations.get(TIMINGS_ANNOTATION, "{}"))}
        spec = lookup(job["apiVersion"], job["kind"])
        # The story starts at the job's creation, so a clock that jumped before the first step replays every stage.
        created = _parse(meta.get("creationTimestamp"))
        start = min(now, created) if created is not None else now
        track = _Track(meta["uid"], story, timings, start, workload_names(spec, meta["name"], meta["uid"])[0])
        self._tracks[track.uid] = track
        self._write(track, job, self._new_workload(track, job, start), created=start)
        return track

    def _new_workload(self, track: _Track, job: Obj, now: float) -> Obj:
        meta = job["metadata"]
        owner = {"apiVersion": job["apiVersion"], "kind": job["kind"], "name": meta["name"], "uid": meta["uid"]}
        pod_sets = [
            {"name": name, "count": count, "template": copy.deepcopy(template)}
            for name, count, template in _pod_sets_of(job)
        ]
        return {
            "apiVersion": f"kueue.x-k8s.io/{KUEUE_VERSION}",
            "kind": "Workload",
            "metadata": {
                "name": track.workload,
                "namespace": meta["namespace"],
                "labels": {"kueue.x-k8s.io/job-uid": meta["uid"]},
                "ownerReferences": [{**owner, "controller": True, "blockOwnerDeletion": True}],
            },
            "spec": {"active": True, "queueName": meta["labels"][QUEUE_LABEL], "priority": 0, "podSets": pod_sets},
            "status": {"conditions": [_condition("PodsReady", False, "WaitForStart", _NOT_READY, now)]},
        }

    def _queued(self, track: _Track, job: Obj, at: float) -> None:
        self._wait(track, job, _queued_message(job), at)

    def _refused(self, track: _Track, job: Obj, at: float) -> None:
        self._wait(track, job, _refused_message(job), at)

    def _wait(self, track: _Track, job: Obj, message: str, at: float) -> None:
        workload = self._workload(track, job)
        status = workload["status"]
        _set(status, _condition("QuotaReserved", False, "Pending", message, at))
        status["resourceRequests"] = [
            {"name": name, "resources": _requests(template, count)} for name, count, template in _pod_sets_of(job)
        ]
        self._write(track, job, workload)

    def _admitted(self, track: _Track, job: Obj, at: float, previously: str | None = None) -> None:
        workload = self._workload(track, job)
        status = workload["status"]
        status.pop("resourceRequests", None)
        assignments = [
            {"name": name, "count": count, "flavors": {"cpu": FLAVOR, "memory": FLAVOR}}
            for name, count, _ in _pod_sets_of(job)
        ]
        status["admission"] = {"clusterQueue": CLUSTER_QUEUE, "podSetAssignments": assignments}
        _set(
            status,
            _condition("QuotaReserved", True, "QuotaReserved", f"Quota reserved in ClusterQueue {CLUSTER_QUEUE}", at),
        )
        if previously is not None:
            for kind in ("Evicted", "Preempted"):
                _set(status, _condition(kind, False, "QuotaReserved", f"Previously: {previously}", at))
        _set(status, _condition("Admitted", True, "Admitted", "The workload is admitted", at))
        track.admitted_at = at
        self._write(track, job, workload)
        _suspend(self.api, job, False)

    def _preempted(self, track: _Track, job: Obj, at: float) -> None:
        workload = self._workload(track, job)
        status = workload["status"]
        message = self._preemption(track)
        status.pop("admission", None)
        status["resourceRequests"] = [
            {"name": name, "resources": _requests(template, count)} for name, count, template in _pod_sets_of(job)
        ]
        track.evictions += 1
        ran = int(at - (track.admitted_at or at))
        status["accumulatedPastExecutionTimeSeconds"] = status.get("accumulatedPastExecutionTimeSeconds", 0) + ran
        status["schedulingStats"] = {
            "evictions": [{"reason": "Preempted", "underlyingCause": "", "count": track.evictions}]
        }
        queued = _queued_message(job)
        for found in (
            _condition("QuotaReserved", False, "Pending", queued, at),
            _condition("Evicted", True, "Preempted", message, at),
            _condition("Admitted", False, "NoReservation", "The workload has no reservation", at),
            _condition("Preempted", True, "InClusterQueue", message, at),
            _condition("Requeued", True, "Preempted", message, at),
        ):
            _set(status, found)
        _set(status, _condition("PodsReady", False, "WaitForStart", _NOT_READY, at))
        self._write(track, job, workload)
        _suspend(self.api, job, True)

    def _readmitted(self, track: _Track, job: Obj, at: float) -> None:
        self._admitted(track, job, at, previously=self._preemption(track))

    def _preemption(self, track: _Track) -> str:
        return PREEMPTED.format(
            preemptor=f"preemptor-of-{track.uid[:8]}", preemptor_job="a-higher-priority-job", cq=CLUSTER_QUEUE
        )

    def _follow(self, track: _Track, job: Obj, now: float) -> None:
        """PodsReady while the job runs, Finished once it ended (Kueue copies the job's own condition's message)."""
        found = {c["type"]: c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
        ended = found.get("Succeeded") or found.get("Complete") or found.get("Failed")
        if ended is not None and "Finished" not in track.seen:
            track.seen.add("Finished")
            workload = self._workload(track, job)
            reason = "Failed" if ended["type"] == "Failed" else "Succeeded"
            _set(workload["status"], _condition("Finished", True, reason, ended.get("message", ""), now))
            self._write(track, job, workload)
        elif "Running" in found and track.admitted_at is not None and "PodsReady" not in track.seen:
            track.seen.add("PodsReady")
            workload = self._workload(track, job)
            said = "All pods reached readiness and the workload is running"
            _set(workload["status"], _condition("PodsReady", True, "Started", said, now))
            self._write(track, job, workload)

    def _workload(self, track: _Track, job: Obj) -> Obj:
        found = self.api.get(
            ("kueue.x-k8s.io", KUEUE_VERSION, "workloads", job["metadata"]["namespace"], track.workload)
        )
        assert found is not None, f"the Workload {track.workload} is gone"
        return found

    def _write(self, track: _Track, job: Obj, workload: Obj, created: float | None = None) -> None:
        """Put the Workload, held to Kueue's own schema first (a field it would refuse or prune is a defect here)."""
        namespace = job["metadata"]["namespace"]
        route = Route("kueue.x-k8s.io", KUEUE_VERSION, "workloads", namespace, track.workload)
        checked = copy.deepcopy(workload)
        validate_schema(self.api.crd(WORKLOAD.group, WORKLOAD.plural), route, checked, "Strict", track.workload)
        self.api.put(("kueue.x-k8s.io", KUEUE_VERSION, "workloads", namespace, track.workload), checked, created)


_NOT_READY = "Not all pods are ready or succeeded"


def _condition(kind: str, true: bool, reason: str, message: str, at: float) -> Obj:
    return {
        "type": kind,
        "status": "True" if true else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": rfc3339(at),
        "observedGeneration": 1,
    }


def _set(status: Obj, condition: Obj) -> None:
    """meta.SetStatusCondition: one entry per type; its time moves only when its status changes."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    for found in conditions:
        if found["type"] == condition["type"]:
            if found["status"] == condition["status"]:
                condition = {**condition, "lastTransitionTime": found["lastTransitionTime"]}
            found.clear()
            found.update(condition)
            return
    conditions.append(condition)


def _parse(value: Any) -> float | None:
    try:
        return dt.datetime.strptime(str(value), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return None


def _pod_sets_of(job: Obj) -> list[tuple[str, int, Obj]]:
    """(name, count, pod template) of each pod set, as Kueue's integrations name them."""
    spec = job["spec"]
    if job["kind"] == "PyTorchJob":
        replicas = spec["pytorchReplicaSpecs"].items()
        return [(rtype.lower(), r.get("replicas", 1), r["template"]) for rtype, r in replicas]
    return [("main", spec.get("parallelism", 1), spec["template"])]


def _cpu_milli(template: Obj) -> int:
    requested = str(((template["spec"]["containers"][0].get("resources") or {}).get("requests") or {}).get("cpu", ""))
    if requested.endswith("m"):
        return int(requested[:-1])
    return int(float(requested) * 1000) if requested else 500


def _quantity(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _requests(template: Obj, count: int) -> Obj:
    memory = ((template["spec"]["containers"][0].get("resources") or {}).get("requests") or {}).get("memory")
    return {"cpu": _quantity(_cpu_milli(template) * count), **({"memory": memory} if memory else {})}


def _queued_message(job: Obj) -> str:
    """Each pod set's wait, the CPU it still needs counted with the pod sets before it (another job holds all)."""
    clauses, needed = [], 0
    for name, count, template in _pod_sets_of(job):
        needed += _cpu_milli(template) * count
        clauses.append(QUEUED.format(pod_set=name, flavor=FLAVOR, need=_quantity(needed)))
    return "; ".join(clauses)


def _refused_message(job: Obj) -> str:
    """The first pod set past the ClusterQueue's whole quota, with what the pod sets before it asked."""
    before = 0
    for name, count, template in _pod_sets_of(job):
        asked = _cpu_milli(template) * count
        if before + asked > CAPACITY_MILLI:
            values = {"before": _quantity(before), "asked": _quantity(asked), "capacity": _quantity(CAPACITY_MILLI)}
            return REFUSED.format(pod_set=name, flavor=FLAVOR, **values)
        before += asked
    raise ValueError(f"{job['metadata']['name']} asks for no more than the ClusterQueue's {CAPACITY_MILLI}m: it fits")


def _key(job: Obj) -> tuple[str, str, str]:
    group, _, version = job["apiVersion"].rpartition("/")
    return next(k for k in KINDS if k[:2] == (group, version) and (k[2] == "jobs") is (job["kind"] == "Job"))


def _job_key(job: Obj) -> tuple[str, str, str, str, str]:
    return (*_key(job), job["metadata"]["namespace"], job["metadata"]["name"])


def _suspend(api: KubeAPI, job: Obj, suspended: bool) -> None:
    """Kueue starts and stops a job through its spec: ``runPolicy.suspend`` for the Kubeflow v1 kinds."""
    current = api.get(_job_key(job))
    if current is None or current["metadata"]["uid"] != job["metadata"]["uid"]:
        return
    *parents, last = KINDS[_key(job)]
    node = current["spec"]
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = suspended
    api.put(_job_key(current), current)


def _suspend_queued(route: Route, body: Obj) -> None:
    """Kueue's mutating webhook: a job of a kind it queues, labelled for a queue, is created suspended."""
    labels = (body.get("metadata") or {}).get("labels") or {}
    path = KINDS.get((route.group, route.version, route.plural))
    if path is not None and labels.get(QUEUE_LABEL):
        *parents, last = path
        node = body.setdefault("spec", {})
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = True
