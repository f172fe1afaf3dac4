"""What a look must read before the core can decide, and what each read is answered with.

The core reads nothing itself: its decisions are generators that yield a
``Read`` and are sent the answer (``jobsync.run.poll`` answers from the
cluster, the tests from a table).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ReadKind = Literal["again", "pods", "events", "log", "workload", "localqueue"]


@dataclass(frozen=True)
class Read:
    """One read, and what it is answered with.

    ``again``: the job once more (the API did not show it): the object, or None;
    ``pods``: the job's own pods (``JobPods``; ``tolerant``: a failure to read
    them is answered None, and the verdict stands without a result);
    ``events``: a stuck pod's events (a list); ``log``: a failed container's
    log tail (text); ``workload``: the Kueue Workload that owns the job's
    admission, tried under each of ``names`` and kept only when its controller
    reference is the job's ``uid`` (``WorkloadRead``); ``localqueue``: the
    LocalQueue ``names[0]`` (the object, or None when it cannot be read).
    """

    what: ReadKind
    pod: str = ""
    container: str = ""
    tolerant: bool = False
    uid: str = ""  # the job's, whose pods (or Workload) are read
    # The job's status: some kinds' pods are reached through an object it names (a RayJob's RayCluster).
    status: Mapping[str, Any] | None = field(default=None, compare=False)
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class WorkloadRead:
    """The answer to a ``workload`` read: the job's Workload (None: it has none yet), or why it was not read."""

    workload: Mapping[str, Any] | None = None
    error: str | None = None


# What a read answers: the job (again), the job's own pods (None after a tolerant read failed), a pod's
# events, a log, a WorkloadRead, a LocalQueue.
Answer = Any
