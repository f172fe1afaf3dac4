"""What the training-operator, the job controller and the kubelet write, as ``harness.operator_sim`` writes it.

Condition handling copies the training-operator's pkg/util/status.go; pods, their container states and the
termination message look like what the kubelet reports (the e2e tier checks them against the real ones).
Each kind the simulator runs is one ``Operator`` row: the six Kubeflow training-operator v1 kinds (their
replica specs, replica types, container and condition words), and ``batch/v1`` Job (the job controller's
pods: one template, ``parallelism`` of them, a generated name each).
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

GROUP, VERSION, PLURAL, KIND = "kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"


@dataclass(frozen=True)
class Operator:
    """What differs between the kinds the simulator runs."""

    group: str
    version: str
    plural: str
    kind: str
    replica_specs: str | None  # the spec's field of replica specs; None: a batch/v1 Job
    types: tuple[str, ...]  # the replica types, in the order the leading replica is looked for
    container: str  # the main container's name (the operator's default); a Job's is its template's first
    controller: str = ""  # the operator-name label

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def batch(self) -> bool:
        return self.replica_specs is None


def _kubeflow(kind: str, field: str, types: tuple[str, ...], container: str) -> Operator:
    return Operator(
        "kubeflow.org", "v1", kind.lower() + "s", kind, field, types, container, f"{kind.lower()}-controller"
    )


OPERATORS: tuple[Operator, ...] = (
    _kubeflow("PyTorchJob", "pytorchReplicaSpecs", ("Master", "Worker"), "pytorch"),
    _kubeflow("TFJob", "tfReplicaSpecs", ("Chief", "Master", "Worker", "PS", "Evaluator"), "tensorflow"),
    _kubeflow("MPIJob", "mpiReplicaSpecs", ("Launcher", "Worker"), "mpi"),
    _kubeflow("XGBoostJob", "xgbReplicaSpecs", ("Master", "Worker"), "xgboost"),
    _kubeflow("PaddleJob", "paddleReplicaSpecs", ("Master", "Worker"), "paddle"),
    _kubeflow("JAXJob", "jaxReplicaSpecs", ("Worker",), "jax"),
    Operator("batch", "v1", "jobs", "Job", None, ("",), ""),
)
_BY_KIND = {(op.api_version, op.kind): op for op in OPERATORS}


def operator_of(job: Obj) -> Operator:
    """The row of the job's kind; PyTorchJob's for an object that names none it knows."""
    return _BY_KIND.get((str(job.get("apiVersion")), str(job.get("kind"))), OPERATORS[0])


# What the leading replica's container writes to /dev/termination-log: the pod's
# state.terminated.message once it ends, kept to its last 4096 bytes as the kubelet does
# (tail.ReadAtMost), unless TERMINATION_UNCAPPED_ANNOTATION is "true" (to test jobsync's own bound).
TERMINATION_MESSAGE_ANNOTATION = "jobsync.local/termination-message"
TERMINATION_UNCAPPED_ANNOTATION = "jobsync.local/termination-message-uncapped"
KUBELET_MESSAGE_BYTES = 4096
CONTAINER = "pytorch"
LABEL_PREFIX = "training.kubeflow.org"


UNSCHEDULABLE_MESSAGE = (
    "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. "
    "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
)

NO_FIT_MESSAGE = (
    "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
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
    """{"Master": 1, "Worker": N} from the spec; a missing replicas field means 1, as the operator defaults it.

    A batch/v1 Job: {"": parallelism} (1 when unset).
    """
    op = operator_of(job)
    spec = job.get("spec") or {}
    if op.batch:
        parallelism = spec.get("parallelism", 1)
        return {"": int(parallelism) if parallelism is not None else 1}
    specs = spec.get(op.replica_specs or "") or {}
    out = {}
    for rtype in sorted(specs, key=lambda t: op.types.index(t) if t in op.types else len(op.types)):
        replicas = (specs[rtype] or {}).get("replicas", 1)
        out[rtype] = int(replicas) if replicas is not None else 1
    return out


def _template_spec(job: Obj, rtype: str) -> Obj:
    op = operator_of(job)
    spec = job.get("spec") or {}
    template = (
        spec.get("template")
        if op.batch
        else ((spec.get(op.replica_specs or "") or {}).get(rtype) or {}).get("template")
    )
    return (template or {}).get("spec") or {}


def container_name(job: Obj, rtype: str = "") -> str:
    """The main container's name: the operator's default for a Kubeflow kind, a Job template's first container's."""
    op = operator_of(job)
    if not op.batch:
        return op.container
    containers = _template_spec(job, rtype).get("containers") or [{}]
    return str(containers[0].get("name") or "main")


def _container_spec(job: Obj, rtype: str) -> Obj:
    name = container_name(job, rtype)
    containers = _template_spec(job, rtype).get("containers") or [{}]
    chosen = next((c for c in containers if c.get("name") == name), containers[0])
    return {**copy.deepcopy(chosen), "name": name}


def _pod_name(job: str, rtype: str, index: int, uid: str = "") -> str:
    """``<job>-<type>-<index>`` as the training-operator names a replica's pod; a Job's pod gets a suffix of its
    own (the job controller's is random; here it derives from the job's uid, so a run is reproducible)."""
    if not rtype:
        suffix = hashlib.sha256(f"{uid}/{index}".encode()).hexdigest()
        return f"{job}-{''.join('bcdfghjklmnpqrstvwxz2456789'[int(c, 16)] for c in suffix[:5])}"
    return f"{job}-{rtype.lower()}-{index}"


def pod_name(job: Obj, rtype: str, index: int) -> str:
    """The name of the job's pod for replica ``rtype`` ``index`` (see ``_pod_name``)."""
    meta = job["metadata"]
    return _pod_name(meta["name"], rtype, index, meta.get("uid", ""))


