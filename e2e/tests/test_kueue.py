"""Kueue v0.19 on real jobs: queued then admitted, preempted then readmitted, refused; and jobsync through it.

Kueue, JobSet and Trainer v2 run beside the control plane for this module only (e2e/controllers.py); Kueue
sees only the namespace ``ml-queued`` (e2e/tests/queues.py). Each test drives one queue story with real
batch/v1 Jobs and a training-operator PyTorchJob, asserts the Workload and job states Kueue writes, and
records them (JOBSYNC_E2E_RECORD_KUEUE, see tests/payloads/kueue/) for the queue-aware verdict: waiting,
admitted, preempted, refused, deactivated by a person and by Kueue itself, held by an admission check.
jobsync runs through the queue in test_kueue_runs.py.

The tests share one ClusterQueue of one CPU and run in file order; each leaves the queue empty.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from e2e import controllers
from e2e.controlplane import ControlPlane
from e2e.tests import queues
from e2e.tests.jobs import wait_for
from e2e.tests.queues import batch_job, conditions, create, get, pytorchjob, record, wait_workload
from e2e.tests.runs import need_controllers

#: Workload condition predicates, on ``conditions()``'s (status, reason, message) by type.
ADMITTED = lambda c: c.get("Admitted", ("",))[0] == "True"  # noqa: E731
FINISHED = lambda c: c.get("Finished", ("",))[0] == "True"  # noqa: E731


def pending(c: dict[str, tuple[str, str, str]]) -> bool:
    quota = c.get("QuotaReserved")
    return quota is not None and quota[0] == "False" and bool(quota[2])


@pytest.fixture(scope="module")
def kueue(control_plane: ControlPlane) -> Iterator[controllers.Controllers]:
    need_controllers()
    with queues.kueue_running(control_plane) as running:
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
    too_big_pytorchjob = pytorchjob("too-big-pytorchjob", "1")  # Master and Worker, 1 CPU each
    create(cp, too_big_pytorchjob)
    refused = wait_workload(cp, too_big_pytorchjob, "refused", pending)
    assert "maximum capacity" in conditions(refused)["QuotaReserved"][2], conditions(refused)
    record(cp, "refused_pytorchjob", get(cp, too_big_pytorchjob), refused, "asks for 2 CPUs of 1, as two", kueue)
    queues.delete(cp, too_big_pytorchjob)

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


EVICTED = lambda c: c.get("Evicted", ("",))[0] == "True"  # noqa: E731


def reason(c: dict[str, tuple[str, str, str]], kind: str) -> str:
    return c.get(kind, ("", ""))[1]


def test_a_person_deactivates_a_workload(control_plane: ControlPlane, kueue: Any) -> None:
    """``spec.active: false`` by hand, on a queued and on a running job: evicted as Deactivated, no cause."""
    cp = control_plane
    running, waiting = batch_job("paused-by-hand", "1", run="60s"), batch_job("paused-in-queue", "1")
    create(cp, running)
    wait_workload(cp, running, "admitted", ADMITTED)
    create(cp, waiting)
    queues.set_active(cp, wait_workload(cp, waiting, "waiting for quota", pending), False)
    queues.set_active(cp, workload_of_now(cp, running), False)

    for job, state in ((running, "deactivated_job"), (waiting, "deactivated_queued_job")):
        stopped = wait_workload(cp, job, "deactivated", lambda c: EVICTED(c) and reason(c, "Evicted") == "Deactivated")
        assert stopped["spec"]["active"] is False
        # Kueue writes the Workload's eviction first and suspends the job in a later reconcile.
        wait_for(f"{job['metadata']['name']} suspended", lambda job=job: suspended(cp, job))
        record(cp, state, get(cp, job), stopped, "spec.active set to false by hand", kueue)
    queues.delete(cp, running)
    queues.delete(cp, waiting)


def test_a_job_past_its_maximum_execution_time_is_deactivated(control_plane: ControlPlane, kueue: Any) -> None:
    cp = control_plane
    job = batch_job("over-time", "1", run="60s")
    job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "3"
    create(cp, job)
    wait_workload(cp, job, "admitted", ADMITTED)

    over = wait_workload(cp, job, "deactivated by Kueue", lambda c: reason(c, "Evicted").startswith("DeactivatedDueTo"))
    assert reason(conditions(over), "Evicted") == "DeactivatedDueToMaximumExecutionTimeExceeded", conditions(over)
    assert over["spec"]["active"] is False
    wait_for("suspended again", lambda: suspended(cp, job))
    record(cp, "max_execution_time_job", get(cp, job), workload_of_now(cp, job), "ran past 3 s", kueue)
    queues.delete(cp, job)


def test_an_admitted_job_that_cannot_resume_stays_suspended(control_plane: ControlPlane, kueue: Any) -> None:
    """A policy refuses the job's resume: its Workload is Admitted, the job still suspended (kueue#11931)."""
    cp = control_plane
    queues.hold_resumes(cp)
    try:
        queues.wait_until_held(cp)
        job = batch_job("held", "1")
        job["metadata"]["labels"][queues.HOLD_LABEL] = "true"
        create(cp, job)
        wait_workload(cp, job, "admitted", ADMITTED)
        time.sleep(3)  # Kueue tried to resume it, and was refused
        assert suspended(cp, job)
        held = workload_of_now(cp, job)
        assert conditions(held)["Admitted"][0] == "True", conditions(held)
        record(cp, "admitted_suspended_job", get(cp, job), held, "admitted; a policy refuses its resume", kueue)
    finally:
        queues.release_resumes(cp)
    queues.delete(cp, job)


