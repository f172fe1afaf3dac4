"""A job's pods: the pods it owns, not every pod that carries its labels.

The operator labels the pods it creates with the job's name (``KindSpec.pod_label``), but anyone
allowed to create pods in the namespace can put that label on a pod of their own. Counted as the
job's, such a pod stuck on a missing image would fail a healthy job, its termination message would
become the job's ``result``, its log the job's log tail. So labels select and ownership decides: a
labelled pod is the job's when its controller reference (the ``ownerReferences`` entry with
``controller: true``; the API server allows one) leads to the job's uid,

- directly, for the Kubeflow v1 kinds and batch/v1 Job;
- through the objects the job's controller creates (``KindSpec.via``, outermost first): a TrainJob's
  JobSet, whose batch Jobs own the pods. Each step up is resolved as Kubernetes controllers resolve a
  controller reference (the job controller's ``resolveControllerRef``): the object of that kind and
  name, read once per look, counts only when its uid is the reference's;
- or along any of several routes (``KindSpec.routes``): a RayJob's head through its RayCluster and its
  submitter through a batch Job, an MPIJob's workers directly and its launcher through a batch Job.

Every reader of pods (stuck detection, diagnostics, the log tail, the result) gets them from
``job_pods``; the pods it leaves out are named in a finding (``JobPods.notes``), so a person sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from jobsync.bodies import OwnerRef, meta
from jobsync.core.diagnostics import NOT_OWNED, JobPods
from jobsync.evaluation.kinds import KindSpec

__all__ = ["NOT_OWNED", "JobPods", "OwnerRef", "PodSource", "controller_of", "job_pods", "owned", "owner_refs"]


def owner_refs(obj: Mapping[str, Any]) -> list[OwnerRef]:
    """The object's owner references; entries that are not objects are skipped."""
    return list(meta(obj).owners)


def controller_of(obj: Mapping[str, Any]) -> OwnerRef | None:
    """The reference with ``controller: true`` (and a uid), if any: the one owner that manages the object."""
    return meta(obj).controller


Lookup = Callable[[KindSpec, str], Mapping[str, Any] | None]


def leads_to(ref: OwnerRef | None, uid: str, via: Sequence[KindSpec], lookup: Lookup) -> bool:
    """Whether the controller reference ``ref`` of an object below ``via`` leads up to the object ``uid``.

    ``lookup(kind, name)`` reads an object of ``via`` (None when there is none).
    """
    if ref is None or not uid:
        return False
    if not via:
        return ref.uid == uid
    parent = via[-1]
    if (ref.kind, ref.group) != (parent.kind, parent.group):
        return False
    owner = lookup(parent, ref.name)
    if owner is None or meta(owner).uid != ref.uid:  # another object of that name: not the one referred to
        return False
    return leads_to(controller_of(owner), uid, via[:-1], lookup)


def owned(pods: Iterable[dict[str, Any]], uid: str, via: Sequence[KindSpec], lookup: Lookup) -> JobPods:
    """``pods`` split into the job's (their controller leads to ``uid`` through ``via``) and the others."""
    return owned_through(pods, uid, (tuple(via),), lookup)


def owned_through(
    pods: Iterable[dict[str, Any]], uid: str, chains: Sequence[tuple[KindSpec, ...]], lookup: Lookup
) -> JobPods:
    """``pods`` split into the job's (their controller leads to ``uid`` through one of ``chains``) and the others."""
    mine: list[dict[str, Any]] = []
    ignored: list[str] = []
    for pod in pods:
        ref = controller_of(pod)
        if any(leads_to(ref, uid, chain, lookup) for chain in chains):
            mine.append(pod)
        else:
            ignored.append(meta(pod).name or "?")
    return JobPods(mine, tuple(ignored))


class PodSource(Protocol):
    """What reading a job's pods needs (``jobsync.run.loop.Cluster`` has it)."""

    def get(self, spec: KindSpec, namespace: str, name: str) -> dict[str, Any] | None: ...
    def list_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...


def job_pods(
    spec: KindSpec,
    namespace: str,
    name: str,
    uid: str,
    cluster: PodSource,
    status: Mapping[str, Any] | None = None,
) -> JobPods | None:
    """The pods of the job ``uid`` (kind ``spec``, ``namespace/name``); None for a kind without pods (SageMaker).

    One LIST by the kind's label (one per route, for a kind with several; a route the job's ``status``
    does not name yet is skipped); for a kind with ``via``, one GET per object between the job and its
    pods that a labelled pod names (a TrainJob: its JobSet, and each of the JobSet's batch Jobs).
    """
    routes = spec.pod_routes
    if not routes:
        return None
    read: dict[tuple[str, str, str], Mapping[str, Any] | None] = {}

    def lookup(part: KindSpec, part_name: str) -> Mapping[str, Any] | None:
        key = (part.group, part.kind, part_name)
        if key not in read:
            read[key] = cluster.get(part, namespace, part_name)
        return read[key]

    found: list[JobPods] = []
    for route in routes:
        selector = route.selector(name, status)
        if selector is not None:
            found.append(owned_through(cluster.list_pods(namespace, selector), uid, route.chains, lookup))
    if len(found) == 1:
        return found[0]
    mine = {meta(pod).name: pod for part in found for pod in part.pods}
    ignored = dict.fromkeys(pod for part in found for pod in part.ignored if pod not in mine)
    return JobPods(list(mine.values()), tuple(ignored))
