"""The Kueue states the e2e tier recorded (tests/payloads/kueue/): what each holds.

Each file is a real job and its Workload at one queue state, from Kueue v0.19.2 on the real API server
(e2e/tests/test_kueue.py). These tests hold the recordings to the state they claim, so the queue-aware
verdict (tests/unit/test_queue_verdict.py) is tested on what Kueue really writes; the last one shows why it
must read the Workload: the job's own status cannot tell a queue's suspension from a person's.
"""

from __future__ import annotations

import pytest

from jobsync import Phase, evaluate
from tests.payloads import PAYLOADS, kueue_state_names, load_payload

# state -> the Workload conditions it must show: type -> (status, reason, a piece of the message or "").
STATES: dict[str, dict[str, tuple[str, str, str]]] = {
    "queued_job": {"QuotaReserved": ("False", "Pending", "insufficient unused quota for cpu")},
    "queued_pytorchjob": {"QuotaReserved": ("False", "Pending", "insufficient unused quota for cpu")},
    "queued_job_observability": {
        "QuotaReserved": ("False", "WaitingForQuota", "insufficient unused quota for cpu"),
        "Admitted": ("False", "NoReservation", ""),
    },
    "refused_job": {"QuotaReserved": ("False", "Pending", "maximum capacity")},
    "refused_pytorchjob": {"QuotaReserved": ("False", "Pending", "maximum capacity (1)")},
    "refused_job_observability": {
        "QuotaReserved": ("False", "ExceedsMaxQuota", "maximum capacity"),
        "Admitted": ("False", "NoReservation", ""),
    },
    "admitted_job": {"QuotaReserved": ("True", "QuotaReserved", ""), "Admitted": ("True", "Admitted", "")},
    "admitted_pytorchjob": {"QuotaReserved": ("True", "QuotaReserved", ""), "Admitted": ("True", "Admitted", "")},
    "preempting_job": {"Admitted": ("True", "Admitted", "")},
    "preempted_job": {
        "Evicted": ("True", "Preempted", "Preempted to accommodate a workload"),
        "Preempted": ("True", "InClusterQueue", ""),
        "Requeued": ("True", "Preempted", ""),
        "Admitted": ("False", "NoReservation", ""),
        "QuotaReserved": ("False", "Pending", "insufficient unused quota"),
    },
    "readmitted_job": {
        "Admitted": ("True", "Admitted", ""),
        "Evicted": ("False", "QuotaReserved", "Previously: Preempted"),
        "Requeued": ("True", "Preempted", ""),
    },
    "finished_job": {"Finished": ("True", "Succeeded", "")},
    "finished_pytorchjob": {"Finished": ("True", "Succeeded", "successfully completed")},
    "finished_after_preemption_job": {"Finished": ("True", "Succeeded", ""), "Admitted": ("True", "Admitted", "")},
    "waiting_for_preempted_job": {
        "QuotaReserved": ("False", "WaitingForPreemptedWorkloads", "Pending the preemption of 1 workload(s)"),
        "Admitted": ("False", "NoReservation", ""),
    },
    "no_matching_flavor_job": {"QuotaReserved": ("False", "Pending", "example.com/gpu unavailable in ClusterQueue")},
    "pending_evaluation_job_observability": {
        "QuotaReserved": ("False", "PendingEvaluation", "an equivalent workload recently failed"),
    },
    "inadmissible_job": {"QuotaReserved": ("False", "Inadmissible", "LocalQueue no-such-queue doesn't exist")},
    "misconfigured_job_observability": {
        "QuotaReserved": ("False", "Misconfigured", "LocalQueue no-such-queue doesn't exist"),
    },
    "deactivated_job": {
        "Evicted": ("True", "Deactivated", "The workload is deactivated"),
        "Admitted": ("True", "", ""),
    },
    "deactivated_queued_job": {
        "Evicted": ("True", "Deactivated", "The workload is deactivated"),
        "QuotaReserved": ("False", "Pending", "insufficient unused quota"),
    },
    "max_execution_time_job": {
        "Evicted": ("True", "DeactivatedDueToMaximumExecutionTimeExceeded", "exceeding the maximum execution time"),
        "DeactivationTarget": ("True", "MaximumExecutionTimeExceeded", ""),
    },
    "requeuing_limit_job": {
        "Evicted": ("True", "DeactivatedDueToRequeuingLimitExceeded", "maximum number of re-queuing retries"),
    },
    "admitted_suspended_job": {"QuotaReserved": ("True", "QuotaReserved", ""), "Admitted": ("True", "Admitted", "")},
    "unsatisfied_checks_job": {"QuotaReserved": ("True", "QuotaReserved", "ClusterQueue e2e-checked-cq")},
    "rejected_check_job": {
        "Evicted": ("True", "DeactivatedDueToAdmissionCheck", 'AdmissionCheck in Rejected state: "manual-check"'),
    },
}
EVICTED_ONCE = {
    "preempted_job",
    "readmitted_job",
    "finished_after_preemption_job",
    "deactivated_job",
    "deactivated_queued_job",
    "max_execution_time_job",
    "requeuing_limit_job",
    "rejected_check_job",
}
# Deactivated: spec.active false (by hand, or by Kueue itself).
INACTIVE = {
    "deactivated_job",
    "deactivated_queued_job",
    "max_execution_time_job",
    "requeuing_limit_job",
    "rejected_check_job",
}