def test_a_queue_that_waits_for_an_admission_check(control_plane: ControlPlane, kueue: Any) -> None:
    """Quota reserved, not admitted until the check is Ready; a Rejected check deactivates the next one."""
    cp = control_plane
    queues.install_checked_queue(cp)
    first = batch_job("checked", "1", queue=queues.CHECKED_LOCAL_QUEUE)
    create(cp, first)
    reserved = wait_workload(cp, first, "quota reserved", lambda c: c.get("QuotaReserved", ("",))[0] == "True")
    assert reserved["status"]["admission"]["clusterQueue"] == queues.CHECKED_CLUSTER_QUEUE
    time.sleep(2)  # Kueue would admit it now if it did not wait for the check
    waiting = workload_of_now(cp, first)
    assert not ADMITTED(conditions(waiting)), conditions(waiting)
    assert suspended(cp, first)
    record(cp, "unsatisfied_checks_job", get(cp, first), waiting, "quota reserved, its check Pending", kueue)
    queues.set_check(cp, waiting, "Ready", "checked by hand")
    wait_workload(cp, first, "finished once the check is Ready", FINISHED, timeout=90)

    second = batch_job("check-rejected", "1", queue=queues.CHECKED_LOCAL_QUEUE)
    create(cp, second)
    reserved = wait_workload(cp, second, "quota reserved", lambda c: c.get("QuotaReserved", ("",))[0] == "True")
    queues.set_check(cp, reserved, "Rejected", "refused by hand")
    rejected = wait_workload(cp, second, "deactivated", lambda c: reason(c, "Evicted").startswith("DeactivatedDueTo"))
    record(cp, "rejected_check_job", get(cp, second), rejected, "its check Rejected", kueue)
    queues.delete(cp, first)
    queues.delete(cp, second)


def test_requests_no_queue_can_take(control_plane: ControlPlane, kueue: Any) -> None:
    """A LocalQueue that does not exist, a resource no flavor covers: as released, then with the gate."""
    cp = control_plane
    lost = batch_job("no-such-queue", "1", queue="no-such-queue")
    alien = batch_job("alien-resource", "1", extra={"example.com/gpu": "1"})
    for job in (lost, alien):
        create(cp, job)
    for job, state in ((lost, "inadmissible_job"), (alien, "no_matching_flavor_job")):
        found = wait_workload(cp, job, "not admissible", pending)
        assert suspended(cp, job)
        record(cp, state, get(cp, job), found, f"{job['metadata']['name']}, as released", kueue)

    # With the gate, Kueue writes its finer reason for a Workload it considers afresh: a new job's. One asking for a
    # resource no flavor covers, right after another did, is not evaluated at all (Kueue's equivalence cache).
    kueue.restart_kueue(queues.OBSERVABILITY_GATES)
    alien_gated = batch_job("alien-resource-gated", "1", extra={"example.com/fpga": "1"})
    create(cp, alien_gated)
    try:
        for job, state, tiered in (
            (lost, "misconfigured_job_observability", "Misconfigured"),
            (alien_gated, "pending_evaluation_job_observability", "PendingEvaluation"),
        ):
            found = wait_workload(cp, job, tiered, lambda c, r=tiered: reason(c, "QuotaReserved") == r)
            record(cp, state, get(cp, job), found, f"{job['metadata']['name']}, with the gate on", kueue)
    finally:
        kueue.restart_kueue({})
    for job in (lost, alien, alien_gated):
        queues.delete(cp, job)


def test_a_preemptor_waits_for_its_victims_with_the_gate_on(control_plane: ControlPlane, kueue: Any) -> None:
    cp = control_plane
    kueue.restart_kueue(queues.OBSERVABILITY_GATES)
    watched = queues.WorkloadWatch(cp)
    try:
        low = batch_job("victim", "1", run="30s", priority="low")
        high = batch_job("preemptor", "1", run="2s", priority="high")
        create(cp, low)
        wait_workload(cp, low, "admitted", ADMITTED)
        create(cp, high)
        waiting = watched.first(
            high, "waits for its victim", lambda c: reason(c, "QuotaReserved") == "WaitingForPreemptedWorkloads"
        )
        record(cp, "waiting_for_preempted_job", get(cp, high), waiting, "preempting a lower priority", kueue)
        wait_workload(cp, high, "finished", FINISHED, timeout=90)
    finally:
        watched.close()
        kueue.restart_kueue({})
    queues.delete(cp, low)
    queues.delete(cp, high)


def test_pods_never_ready_exhaust_the_requeuing_limit(control_plane: ControlPlane, kueue: Any) -> None:
    """waitForPodsReady (5 s, backoffLimitCount 0): a job whose image never pulls is deactivated."""
    cp = control_plane
    kueue.restart_kueue({}, queues.WAIT_FOR_PODS_READY)
    try:
        job = batch_job("never-ready", "1", outcome="image-pull-backoff")
        create(cp, job)
        out = wait_workload(
            cp, job, "deactivated by Kueue", lambda c: reason(c, "Evicted").startswith("DeactivatedDueTo"), timeout=90
        )
        assert reason(conditions(out), "Evicted") == "DeactivatedDueToRequeuingLimitExceeded", conditions(out)
        wait_for("suspended again", lambda: suspended(cp, job))
        record(cp, "requeuing_limit_job", get(cp, job), workload_of_now(cp, job), "pods never ready", kueue)
    finally:
        kueue.restart_kueue({}, {})
    queues.delete(cp, job)
