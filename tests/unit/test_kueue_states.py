"""The Kueue states the e2e tier recorded (tests/payloads/kueue/): what each holds, and how jobsync reads it today.

Each file is a real job and its Workload at one queue state, from Kueue v0.19.2 on the real API server
(e2e/tests/test_kueue.py). These tests hold the recordings to the state they claim, so the queue-aware
verdict is built on what Kueue really writes; the last one pins what jobsync says of them before that
verdict exists.
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
}
EVICTED_ONCE = {"preempted_job", "readmitted_job", "finished_after_preemption_job"}


def test_every_recorded_state_is_checked():
    assert sorted(STATES) == kueue_state_names()


@pytest.mark.parametrize("state", sorted(STATES))
def test_a_recorded_state_shows_what_kueue_writes_for_it(state):
    recorded = load_payload(f"kueue/{state}.yaml")
    job, workload = recorded["job"], recorded["workload"]
    conditions = {c["type"]: c for c in workload["status"]["conditions"]}

    for kind, (status, reason, said) in STATES[state].items():
        assert (conditions[kind]["status"], conditions[kind]["reason"]) == (status, reason), (kind, conditions[kind])
        assert said in conditions[kind]["message"]
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
def test_without_the_queue_aware_verdict_a_queued_job_reads_as_suspended(state, phase):
    # The job alone cannot tell Kueue's suspension from a person's: the queue-aware verdict reads the Workload.
    assert evaluate(load_payload(f"kueue/{state}.yaml")["job"]).phase is phase