def build_pod(job: Obj, rtype: str, index: int, at: str) -> Obj:
    """A pod as the operator (or the job controller) creates it: labels, owner reference, the replica's template."""
    meta = job["metadata"]
    op = operator_of(job)
    if op.batch:
        labels = {
            "batch.kubernetes.io/job-name": meta["name"],
            "job-name": meta["name"],
            "batch.kubernetes.io/controller-uid": meta["uid"],
            "controller-uid": meta["uid"],
        }
    else:
        labels = {
            f"{LABEL_PREFIX}/job-name": meta["name"],
            f"{LABEL_PREFIX}/operator-name": op.controller,
            f"{LABEL_PREFIX}/replica-type": rtype.lower(),
            f"{LABEL_PREFIX}/replica-index": str(index),
        }
        if rtype == op.types[0] and len(op.types) > 1:
            labels[f"{LABEL_PREFIX}/job-role"] = "master"
    owner = {
        "apiVersion": op.api_version,
        "kind": op.kind,
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
            "name": pod_name(job, rtype, index),
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [owner],
        },
        "spec": {"containers": [container], "restartPolicy": "Never", "schedulerName": "default-scheduler"},
        "status": pod_status("pending", container.get("image", ""), at, container=container["name"]),
    }


def _cond(ctype: str, status: str, at: str, **extra: str) -> Obj:
    return {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": at, **extra}


def pod_status(state: str, image: str, at: str, restarts: int = 0, container: str = CONTAINER) -> Obj:
    """What the kubelet reports for a pod in ``state`` (its one container named ``container``)."""
    name = container
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
    container: Obj = {"name": name, "image": image, "imageID": "", "restartCount": restarts}
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


def _leader(job: Obj) -> tuple[str, int]:
    """The leading replica: the first of the kind's types the job has, index 0 (PyTorchJob: Master, else Worker):
    the pod whose termination message is the job's result."""
    replicas = _replicas(job)
    return next(((rtype, 0) for rtype in operator_of(job).types if rtype in replicas), (next(iter(replicas), ""), 0))


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


def _failing_type(job: Obj) -> str:
    """The replica type whose first pod fails: a worker when there is one, else the leader."""
    return "Worker" if _replicas(job).get("Worker") else _leader(job)[0]


def _training_log(rtype: str, index: int, done: bool) -> str:
    lines = [
        f"INFO: {(rtype or 'pod').lower()}-{index} starting, WORLD_SIZE and RANK from the operator's environment",
        "Train Epoch: 1 [0/60000 (0%)]\tloss=2.3000",
        "Train Epoch: 1 [6400/60000 (11%)]\tloss=0.6412",
    ]
    if done:
        lines += ["Train Epoch: 1 [59520/60000 (99%)]\tloss=0.0716", "accuracy=0.9764", "Training finished."]
    return "\n".join(lines) + "\n"
