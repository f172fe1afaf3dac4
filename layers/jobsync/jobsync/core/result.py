"""A finished job's ``result``: the termination message of its leading replica, or what its status carries.

A container leaves a short result the Kubernetes way: it writes its
termination message (``terminationMessagePath``, /dev/termination-log by
default) and the kubelet copies it, at most 4096 bytes, into the pod's
``status.containerStatuses[].state.terminated.message`` (also
``lastState.terminated.message`` once it restarted). When a job ends as
SUCCEEDED or FAILED, the message of its *leading replica* becomes the loop
state's ``result``, and so the execution's output (or its failure's Cause):

- PyTorchJob: Master, else Worker 0; MPIJob: Launcher; TFJob: Chief, else
  Master, else Worker 0; XGBoostJob: Master; PaddleJob: Master, else Worker 0;
  JAXJob: Worker 0 (the training-operator's labels
  ``training.kubeflow.org/replica-type`` and ``/replica-index``);
- TrainJob (Trainer v2): the trainer node's rank 0 pod (the JobSet's
  ``trainer`` step, or its ``node`` replicated job, job index 0, completion
  index 0);
- JobSet: the first pod of its first Job (global job index 0, completion
  index 0); MPIJob (mpi-operator, ``kubeflow.org/v2beta1``): the launcher;
- RayJob: the submitter (its batch Job's pod, else the head pod's submitter
  sidecar), container ``ray-job-submitter``: the entrypoint itself runs as a
  Ray job, not in a container of its own; SparkApplication: the driver
  (``spark-kubernetes-driver``); Volcano Job: task index 0 of the task named
  ``master``, ``chief``, ``head``, ``launcher`` or ``driver`` (the names its
  distributed-framework plugins use), else of its only task;
- batch/v1 Job: the pod with completion index 0 of an Indexed Job, else the
  latest pod that succeeded (else the latest pod);
- SageMaker kinds (no pods in the cluster): ``{"modelUri": ..., "metrics":
  {name: value}}`` from the status, when it has either.

The container read is the kind's main one (``pytorch``, ``tensorflow``,
``mpi``, ``xgboost``, ``paddle``, ``jax``, ``node``), else the first one
that terminated with a message. Only that field is read, never a log (logs
can hold secrets); with ``terminationMessagePolicy: FallbackToLogsOnError``
the kubelet itself puts the log's tail there, the user's choice.

The message becomes a value by :func:`parse_message`: JSON when it is JSON,
else its text, bounded (see there). Only the job's own pods count
(``jobsync.run.pods``: their controller reference leads to the job), never a
pod that merely carries its labels. Reading it never fails a run: a pod that
is gone gives None, and so does a failure to list the pods (the look logs it,
``jobsync.core.verdict``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jobsync.bodies import meta
from jobsync.evaluation.kinds import KindSpec

# The kubelet's bound (MaxContainerTerminationMessageLength); a message past it did not come from a kubelet.
MAX_RESULT_BYTES = 4096
# How much of a message past the bound is kept, as text, in ``{"truncated": true, ...}``.
TRUNCATED_TEXT_BYTES = 1024
# Characters that do not occur in text: C0 controls other than tab and newlines, DEL, and the
# replacement character the API server writes for bytes that are not UTF-8.
_TEXT_CONTROLS = frozenset(chr(c) for c in (*range(0x20), 0x7F)) - {"\t", "\n", "\r"}
_REPLACEMENT = "\ufffd"

_REPLICA_TYPE = "training.kubeflow.org/replica-type"
_REPLICA_INDEX = "training.kubeflow.org/replica-index"
_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
_JOBSET_STEP = "trainer.kubeflow.org/trainjob-ancestor-step"
_JOBSET_REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
_JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
_JOBSET_GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"
_BATCH_JOB_NAME = "batch.kubernetes.io/job-name"
_VOLCANO_TASK = "volcano.sh/task-spec"
_VOLCANO_INDEX = "volcano.sh/task-index"


Pods = list[Mapping[str, Any]]


@dataclass(frozen=True)
class Leader:
    """Which pods lead a kind's job, in order of preference, and the name of its main container.

    ``pick`` chooses them for kinds that label their pods their own way.
    """

    replicas: tuple[str, ...]  # the training-operator's replica types (lower case), tried in order
    container: str | None
    pick: Callable[[Pods], Pods] | None = None


def _labelled(pods: Pods, label: str, values: Iterable[str]) -> Pods:
    """The pods whose ``label`` is the first of ``values`` any pod has."""
    for value in values:
        if found := [p for p in pods if str(_labels(p).get(label, "")) == value]:
            return found
    return []


def _jobset_leader(pods: Pods) -> Pods:
    return [p for p in pods if _index(p, _JOBSET_GLOBAL_INDEX) == "0" and _index(p, _COMPLETION_INDEX) == "0"]


def _ray_leader(pods: Pods) -> Pods:
    return [p for p in pods if _BATCH_JOB_NAME in _labels(p)] or _labelled(pods, "ray.io/node-type", ("head",))


def _volcano_leader(pods: Pods) -> Pods:
    tasks = {str(_labels(p).get(_VOLCANO_TASK, "")) for p in pods}
    leading = _labelled(pods, _VOLCANO_TASK, ("master", "chief", "head", "launcher", "driver"))
    if not leading and len(tasks) == 1:
        leading = pods
    return [p for p in leading if _index(p, _VOLCANO_INDEX) == "0"]


LEADERS: dict[tuple[str, str], Leader] = {
    ("kubeflow.org/v1", "PyTorchJob"): Leader(("master", "worker"), "pytorch"),
    ("kubeflow.org/v1", "TFJob"): Leader(("chief", "master", "worker"), "tensorflow"),
    ("kubeflow.org/v1", "MPIJob"): Leader(("launcher",), "mpi"),
    ("kubeflow.org/v1", "XGBoostJob"): Leader(("master",), "xgboost"),
    ("kubeflow.org/v1", "PaddleJob"): Leader(("master", "worker"), "paddle"),
    ("kubeflow.org/v1", "JAXJob"): Leader(("worker",), "jax"),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): Leader((), "node"),
    ("batch/v1", "Job"): Leader((), None),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): Leader((), None, _jobset_leader),
    ("kubeflow.org/v2beta1", "MPIJob"): Leader(
        (), None, lambda pods: _labelled(pods, "training.kubeflow.org/job-role", ("launcher",))
    ),
    ("ray.io/v1", "RayJob"): Leader((), "ray-job-submitter", _ray_leader),
    ("sparkoperator.k8s.io/v1beta2", "SparkApplication"): Leader(
        (), "spark-kubernetes-driver", lambda pods: _labelled(pods, "spark-role", ("driver",))
    ),
    ("batch.volcano.sh/v1alpha1", "Job"): Leader((), None, _volcano_leader),
}
# The Trainer v2 runtimes name the trainer's replicated job "node" (older ones "trainer-node").
_TRAINER_REPLICATED_JOBS = ("node", "trainer-node")


# --------------------------------------------------------------------------- the message as a value


def parse_message(message: Any) -> Any:
    """A termination message as a value; never raises.

    - empty or missing: None;
    - not text (a control character, or U+FFFD where the bytes were not
      UTF-8, save the up to 3 the kubelet's cut leaves at the start):
      ``{"binary": true, "bytes": N}``, no content;
    - over ``MAX_RESULT_BYTES`` of UTF-8: not parsed, ``{"truncated": true,
      "bytes": N, "text": <its first TRUNCATED_TEXT_BYTES, cut on a character>}``;
    - valid JSON (any value; NaN and Infinity are not JSON): the value, unless
      a number in it is out of a double's range (``{"accuracy": 1e999}`` would
      become Infinity, which no JSON can carry to Step Functions or
      EventBridge): then the whole message is its text, as below;
    - otherwise the text, without surrounding whitespace (``echo ok >
      /dev/termination-log`` gives ``"ok"``).

    Every value it returns is strict JSON (``jobsync.strict_json``).
    """
    if message is None:
        return None
    if isinstance(message, bytes | bytearray):
        size, text = len(message), bytes(message).decode("utf-8", errors="replace")
    elif isinstance(message, str):
        size, text = len(message.encode("utf-8", errors="surrogatepass")), message
    else:
        return None  # not what the API serves in that field
    if not text:
        return None
    # The kubelet keeps a long message's last 4096 bytes, which may start inside a character: the
    # API server then writes U+FFFD for its first bytes. That cut is not binary content.
    text = text[min(3, len(text) - len(text.lstrip(_REPLACEMENT))) :]
    if _REPLACEMENT in text or any(ch in _TEXT_CONTROLS for ch in text) or _has_surrogate(text):
        return {"binary": True, "bytes": size}
    if size > MAX_RESULT_BYTES:
        head = text.encode("utf-8")[:TRUNCATED_TEXT_BYTES].decode("utf-8", errors="ignore")
        return {"truncated": True, "bytes": size, "text": head}
    try:
        return json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except (ValueError, RecursionError):
        stripped = text.strip()
        return stripped or None


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(number: str) -> float:
    value = float(number)
    if not math.isfinite(value):
        raise ValueError(f"{number} is out of a double's range")
    return value


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


# --------------------------------------------------------------------------- which pod, which container


def _labels(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return meta(pod).labels


def _index(pod: Mapping[str, Any], label: str) -> str:
    return str(_labels(pod).get(label, "0"))


def _latest_first(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Pods that succeeded first, then by creation time, the latest first (a replaced pod's newer copy)."""

    def key(pod: Mapping[str, Any]) -> tuple[bool, str]:
        succeeded = (pod.get("status") or {}).get("phase") == "Succeeded"
        return succeeded, str(meta(pod).creation_timestamp or "")

    return sorted(pods, key=key, reverse=True)


