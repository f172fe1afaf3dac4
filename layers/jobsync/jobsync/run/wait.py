"""Wait for a job on a cluster, without AWS: the looks a run makes, with the execution taken out.

``wait`` names a job on a cluster (a kubeconfig's, or any ``KubeJobs``) and
looks at it as an execution's Status step does (``jobsync.run.poll.look``: the
core's one decision, ``jobsync.core.step``): the same verdict, the same
stuck-start rules and their graces (counted from the job's creation, as a run
counts them from its Submit), the same waits between looks (watch mode by
default: each look holds a watch until the job changes), the same result, log
tail and diagnostics once it ends. It never changes the job: no cleanup, no
delete.

A job jobsync submitted carries its execution (the ``jobsync.io/execution-arn``
annotation) and is checked as that execution's; any other job is *adopted*
(``jobsync.core.ours``): the object of the uid first seen under its name.

A failure to reach the cluster is retried with backoff until the deadline, as
the state machine retries a look: losing sight of a job is not the job failing.
A kubeconfig that points nowhere fails at once (``check_reachable``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobsync import clock
from jobsync.bodies import meta
from jobsync.core.ours import EXECUTION_ANNOTATION
from jobsync.core.outcome import Phase
from jobsync.core.state import EXECUTION_ARN, JobRef, LoopState, instant, seconds, text_instant
from jobsync.core.step import begin
from jobsync.errors import InvalidInput, TransientClusterError
from jobsync.evaluation import kinds
from jobsync.evaluation.kinds import KindSpec
from jobsync.run.loop import Cluster
from jobsync.run.poll import look
from jobsync.settings import DAY, MAX_WATCH_SECONDS, ClusterSettings, Settings

# Stands in for the execution of a job no execution created (LoopState carries one).
ADOPTED_EXECUTION = "arn:aws:states:local:000000000000:execution:jobsync-wait:{namespace}.{name}"
RETRY_SECONDS = (1, 2, 5, 10, 30, 60)  # between looks the cluster did not answer, as the ASL's Retry backs off

Look = Callable[[LoopState], None]


@dataclass(frozen=True)
class WaitResult:
    """How the wait ended: the last loop state, as a run's would be."""

    state: LoopState

    @property
    def phase(self) -> Phase:
        return self.state.phase

    @property
    def succeeded(self) -> bool:
        return self.state.phase == Phase.SUCCEEDED

    @property
    def error(self) -> str | None:
        """The Error a run would fail with (JobFailed, JobTimedOut, ...); None when it succeeded."""
        return self.state.phase.error_name

    @property
    def exit_code(self) -> int:
        """``jobsync run``'s exit code for this end (``jobsync.core.outcome``)."""
        return self.state.phase.exit_code

    @property
    def result(self) -> Any:
        """The leading replica's termination message (``jobsync.core.result``), as a run's output carries it."""
        return self.state.result

    def output(self) -> dict[str, Any]:
        """What a run's output (or its failure's Cause) says of the job: the same fields, less cleanup's."""
        payload = self.state.payload()
        fields = (
            "job",
            "phase",
            "reason",
            "message",
            "diagnostics",
            "logTail",
            "result",
            "submittedAt",
            "startedAt",
            "finishedAt",
            "noticedAt",
            "timesFrom",
            "polls",
        )
        out = {key: payload.get(key) for key in fields if key in payload or key == "result"}
        started, finished = self.state.startedAt, self.state.finishedAt
        out["durationSeconds"] = seconds(finished) - seconds(started) if started and finished else None
        return out


def spec_for(kind: str, api_version: str | None = None) -> KindSpec:
    """The kind a name asks for, in any case (``pytorchjob``); ``api_version`` where the name is ambiguous."""
    found = [
        k
        for k in kinds.KINDS
        if k.plural and k.kind.lower() == kind.lower() and (api_version is None or k.api_version == api_version)
    ]
    if len(found) == 1:
        return found[0]
    known = ", ".join(sorted({f"{k.api_version}/{k.kind}" for k in kinds.KINDS if k.plural}))
    if not found:
        raise InvalidInput(f"kind: unknown kind {kind!r}{f' in {api_version}' if api_version else ''} (known: {known})")
    versions = ", ".join(str(k.api_version) for k in found)
    raise InvalidInput(f"kind: {kind!r} is served by {versions}: say which with the apiVersion")


