"""jobsync's real state machine through the real Kueue v0.19.2 (its UnadmittedWorkloadsObservability gate off, as
released): queued then admitted, refused, preempted then readmitted, with a PyTorchJob and a batch/v1 Job; and a
TrainJob and a JobSet through the queue to SUCCEEDED.

Kueue, JobSet and Trainer v2 run beside the control plane for this module (e2e/tests/queues.py): one ClusterQueue
of one CPU in ``ml-queued``. The chart is installed there with ``kueueEnabled`` (get on workloads and localqueues),
and jobsync runs as ``jobsync-lambda`` with ``JOBSYNC_KUEUE_ENABLED``. The tests run in file order; each leaves
the queue empty.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from e2e import controllers
from e2e.controlplane import ControlPlane
from e2e.tests import queues
from e2e.tests.jobs import wait_for
from e2e.tests.queues import QUEUE_NAMESPACE, batch_job, conditions, create, pytorchjob, wait_workload
from e2e.tests.runs import apply_role, job_of, jobsync_run, need_controllers, run_input
from e2e.tests.test_jobset_trainer import jobset, trainjob
from harness.local import LocalJobsync, RunResult
from jobsync import clock

KINDS = "PyTorchJob,batch/v1/Job"
# An admitted job's operator may take a few seconds to resume it on a loaded machine: not a stuck start here.
KUEUE_ENV = {"JOBSYNC_NAMESPACE": QUEUE_NAMESPACE, "JOBSYNC_KUEUE_ENABLED": "true", "JOBSYNC_STUCK_GRACE_SECONDS": "60"}
ADMITTED = lambda c: c.get("Admitted", ("",))[0] == "True"  # noqa: E731


@pytest.fixture(scope="module")
def kueue(control_plane: ControlPlane) -> Iterator[controllers.Controllers]:
    need_controllers()
    with queues.kueue_running(control_plane) as running:
        apply_role(control_plane, KINDS, namespace=QUEUE_NAMESPACE, kueue=True)
        yield running


def manifest(kind: str, name: str, cpu: str, run: str, priority: str | None = None) -> dict[str, Any]:
    """The job jobsync submits: ``cpu`` in all (a PyTorchJob's Master and Worker take half each)."""
    if kind == "Job":
        job = batch_job(name, cpu, run=run, priority=priority)
    else:
        half = f"{int(float(cpu) * 500)}m"
        job = pytorchjob(name, half, run=run)
        if priority:
            job["metadata"]["labels"][queues.PRIORITY_LABEL] = priority
    job["metadata"].pop("namespace")
    return job


def started(local: LocalJobsync, execution: str, kind: str, name: str) -> dict[str, Any]:
    """The job jobsync created for ``execution``, as queues' helpers name it."""
    api = "batch/v1" if kind == "Job" else "kubeflow.org/v1"
    metadata = {"name": job_of(local, execution, name), "namespace": QUEUE_NAMESPACE}
    return {"apiVersion": api, "kind": kind, "metadata": metadata}


def seen(result: RunResult) -> list[tuple[str, str]]:
    return [(p.phase, p.reason) for p in result.polls]


def since_submission(result: RunResult, field: str) -> float:
    out = result.output if result.output else json.loads(result.cause or "{}")
    return (clock.parse(out[field]) or 0.0) - (clock.parse(out["submittedAt"]) or 0.0)


def run_with(
    cp: ControlPlane, name: str, execution_input: dict[str, Any], during: Callable[[LocalJobsync], None]
) -> Any:
    with jobsync_run(cp, env=KUEUE_ENV, kinds=KINDS) as local:
        arn = local.start(execution_input, name=name)
        during(local)
        return local.result(arn, local.sfn.wait(arn, timeout_s=180))


@pytest.mark.parametrize("kind", ["Job", "PyTorchJob"])
def test_a_queued_job_waits_with_why_then_succeeds_with_its_time_queued(
    control_plane: ControlPlane, kueue: Any, kind: str
) -> None:
    cp = control_plane
    blocker = batch_job(f"blocker-{kind.lower()}", "1", run="12s")
    create(cp, blocker)
    wait_workload(cp, blocker, "admitted", ADMITTED)

    execution_input = run_input(manifest(kind, "queued", "1", "2s"), cleanup="always")
    result = run_with(cp, f"queued-{kind.lower()}", execution_input, lambda _local: None)

    assert result.status == "SUCCEEDED", result.cause
    assert ("PENDING", "WaitingForQuota") in seen(result)
    assert not any(phase == "SUSPENDED" for phase, _ in seen(result))
    out = result.output
    assert out["queue"]["localQueue"] == queues.LOCAL_QUEUE and out["queue"]["clusterQueue"] == queues.CLUSTER_QUEUE
    assert out["queue"]["evictions"] == []
    # It waited for the blocker's 12 s (less what passed before it was submitted); its run is its own.
    assert 3 <= out["queuedSeconds"] <= since_submission(result, "startedAt")
    assert out["durationSeconds"] is not None and out["durationSeconds"] < out["queuedSeconds"] + 30
    queues.delete(cp, blocker)


@pytest.mark.parametrize("kind", ["Job", "PyTorchJob"])
def test_a_request_over_the_whole_quota_fails_fast(control_plane: ControlPlane, kueue: Any, kind: str) -> None:
    execution_input = run_input(manifest(kind, "too-big", "2", "2s"), cleanup="always")
    result = run_with(control_plane, f"too-big-{kind.lower()}", execution_input, lambda _local: None)

    assert result.error == "JobFailed", result.cause
    cause = json.loads(result.cause or "{}")
    assert cause["reason"] == "ExceedsMaxQuota"  # as released: QuotaReserved False Pending "... maximum capacity"
    assert "maximum capacity (1)" in cause["message"] and "ClusterQueue e2e-cq" in cause["message"]
    assert since_submission(result, "noticedAt") < 20  # its first looks, not its 120 s deadline
    assert cause["deleted"] is True


@pytest.mark.parametrize("kind", ["Job", "PyTorchJob"])
def test_a_preempted_job_is_readmitted_and_succeeds_with_the_eviction_counted(
    control_plane: ControlPlane, kueue: Any, kind: str
) -> None:
    cp = control_plane
    high = batch_job(f"high-over-{kind.lower()}", "1", run="10s", priority="high")
    execution = f"preempted-{kind.lower()}"

    def preempt(local: LocalJobsync) -> None:
        job = started(local, execution, kind, "preempted")

        def admitted() -> bool:
            if cp.request("GET", queues.job_path(job, job["metadata"]["name"])).status != 200:
                return False  # not submitted yet
            return ADMITTED(conditions(queues.workload_of(cp, job)))

        wait_for(f"{job['metadata']['name']} admitted", admitted, timeout=60)
        create(cp, high)

    execution_input = run_input(manifest(kind, "preempted", "1", "12s", priority="low"), cleanup="always")
    result = run_with(cp, execution, execution_input, preempt)

    assert result.status == "SUCCEEDED", result.cause
    assert ("PENDING", "Evicted") in seen(result)
    assert not any(phase in ("FAILED", "SUSPENDED") for phase, _ in seen(result))
    assert result.output["queue"]["evictions"] == [{"reason": "Preempted", "underlyingCause": "", "count": 1}]
    assert result.output["queuedSeconds"] >= 5  # the high-priority job's 10 s, less its start
    wait_for("the preemptor finished", lambda: conditions(queues.workload_of(cp, high)).get("Finished"), 60)
    queues.delete(cp, high)


@pytest.mark.parametrize("kind", ["TrainJob", "JobSet"])
def test_jobsync_runs_a_queued_job_to_success(control_plane: ControlPlane, kueue: Any, kind: str) -> None:
    manifest = trainjob("succeed") if kind == "TrainJob" else jobset("succeed")
    manifest["metadata"]["labels"] = queues.queued_labels()
    apply_role(control_plane, kind, namespace=QUEUE_NAMESPACE, kueue=True)
    try:
        with jobsync_run(control_plane, env=KUEUE_ENV, kinds=kind) as local:
            result = local.run(run_input(manifest, cleanup="never"), name=f"queued-{kind.lower()}", timeout_s=180)
    finally:
        apply_role(control_plane, KINDS, namespace=QUEUE_NAMESPACE, kueue=True)

    assert result.status == "SUCCEEDED", result.cause
    assert result.output["job"]["namespace"] == QUEUE_NAMESPACE
    assert result.output["reason"] == "AllJobsCompleted"
    queue = result.output["queue"]
    assert queue["workload"].startswith(f"{kind.lower()}-") and queue["clusterQueue"] == queues.CLUSTER_QUEUE
    assert isinstance(result.output["queuedSeconds"], int) and queue["admittedAt"]
