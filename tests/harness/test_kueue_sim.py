"""The Kueue simulator against the real Kueue: each Workload it writes matches the e2e tier's recording of that state.

tests/payloads/kueue/ holds what Kueue v0.19.2 wrote on the real API server (its UnadmittedWorkloadsObservability
gate off, as released). The simulator moves a PyTorchJob's Workload through each story; at each stage its
conditions (type, status, reason, message) must be the recording's, but for the names only the run knows (a
pod set's, a preemptor's uid), and so must what else the verdict reads: the queue, the admission's ClusterQueue,
the eviction counts, the time admitted before, whether it is active, the job's suspension. The training-operator
simulator, for its part, stops and resumes the job as the real operator does.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from harness.kubeapi import Route
from harness.kueue_sim import KueueSim
from harness.operator_sim import OperatorSim
from jobsync.core.queue import QUEUE_LABEL, workload_names
from jobsync.evaluation.kinds import lookup
from tests.harness.test_operator_sim import GROUP, PLURAL, VERSION, job
from tests.payloads import load_payload
from tests.support.clock import FakeClock
from tests.support.kube import NAMESPACE as NS
from tests.support.kube import start_kube_api

T0 = 1_700_000_000.0
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|preemptor-of-\w+|a-higher-priority-job")


@pytest.fixture
def clock():
    return FakeClock(T0)


@pytest.fixture
def api(clock):
    server = start_kube_api(clock=clock, crds=())
    yield server
    server.stop()


@pytest.fixture
def kueue(api, clock):
    return KueueSim(api, clock)


def queued(story: str, kueue: KueueSim, api, kind: str = "PyTorchJob", cpu: str = "500m", **timings) -> dict:
    """A job labelled for the LocalQueue, as the recorded ones: a PyTorchJob (Master, one Worker) or a batch/v1 Job
    (one pod), each pod asking for ``cpu`` and 64Mi."""
    requests = {"resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}
    if kind == "PyTorchJob":
        body = job("queued", workers=1)
        for replica in body["spec"]["pytorchReplicaSpecs"].values():
            replica["template"]["spec"]["containers"][0] |= requests
        route = Route(GROUP, VERSION, PLURAL, NS, None)
    else:
        container = {"name": "main", "image": "docker.io/library/busybox:1.36", **requests}
        template = {"spec": {"restartPolicy": "Never", "containers": [container]}}
        body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "queued"}, "spec": {"template": template}}
        route = Route("batch", "v1", "jobs", NS, None)
    body["metadata"]["labels"] = {QUEUE_LABEL: "e2e"}
    kueue.plan(NS, "queued", story, **timings)
    return api.handle_create(route, body, "Strict")[0]


def workload(api, created: dict[str, Any]) -> dict[str, Any]:
    spec = lookup(created["apiVersion"], created["kind"])
    name = workload_names(spec, created["metadata"]["name"], created["metadata"]["uid"])[0]
    found = api.get(("kueue.x-k8s.io", "v1beta2", "workloads", NS, name))
    assert found is not None
    return found


def said(obj: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    """Each condition as (status, reason, message), the names only a run knows taken out."""
    out = {}
    for found in obj["status"]["conditions"]:
        out[found["type"]] = (found["status"], found["reason"], UID.sub("<uid>", found.get("message", "")))
    return out


def recorded(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    found = load_payload(f"kueue/{name}.yaml")
    return found["job"], found["workload"]


def suspended(api, created: dict[str, Any]) -> bool:
    if created["kind"] == "Job":
        return api.get(("batch", "v1", "jobs", NS, created["metadata"]["name"]))["spec"]["suspend"]
    current = api.get((GROUP, VERSION, PLURAL, NS, created["metadata"]["name"]))
    return current["spec"]["runPolicy"]["suspend"]


def assert_like(api, created, name: str, *, finished_message: bool = True) -> dict[str, Any]:
    ours = workload(api, created)
    _, real = recorded(name)
    mine, theirs = said(ours), said(real)
    if not finished_message:  # Kueue copies the job's own condition's message there: another job's words
        mine.pop("Finished", None) and theirs.pop("Finished", None)
    if "PodsReady" not in theirs:  # Kueue adds it in a reconcile of its own: some recordings were made before it
        mine.pop("PodsReady", None)
    assert mine == theirs
    for part in ("accumulatedPastExecutionTimeSeconds", "schedulingStats"):
        assert (part in ours["status"]) is (part in real["status"]), part
    assert ours["status"].get("schedulingStats") == real["status"].get("schedulingStats")
    assert (ours["status"].get("admission") or {}).get("clusterQueue") == (real["status"].get("admission") or {}).get(
        "clusterQueue"
    )
    assert ours["spec"]["active"] is real["spec"]["active"] and ours["spec"]["queueName"] == real["spec"]["queueName"]
    assert ours["status"].get("resourceRequests") == real["status"].get("resourceRequests")
    (owner,) = ours["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (created["kind"], created["metadata"]["uid"], True)
    return ours


@pytest.mark.parametrize(("kind", "name"), [("PyTorchJob", "queued_pytorchjob"), ("Job", "queued_job")])
def test_a_queued_job_is_created_suspended_and_waits_as_kueue_writes_it(api, kueue, clock, kind, name):
    created = queued("queued", kueue, api, kind, cpu="500m" if kind == "PyTorchJob" else "1", queued_s=600)
    assert suspended(api, created)  # the webhook's doing
    kueue.step()
    assert_like(api, created, name)
    assert suspended(api, created)

    clock.advance(600)
    kueue.step()
    if kind == "PyTorchJob":
        assert_like(api, created, "admitted_pytorchjob")
    assert not suspended(api, created)


@pytest.mark.parametrize(
    ("kind", "cpu", "name"), [("PyTorchJob", "1", "refused_pytorchjob"), ("Job", "2", "refused_job")]
)
def test_a_request_over_the_whole_quota_is_refused_as_kueue_writes_it(api, kueue, clock, kind, cpu, name):
    created = queued("refused", kueue, api, kind, cpu=cpu)
    kueue.step()
    clock.advance(3600)
    kueue.step()
    assert_like(api, created, name)
    assert suspended(api, created)


def test_a_preemption_and_the_readmission_are_written_as_kueue_writes_them(api, kueue, clock):
    created = queued("preempted", kueue, api, "Job", cpu="1", preempt_at=60, requeue_s=300)
    kueue.step()
    assert not suspended(api, created)
    clock.advance(65)  # preempted at 60, after running 60 s
    kueue.step()
    assert_like(api, created, "preempted_job")
    assert suspended(api, created)
    assert workload(api, created)["status"]["accumulatedPastExecutionTimeSeconds"] == 60

    clock.advance(300)
    kueue.step()
    assert_like(api, created, "readmitted_job")
    assert not suspended(api, created)


def test_the_job_that_ended_finishes_its_workload_as_kueue_writes_it(api, kueue, clock):
    operator = OperatorSim(api, clock, default_scenario="success")
    operator.plan(NS, "queued", "success", pending_s=10, run_s=30)
    created = queued("admitted", kueue, api)
    for _ in range(6):
        kueue.step()
        operator.step()
        clock.advance(10)
    assert_like(api, created, "finished_pytorchjob", finished_message=False)
    assert workload(api, created)["status"]["conditions"][-1]["message"] == (
        "PyTorchJob ml-training/queued successfully completed."
    )


def test_the_operator_stops_a_suspended_job_and_runs_it_again_once_resumed(api, kueue, clock):
    operator = OperatorSim(api, clock)
    operator.plan(NS, "queued", "success", pending_s=10, run_s=600)
    queued("preempted", kueue, api, preempt_at=60, requeue_s=100)
    for _ in range(4):
        kueue.step()
        operator.step()
        clock.advance(20)  # 80 s: preempted at 60
    job_now = api.get((GROUP, VERSION, PLURAL, NS, "queued"))
    states = {c["type"]: (c["status"], c["reason"]) for c in job_now["status"]["conditions"]}
    assert states["Suspended"] == ("True", "PyTorchJobSuspended")
    assert states["Running"] == ("False", "PyTorchJobSuspended")
    assert api.objects("", "v1", "pods", NS) == []

    for _ in range(5):
        clock.advance(20)  # readmitted at 160, running 10 s later
        kueue.step()
        operator.step()
    job_now = api.get((GROUP, VERSION, PLURAL, NS, "queued"))
    states = {c["type"]: (c["status"], c["reason"]) for c in job_now["status"]["conditions"]}
    assert states["Suspended"] == ("False", "PyTorchJobResumed")
    assert states["Running"] == ("True", "PyTorchJobRunning")
    assert len(api.objects("", "v1", "pods", NS)) == 2