def wait_settings(namespace: str, spec: KindSpec, watch: bool = True, **overrides: Any) -> Settings:
    """A deployment's settings for one job: its namespace and kind; graces and bounds from JOBSYNC_* as deployed.

    ``watch``: each look holds a watch until the job changes (watch mode's longest hold).
    """
    return Settings(
        namespace=namespace,
        allowed_kinds=(spec,),
        watch_seconds=MAX_WATCH_SECONDS if watch else 0,
        completion_mode="watch" if watch else "poll",
        **overrides,
    )


def first_state(obj: dict[str, Any], spec: KindSpec, settings: Settings, timeout: int, now: float) -> LoopState:
    """The loop state of a job found on the cluster: as Submit would have made it when the job was created."""
    seen = meta(obj)
    execution = str(seen.annotations.get(EXECUTION_ANNOTATION) or "")
    if not re.match(EXECUTION_ARN, execution):
        execution = ADOPTED_EXECUTION.format(namespace=seen.namespace, name=seen.name)
    created = text_instant(str(seen.creation_timestamp or "")) or instant(now)
    job = JobRef(
        apiVersion=spec.api_version or "", kind=spec.kind, namespace=seen.namespace, name=seen.name, uid=seen.uid
    )
    # The graces count from the job's creation, as a run's count from its Submit; the deadline from now.
    state = begin(
        job=job,
        execution=execution,
        cleanup="never",
        created=obj,
        timeout=timeout,
        now=seconds(created),
        settings=settings,
    ).state
    return state.model_copy(update={"deadline": instant(now + timeout), "waitSeconds": 0})


def adopted(state: LoopState) -> bool:
    """Whether the state's job was named, not created by an execution (its execution is the stand-in)."""
    return state.execution.startswith(ADOPTED_EXECUTION.split("{", 1)[0])


def wait_for(
    cluster: Cluster,
    spec: KindSpec,
    namespace: str,
    name: str,
    settings: Settings,
    *,
    timeout_seconds: int = DAY,
    on_look: Look | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> WaitResult:
    """Look at the job until it ends (or its deadline, ``timeout_seconds`` from now, passes); its result.

    ``on_look`` is called with each look's state, the first one included. InvalidInput when there is no
    such job.
    """
    obj = cluster.get(spec, namespace, name)
    if obj is None:
        raise InvalidInput(f"{spec.kind} {namespace}/{name}: no such job")
    state = first_state(obj, spec, settings, timeout_seconds, clock.now())
    failures = 0
    while True:
        try:
            state = look(state, cluster, settings, adopted=adopted(state)).state
        except TransientClusterError:
            if clock.now() >= seconds(state.deadline):
                raise
            sleep(RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)])
            failures += 1
            continue
        failures = 0
        if on_look is not None:
            on_look(state)
        if state.terminal:
            return WaitResult(state)
        sleep(state.waitSeconds)


def wait(
    name: str,
    namespace: str = "default",
    kind: str = "PyTorchJob",
    *,
    api_version: str | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    timeout_seconds: int = DAY,
    watch: bool = True,
    on_look: Look | None = None,
) -> WaitResult:
    """Wait for the job ``namespace/name`` on the cluster of ``kubeconfig`` (the client's default when None).

    See the module docstring. Raises InvalidInput (no such job, an unknown kind) and ClusterConfigError
    (a kubeconfig that cannot be loaded, or whose API server cannot be reached), naming what is wrong.
    """
    from jobsync.cluster.connection import check_reachable, get_api_client
    from jobsync.cluster.jobs import KubeJobs

    spec = spec_for(kind, api_version)
    cluster_settings = kubeconfig_settings(kubeconfig, context)
    check_reachable(cluster_settings)
    cluster = KubeJobs(get_api_client(cluster_settings))
    settings = wait_settings(namespace, spec, watch)
    return wait_for(cluster, spec, namespace, name, settings, timeout_seconds=timeout_seconds, on_look=on_look)


def kubeconfig_settings(kubeconfig: str | None, context: str | None = None) -> ClusterSettings:
    """The cluster of a kubeconfig (the client's default when None) and its context, whatever the environment says."""
    path = os.path.expanduser(kubeconfig) if kubeconfig else ""
    return ClusterSettings.from_env(
        {"JOBSYNC_CLUSTER_MODE": "kubeconfig", "KUBECONFIG": path, "JOBSYNC_KUBE_CONTEXT": context or ""}
    )