def test_every_recorded_state_is_checked():
    assert sorted(STATES) == kueue_state_names()


@pytest.mark.parametrize("state", sorted(STATES))
def test_a_recorded_state_shows_what_kueue_writes_for_it(state):
    recorded = load_payload(f"kueue/{state}.yaml")
    job, workload = recorded["job"], recorded["workload"]
    conditions = {c["type"]: c for c in workload["status"]["conditions"]}

    for kind, (status, reason, said) in STATES[state].items():
        assert conditions[kind]["status"] == status, (kind, conditions[kind])
        assert reason in ("", conditions[kind]["reason"]), (kind, conditions[kind])
        assert said in conditions[kind]["message"]
    assert workload["spec"]["active"] is (state not in INACTIVE)
    # The Workload is the job's: Kueue owns it to the job by uid, as the queue-aware verdict will find it.
    owners = [r for r in workload["metadata"]["ownerReferences"] if r.get("controller")]
    assert [(r["kind"], r["uid"]) for r in owners] == [(job["kind"], job["metadata"]["uid"])]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == workload["spec"]["queueName"]
    evictions = (workload["status"].get("schedulingStats") or {}).get("evictions") or []
    assert bool(evictions) is (state in EVICTED_ONCE)


@pytest.mark.parametrize("state", sorted(STATES))
def test_each_recording_names_the_kueue_version_and_how_it_was_made(state):
    head = (PAYLOADS / "kueue" / f"{state}.yaml").read_text().splitlines()[:3]

    assert head[0].startswith(f"# Kueue state: {state}. Recorded by e2e/tests/test_kueue.py (")
    assert "Kueue v0.19.2 (sigs.k8s.io/kueue)" in head[1]


@pytest.mark.parametrize(
    ("state", "phase"),
    [
        ("queued_job", Phase.SUSPENDED),
        ("queued_pytorchjob", Phase.SUSPENDED),
        ("refused_job", Phase.SUSPENDED),
        ("preempted_job", Phase.SUSPENDED),
        ("finished_job", Phase.SUCCEEDED),
        ("finished_pytorchjob", Phase.SUCCEEDED),
        ("finished_after_preemption_job", Phase.SUCCEEDED),
    ],
)
def test_the_job_alone_reads_as_suspended_while_it_waits_in_its_queue(state, phase):
    # The evaluator reads the job's status alone: Kueue's suspension and a person's look the same to it.
    assert evaluate(load_payload(f"kueue/{state}.yaml")["job"]).phase is phase
