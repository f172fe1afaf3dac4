"""The sweeper: one scheduled look per cluster, instead of one safety poll per waiting execution.

In callback mode an execution waits on a task token that the notifier's event
resumes. What no event announces, and what a dead notifier leaves unsaid, the
stack's sweeper finds (template.yaml's SweepFunction, every SweepMinutes). Each run:

1. reads the executions that wait: the token store's items (``TokenStore.waiting``);
   with none, it stops there, without a request to the cluster;
2. lists each allowed kind's jobsync jobs in the namespace once, in pages,
   keeping only what it needs of the waiting executions' jobs
   (``jobsync.core.sweep.Seen``);
3. looks at the jobs the core says to (``jobsync.core.sweep.why_look``) and
   leaves every other execution alone. A look is one ordinary poll
   (``jobsync.run.callback.settle``): a job that ended resumes the execution
   with the look's verdict, Cause and result; any other look keeps its loop
   state in the store, conditionally on the token it read.

A job that is not ours may show in the LIST (its labels say jobsync), but it is
never looked at, let alone touched.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from jobsync import clock
from jobsync.aws.tokens import TaskTokens, TokenStore, Waiting
from jobsync.cluster.paging import Listing
from jobsync.core.ours import MANAGED_BY
from jobsync.core.outcome import Phase
from jobsync.core.sweep import Seen, why_look
from jobsync.evaluation.kinds import KindSpec
from jobsync.run.callback import settle
from jobsync.run.loop import Cluster
from jobsync.settings import Settings

logger = logging.getLogger(__name__)

SELECTOR = f"{MANAGED_BY}=jobsync"
# Seconds a run keeps for itself after its last look: the Lambda's answer and the metrics.
MARGIN_SECONDS = 10.0
# Looks a run reports one by one (the rest are only counted): its answer and log line stay small.
REPORTED_LOOKS = 50


class SweptCluster(Cluster, Protocol):
    """What the sweeper asks of the cluster: a poll's calls, and one paged LIST per kind."""

    def list_job_pages(
        self, spec: KindSpec, namespace: str, label_selector: str, pick: Callable[[dict[str, Any]], Any]
    ) -> Listing[Any]: ...


@dataclass
class Sweep:
    """What one run did."""

    waiting: int = 0
    lists: int = 0
    pages: int = 0
    looked: int = 0
    resumed: int = 0
    failed_starts: int = 0
    not_ours: int = 0
    left_for_next_run: int = 0
    errors: int = 0
    looks: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def sweep(
    cluster: SweptCluster,
    settings: Settings,
    store: TokenStore,
    tokens: TaskTokens,
    time_left: Callable[[], float] | None = None,
) -> Sweep:
    """One run of the sweeper (see the module docstring); ``time_left()`` is the Lambda's remaining time."""
    report = Sweep()
    if not settings.wait.sweeps:
        logger.warning("no sweep: the deployment is not in callback mode with a sweep interval")
        return report
    waiting = store.waiting()
    report.waiting = len(waiting)
    if not waiting:
        return report
    seen = _list_jobs(cluster, settings, waiting, report)
    now = clock.now()
    due = []
    for each in waiting:
        job = each.state.job
        if settings.allowed(job.apiVersion, job.kind) is None:
            continue  # a kind this deployment no longer allows: not listed, and never looked at here
        found = seen.get((job.apiVersion, job.kind, job.name))
        if found is not None and not found.belongs_to(each.state):
            report.not_ours += 1
        why = why_look(each.state, found, now, settings)
        if why is not None:
            due.append((each, why, found is not None and found.terminal))
    # The ended jobs first: an execution waiting for an end that already came is the costliest to keep waiting.
    due.sort(key=lambda item: (not item[2], item[0].state.sweepAt is None, item[0].state.sweepAt or 0))
    # A run ends before the next one starts, and within the Lambda's own time.
    ends = time.monotonic() + max(1.0, settings.sweep_seconds - MARGIN_SECONDS)
    for index, (each, why, _) in enumerate(due):
        left = ends - time.monotonic()
        if time_left is not None:
            left = min(left, time_left() - MARGIN_SECONDS)
        if left <= 0:
            report.left_for_next_run = len(due) - index
            logger.warning("sweep out of time", extra={"left": report.left_for_next_run})
            break
        _look(cluster, settings, store, tokens, each, why, report)
    return report


def _list_jobs(
    cluster: SweptCluster, settings: Settings, waiting: Sequence[Waiting], report: Sweep
) -> dict[tuple[str, str, str], Seen]:
    """One LIST per allowed kind that a waiting execution's job is of; what it showed of those jobs, by name."""
    names: dict[tuple[str, str], set[str]] = {}
    for each in waiting:
        job = each.state.job
        names.setdefault((job.apiVersion, job.kind), set()).add(job.name)
    seen: dict[tuple[str, str, str], Seen] = {}
    for (api_version, kind), wanted in sorted(names.items()):
        spec = settings.allowed(api_version, kind)
        if spec is None or not spec.plural:
            continue  # not a kind this deployment may touch: its Await's own look says so

        def pick(obj: dict[str, Any], wanted: set[str] = wanted) -> Seen | None:
            name = (obj.get("metadata") or {}).get("name")
            return Seen.of(obj) if name in wanted else None

        listing = cluster.list_job_pages(spec, settings.namespace, SELECTOR, pick)
        report.lists += 1
        report.pages += listing.pages
        for found in listing.kept:
            seen[(api_version, kind, found.name)] = found
    return seen


def _look(
    cluster: SweptCluster,
    settings: Settings,
    store: TokenStore,
    tokens: TaskTokens,
    waiting: Waiting,
    why: str,
    report: Sweep,
) -> None:
    """One ordinary look; a failure is this execution's alone (logged, the run goes on)."""
    report.looked += 1
    try:
        outcome = settle(waiting, cluster, settings, store, tokens)
    except Exception as exc:  # the next run, or the Await's backstop, looks again
        report.errors += 1
        logger.warning(
            "sweeper look failed",
            extra={"execution": waiting.execution, "error": type(exc).__name__, "detail": str(exc)[:500]},
        )
        return
    phase = outcome.state.phase if outcome.state else None
    if outcome.resumed:
        report.resumed += 1
        if phase == Phase.FAILED and waiting.state.phase in (Phase.PENDING, Phase.UNKNOWN):
            report.failed_starts += 1
    if len(report.looks) < REPORTED_LOOKS:
        report.looks.append(
            {
                "execution": waiting.execution,
                "why": why,
                "phase": str(phase) if phase is not None else None,
                "resumed": outcome.resumed,
                "what": outcome.why,
            }
        )