def leading_pods(spec: KindSpec, pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods of the job's leading replica, the best first; empty when there is none (or the kind is unknown)."""
    leader = LEADERS.get((spec.api_version or "", spec.kind))
    pods = list(pods)
    if leader is None:
        return []
    if leader.pick is not None:
        return _latest_first(leader.pick(pods))
    if leader.replicas:
        for replica in leader.replicas:
            found = [
                p
                for p in pods
                if str(_labels(p).get(_REPLICA_TYPE, "")).lower() == replica and _index(p, _REPLICA_INDEX) == "0"
            ]
            if found:
                return _latest_first(found)
        return []
    if spec.kind == "TrainJob":
        trainer = [p for p in pods if _labels(p).get(_JOBSET_STEP) == "trainer"]
        if not trainer:
            trainer = [p for p in pods if _labels(p).get(_JOBSET_REPLICATED_JOB) in _TRAINER_REPLICATED_JOBS]
        rank0 = [p for p in trainer if _index(p, _JOBSET_JOB_INDEX) == "0" and _index(p, _COMPLETION_INDEX) == "0"]
        return _latest_first(rank0)
    indexed = [p for p in pods if _COMPLETION_INDEX in _labels(p)]
    if indexed:
        return _latest_first(p for p in indexed if _index(p, _COMPLETION_INDEX) == "0")
    return _latest_first(pods)


def _message_of(status: Mapping[str, Any]) -> Any:
    for key in ("state", "lastState"):
        terminated = (status.get(key) or {}).get("terminated") or {}
        message = terminated.get("message")
        if message:
            return message
    return None


def termination_message(pod: Mapping[str, Any], container: str | None) -> Any:
    """The termination message of the pod's main container ``container``, else of the first one that left one."""
    statuses = [s for s in (pod.get("status") or {}).get("containerStatuses") or [] if isinstance(s, Mapping)]
    if container is not None:
        for status in statuses:
            if status.get("name") == container and (message := _message_of(status)):
                return message
    for status in statuses:
        if message := _message_of(status):
            return message
    return None


def from_pods(spec: KindSpec, pods: Iterable[Mapping[str, Any]]) -> Any:
    """The result of a job whose pods are ``pods``: its leading replica's message as a value, or None."""
    leader = LEADERS.get((spec.api_version or "", spec.kind))
    container = leader.container if leader else None
    for pod in leading_pods(spec, pods):
        message = termination_message(pod, container)
        if message:
            return parse_message(message)
    return None


# --------------------------------------------------------------------------- SageMaker: from the status


def from_status(obj: Mapping[str, Any]) -> Any:
    """``{"modelUri": ..., "metrics": {...}}`` from a SageMaker job's status, or None when it has neither.

    The model: ACK's ``status.modelArtifacts.s3ModelArtifacts``, the SageMaker
    operator's ``status.modelPath``. The metrics: ``status.finalMetricDataList``
    (``[{"metricName", "value"}]``, as DescribeTrainingJob gives it) where the
    status carries it, and a tuning job's best objective
    (``bestTrainingJob.finalHyperParameterTuningJobObjectiveMetric``).
    """
    status = obj.get("status")
    if not isinstance(status, Mapping):
        return None
    out: dict[str, Any] = {}
    artifacts = status.get("modelArtifacts")
    uri = artifacts.get("s3ModelArtifacts") if isinstance(artifacts, Mapping) else None
    uri = uri or status.get("modelPath")
    if isinstance(uri, str) and uri:
        out["modelUri"] = uri
    metrics: dict[str, Any] = {}
    listed = status.get("finalMetricDataList")
    best = status.get("bestTrainingJob")
    objective = best.get("finalHyperParameterTuningJobObjectiveMetric") if isinstance(best, Mapping) else None
    for metric in [*(listed if isinstance(listed, list) else []), objective]:
        if isinstance(metric, Mapping) and isinstance(metric.get("metricName"), str):
            value = metric.get("value")
            if isinstance(value, int | float) and not isinstance(value, bool):
                metrics[metric["metricName"]] = value
    if metrics:
        out["metrics"] = metrics
    return out or None
