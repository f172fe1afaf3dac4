"""Kueue v0.19 on real jobs: queued then admitted, preempted then readmitted, refused; and jobsync through it.

Kueue, JobSet and Trainer v2 run beside the control plane for this module only (e2e/controllers.py); Kueue
sees only the namespace ``ml-queued`` (e2e/tests/queues.py). Each test drives one queue story with real
batch/v1 Jobs and a training-operator PyTorchJob, asserts the Workload and job states Kueue writes, and
records them (JOBSYNC_E2E_RECORD_KUEUE, see tests/payloads/kueue/) for the queue-aware verdict. The last
tests run a TrainJob and a JobSet through jobsync's state machine in the queued namespace.

The tests share one ClusterQueue of one CPU and run in file order; each leaves the queue empty.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from e2e import controllers
from e2e.controlplane import ControlPlane
from e2e.tests import queues
from e2e.tests.queues import QUEUE_NAMESPACE, batch_job, conditions, create, get, pytorchjob, record, wait_workload
from e2e.tests.runs import apply_role, jobsync_run, need_controllers, run_input
from e2e.tests.test_jobset_trainer import jobset, trainjob

#: Workload condition predicates, on ``conditions()``'s (status, reason, message) by type.
ADMITTED = lambda c: c.get("Admitted", ("",))[0] == "True"  # noqa: E731
FINISHED = lambda c: c.get("Finished", ("",))[0] == "True"  # noqa: E731


def pending(c: dict[str, tuple[str, str, str]]) -> bool:
    quota = c.get("QuotaReserved")
    return quota is not None and quota[0] == "False" and bool(quota[2])


@pytest.fixture(scope="module")
def kueue(control_plane: ControlPlane) -> Iterator[controllers.Controllers]:
    need_controllers()
    with controllers.running(control_plane) as running:
        queues.install_queues(control_plane)
        yield running


def suspended(cp: ControlPlane, job: dict[str, Any]) -> bool:
    spec = get(cp, job)["spec"]
    return bool(spec.get("suspend") or (spec.get("runPolicy") or {}).get("suspend"))


@pytest.mark.parametrize("kind", ["Job", "PyTorchJob"])
def test_a_job_waits_for_quota_then_is_admitted_and_runs(control_plane: ControlPlane, kueue: Any, kind: str) -> None:
    cp = control_plane
    make = (
        (lambda name, run: batch_job(name, "1", run))
        if kind == "Job"
        else (lambda name, run: pytorchjob(name, "500m", run))
    )
    first, second = make(f"{kind.lower()}-first", "8s"), make(f"{kind.lower()}-second", "1s")
    create(cp, first)
    wait_workload(cp, first, "admitted", ADMITTED)
    create(cp, second)

    queued = wait_workload(cp, second, "waiting for quota", pending)
    status, reason, message = conditions(queued)["QuotaReserved"]
    assert (status, reason) == ("False", "Pending"), conditions(queued)
    assert "insufficient unused quota" in message, message
    assert "Admitted" not in conditions(queued) or conditions(queued)["Admitted"][0] == "False"
    assert suspended(cp, second)
    record(
        cp, f"queued_{kind.lower()}", get(cp, second), queued, "the ClusterQueue's one CPU taken by another job", kueue
    )

    admitted = wait_workload(cp, second, "admitted once the first ended", ADMITTED, timeout=90)
    assert conditions(admitted)["QuotaReserved"][:2] == ("True", "QuotaReserved")
    assert admitted["status"]["admission"]["clusterQueue"] == queues.CLUSTER_QUEUE
    record(cp, f"admitted_{kind.lower()}", get(cp, second), admitted, "admitted when the running job ended", kueue)

    finished = wait_workload(cp, second, "finished", FINISHED, timeout=90)
    assert not suspended(cp, second)
    record(cp, f"finished_{kind.lower()}", get(cp, second), finished, "its job succeeded", kueue)


def test_a_lower_priority_job_is_preempted_then_readmitted(control_plane: ControlPlane, kueue: Any) -> None:
    cp = control_plane
    low = batch_job("low-priority", "1", run="6s", priority="low")
    high = batch_job("high-priority", "1", run="2s", priority="high")
    create(cp, low)
    wait_workload(cp, low, "admitted", ADMITTED)
    create(cp, high)

    preempted = wait_workload(cp, low, "evicted", lambda c: c.get("Evicted", ("",))[:2] == ("True", "Preempted"))
    found = conditions(preempted)
    assert found["Preempted"][:2] == ("True", "InClusterQueue"), found
    evictions = preempted["status"].get("schedulingStats", {}).get("evictions", [])
    assert any(e["reason"] == "Preempted" and e["count"] >= 1 for e in evictions), preempted["status"]
    wait_workload(cp, low, "requeued, suspended again", lambda c: c.get("QuotaReserved", ("",))[0] == "False")
    assert suspended(cp, low)
    record(cp, "preempted_job", get(cp, low), workload_of_now(cp, low), "evicted by a higher-priority job", kueue)
    record(
        cp,
        "preempting_job",
        get(cp, high),
        workload_of_now(cp, high),
        "the higher-priority job that took the quota",
        kueue,
    )

    readmitted = wait_workload(cp, low, "readmitted", ADMITTED, timeout=90)
    assert any(e["reason"] == "Preempted" for e in readmitted["status"]["schedulingStats"]["evictions"])
    record(cp, "readmitted_job", get(cp, low), readmitted, "admitted again once the higher-priority job ended", kueue)
    finished = wait_workload(cp, low, "finished after readmission", FINISHED, timeout=90)
    record(cp, "finished_after_preemption_job", get(cp, low), finished, "its job succeeded after readmission", kueue)


def workload_of_now(cp: ControlPlane, job: dict[str, Any]) -> dict[str, Any]:
    workload = queues.workload_of(cp, job)
    assert workload is not None
    return workload


def test_a_job_larger_than_its_queue_is_never_admitted(control_plane: ControlPlane, kueue: Any) -> None:
    """As released (v0.19.2), then with the UnadmittedWorkloadsObservability gate (beta, off by default)."""
    cp = control_plane
    too_big = batch_job("too-big", "2")
    create(cp, too_big)

    refused = wait_workload(cp, too_big, "refused", pending)
    status, reason, message = conditions(refused)["QuotaReserved"]
    assert (status, reason) == ("False", "Pending"), conditions(refused)
    assert "maximum capacity" in message, message
    assert suspended(cp, too_big)
    record(cp, "refused_job", get(cp, too_big), refused, "asks for 2 CPUs of a ClusterQueue of 1", kueue)

    gates = {"UnadmittedWorkloadsObservability": True, "UnadmittedWorkloadsExplicitStatus": True}
    kueue.restart_kueue(gates)
    observed = wait_workload(
        cp, too_big, "refused, tiered reason", lambda c: c.get("QuotaReserved", ("", ""))[1] != "Pending"
    )
    record(cp, "refused_job_observability", get(cp, too_big), observed, "the same, with the gate on", kueue)
    assert conditions(observed)["QuotaReserved"][0] == "False", conditions(observed)
    assert suspended(cp, too_big)

    filler = batch_job("filler", "1", run="8s")
    waiting = batch_job("waiting-with-gate", "1")
    create(cp, filler)
    wait_workload(cp, filler, "admitted", ADMITTED)
    create(cp, waiting)
    queued = wait_workload(cp, waiting, "waiting, tiered reason", pending)
    record(cp, "queued_job_observability", get(cp, waiting), queued, "waiting for quota, with the gate on", kueue)
    wait_workload(cp, waiting, "finished", FINISHED, timeout=90)

    kueue.restart_kueue({})
    resp = cp.request("DELETE", queues.job_path(too_big, "too-big") + "?propagationPolicy=Background")
    assert resp.status == 200, resp.body


@pytest.mark.parametrize("kind", ["TrainJob", "JobSet"])
def test_jobsync_runs_a_queued_job_to_success(control_plane: ControlPlane, kueue: Any, kind: str) -> None:
    """Admitted at once (the queue is empty): SUSPENDED while queued, then RUNNING and SUCCEEDED."""
    manifest = trainjob("succeed") if kind == "TrainJob" else jobset("succeed")
    manifest["metadata"]["labels"] = queues.queued_labels()
    apply_role(control_plane, kind, namespace=QUEUE_NAMESPACE)
    with jobsync_run(control_plane, env={"JOBSYNC_NAMESPACE": QUEUE_NAMESPACE}, kinds=kind) as local:
        result = local.run(run_input(manifest, cleanup="never"), name=f"queued-{kind.lower()}", timeout_s=180)

    assert result.status == "SUCCEEDED", result.cause
    assert result.output["job"]["namespace"] == QUEUE_NAMESPACE
    assert result.output["reason"] == "AllJobsCompleted"
