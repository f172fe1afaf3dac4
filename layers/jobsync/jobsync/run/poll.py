"""A look at the job: the reads around the core's one decision (``jobsync.core.step``).

The look GETs the job (and in watch mode holds a watch on it until its phase
changes), then hands what it read to ``step`` with the time; whatever else
the verdict needs (a second GET of a missing job, a queued job's Kueue Workload
and LocalQueue, the job's own pods, a stuck pod's events, a failed container's
log) ``step`` asks for as it decides, and the look reads it. The decision is
the core's, made once; the reads are the look's.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import replace
from typing import Any

from jobsync import clock
from jobsync.bodies import meta
from jobsync.core import queue
from jobsync.core.diagnostics import JobPods
from jobsync.core.ours import allowed_spec
from jobsync.core.reads import WorkloadRead
from jobsync.core.state import LoopState
from jobsync.core.step import Read, Step, decide, step
from jobsync.core.wait import watch_hold
from jobsync.errors import TransientClusterError, WatchExpired
from jobsync.evaluation import evaluate
from jobsync.evaluation.kinds import KindSpec
from jobsync.evaluation.phase import Phase
from jobsync.run import pods
from jobsync.run.loop import Cluster
from jobsync.settings import Settings

logger = logging.getLogger(__name__)


def poll(state: LoopState, cluster: Cluster, settings: Settings) -> LoopState:
    """One look at the job: the next loop state (its verdict, what the pods say of it, the next wait).

    A 404 that is not this job's (the resource type's, while a CRD is being
    re-established) is TransientClusterError, retried (``KubeJobs.get``).
    """
    return look(state, cluster, settings).state


def look(state: LoopState, cluster: Cluster, settings: Settings, adopted: bool = False) -> Step:
    """One look's whole decision (``poll`` returns its state). ``adopted``: a job named to wait for, not
    created by the execution (``jobsync.core.ours``; ``jobsync.run.wait``)."""
    spec = allowed_spec(state.job, settings)
    obj = cluster.get(spec, state.job.namespace, state.job.name)
    watched = 0.0
    if obj is not None and settings.wait.watch_seconds:
        obj, watched = _watch_for_change(cluster, spec, state, obj, settings)
    looking = step(state, obj, clock.now(), settings, watched, adopted=adopted)
    return decide(looking, lambda read: _read(read, spec, state, cluster, settings))


def _read(read: Read, spec: KindSpec, state: LoopState, cluster: Cluster, settings: Settings) -> Any:
    """What ``read`` asks for, from the cluster."""
    job = state.job
    if read.what == "again":
        return cluster.get(spec, job.namespace, job.name)
    if read.what == "pods":
        try:
            found = pods.job_pods(spec, job.namespace, job.name, read.uid, cluster, read.status)
        except Exception as exc:
            if not read.tolerant:
                raise
            # The result is a bonus: a failure to read the pods never turns a verdict into an error.
            logger.warning(
                "job result not read; the result is null",
                extra={"kind": spec.kind, "job": f"{job.namespace}/{job.name}", "error": type(exc).__name__},
            )
            return None
        return found if found is not None else JobPods([])
    if read.what == "events":
        return cluster.list_events(job.namespace, read.pod)
    if read.what == "workload":
        return _workload(read, job.namespace, cluster)
    if read.what == "localqueue":
        try:
            return cluster.get(queue.LOCAL_QUEUE, job.namespace, read.names[0])
        except Exception as exc:  # its ClusterQueue is a bonus: the message names the LocalQueue alone
            logger.warning("LocalQueue not read", extra={"localQueue": read.names[0], "error": type(exc).__name__})
            return None
    return cluster.read_log(job.namespace, read.pod, read.container, settings.starts.log_tail_bytes)


# Kueue v0.19 serves Workloads as v1beta2 (v1beta1 deprecated); Kueue before v0.15 as v1beta1 only.
_WORKLOAD_VERSIONS = (queue.WORKLOAD, replace(queue.WORKLOAD, api_version="kueue.x-k8s.io/v1beta1"))


def _workload(read: Read, namespace: str, cluster: Cluster) -> WorkloadRead:
    """The job's Workload under the names Kueue gives it, owned by the job's uid; what went wrong, if a read did.

    Never raises: a Workload that cannot be read (403 without the chart's kueueEnabled, an API in trouble)
    leaves the job queued, with the reason in its message.
    """
    for spec in _WORKLOAD_VERSIONS:
        try:
            for name in read.names:
                found = cluster.get(spec, namespace, name)
                owner = meta(found).controller if found is not None else None
                if found is not None and owner is not None and owner.uid == read.uid:
                    return WorkloadRead(found)
            return WorkloadRead()
        except TransientClusterError as exc:
            if "404" in str(exc) and spec is _WORKLOAD_VERSIONS[0]:
                continue  # not served as v1beta2: an older Kueue
            return WorkloadRead(error=_why(exc))
        except Exception as exc:
            return WorkloadRead(error=_why(exc))
    return WorkloadRead(error="the API serves no Workloads (kueue.x-k8s.io): is Kueue installed?")


def _why(exc: Exception) -> str:
    logger.warning("Workload not read", extra={"error": type(exc).__name__})
    return f"{type(exc).__name__}: {exc}"[:300]


def _watch_for_change(
    cluster: Cluster, spec: KindSpec, state: LoopState, obj: dict[str, Any], settings: Settings
) -> tuple[dict[str, Any] | None, float]:
    """(the job as last seen, or None if it was deleted; seconds spent) after watching for a phase change,
    no longer than the core allows (``jobsync.core.wait.watch_hold``)."""
    started = clock.now()
    seen = evaluate(obj)
    before = (seen.phase, seen.reason)
    hold = watch_hold(state, seen.phase, started, settings)
    if hold < 1:
        return obj, 0.0
    current: dict[str, Any] | None = obj
    # From the GET's version, so no change after the GET is missed. A version that has left the
    # API's window (410, after enough unrelated writes) is expected: the GET's verdict stands and
    # the watch starts again from now (the API then sends the job as it is first), never again
    # from the expired version.
    version = meta(obj).resource_version
    while True:
        try:
            changed = _watch(cluster, spec, state, version, before, hold - (clock.now() - started))
        except WatchExpired:
            if not version:
                break
            version = ""
            continue
        if changed is not _NO_CHANGE:
            current = changed
        break
    return current, clock.now() - started


_NO_CHANGE: dict[str, Any] = {}  # a marker, compared by identity


def _watch(
    cluster: Cluster, spec: KindSpec, state: LoopState, version: str, before: tuple[Phase, str], hold: float
) -> dict[str, Any] | None:
    """The job once its phase or reason differs from ``before`` (None once deleted), or its last state when
    the watch ends. A new reason in the same phase (a restart: RUNNING, PyTorchJobRestarting) is news too.

    ``_NO_CHANGE`` when the watch saw no event at all (or had no time left).
    """
    if hold < 1:
        return _NO_CHANGE
    current: dict[str, Any] | None = _NO_CHANGE
    events = cluster.watch(spec, state.job.namespace, state.job.name, version, int(hold))
    with contextlib.closing(events):  # stop watching as soon as we know
        for event_type, changed in events:
            if event_type == "DELETED":
                return None
            current = changed
            now_seen = evaluate(changed)
            if (now_seen.phase, now_seen.reason) != before:
                break
    return current
