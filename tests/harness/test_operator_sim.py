"""The training-operator simulator: condition sequences and pods as the v1.9 operator and kubelet write them."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client, watch

from harness.kubeapi import KubeAPI
from harness.operator_sim import OperatorSim
from tests.support.clock import FakeClock
from tests.support.kube import NAMESPACE as NS
from tests.support.kube import start_kube_api

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "pytorchjobs"
T0 = 1_700_000_000.0


def job(name: str = "train", workers: int = 2, image: str = "pytorch/pytorch:2.3.0", annotations=None, **spec) -> dict:
    def replica(count: int) -> dict:
        container = {"name": "pytorch", "image": image, "command": ["python", "train.py"]}
        return {"replicas": count, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [container]}}}

    replicas = {"Master": replica(1)}
    if workers:
        replicas["Worker"] = replica(workers)
    meta = {"name": name, "annotations": annotations or {}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": meta,
        "spec": {"pytorchReplicaSpecs": replicas, **spec},
    }


@pytest.fixture
def clock():
    return FakeClock(T0)


@pytest.fixture
def api(clock):
    server = start_kube_api(clock=clock, crds=())  # no CRD: the simulator writes what it likes
    yield server
    server.stop()


@pytest.fixture
def sim(api, clock):
    simulator = OperatorSim(api, clock)
    yield simulator
    simulator.stop()


@pytest.fixture
def kube(api):
    cfg = client.Configuration()
    cfg.host = api.url
    with client.ApiClient(cfg) as api_client:
        yield api_client


def submit(kube, body: dict) -> dict:
    return client.CustomObjectsApi(kube).create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, body)


def read(kube, name: str = "train") -> dict:
    return client.CustomObjectsApi(kube).get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, name)


def conditions(kube, name: str = "train") -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in read(kube, name).get("status", {}).get("conditions", [])]


def pods(kube, name: str = "train") -> dict[str, client.V1Pod]:
    selector = f"training.kubeflow.org/job-name={name}"
    return {p.metadata.name: p for p in client.CoreV1Api(kube).list_namespaced_pod(NS, label_selector=selector).items}


def phases(kube, name: str = "train") -> dict[str, str]:
    return {n: p.status.phase for n, p in pods(kube, name).items()}


def waiting_reasons(kube) -> set[str]:
    return {p.status.container_statuses[0].state.waiting.reason for p in pods(kube).values()}


# ------------------------------------------------------------------ success


def test_success_sequence(kube, sim, clock):
    sim.plan(NS, "train", "success", pending_s=60, run_s=1800)
    created = submit(kube, job())
    sim.step()
    assert conditions(kube) == [("Created", "True", "PyTorchJobCreated")]
    status = read(kube)["status"]
    assert status["conditions"][0]["message"] == "PyTorchJob ml-training/train is created."
    assert status["startTime"] == "2023-11-14T22:13:20Z"
    assert phases(kube) == {"train-master-0": "Pending", "train-worker-0": "Pending", "train-worker-1": "Pending"}

    master = pods(kube)["train-master-0"]
    assert master.metadata.labels == {
        "training.kubeflow.org/job-name": "train",
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/job-role": "master",
    }
    owner = master.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "PyTorchJob",
        "train",
        created["metadata"]["uid"],
        True,
    )
    assert master.spec.containers[0].name == "pytorch"
    assert "training.kubeflow.org/job-role" not in pods(kube)["train-worker-1"].metadata.labels

    clock.advance(59)
    sim.step()
    assert conditions(kube) == [("Created", "True", "PyTorchJobCreated")]
    clock.advance(1)
    sim.step()
    assert conditions(kube) == [("Created", "True", "PyTorchJobCreated"), ("Running", "True", "PyTorchJobRunning")]
    status = read(kube)["status"]
    assert status["conditions"][1]["message"] == "PyTorchJob ml-training/train is running."
    assert status["replicaStatuses"] == {"Master": {"active": 1}, "Worker": {"active": 2}}
    running = pods(kube)["train-worker-0"].status.container_statuses[0]
    assert running.ready and running.state.running is not None

    clock.advance(1800)
    sim.step()
    status = read(kube)["status"]
    assert conditions(kube) == [
        ("Created", "True", "PyTorchJobCreated"),
        ("Running", "False", "PyTorchJobRunning"),
        ("Succeeded", "True", "PyTorchJobSucceeded"),
    ]
    assert status["conditions"][2]["message"] == "PyTorchJob ml-training/train successfully completed."
    assert status["completionTime"] == "2023-11-14T22:44:20Z"
    assert status["replicaStatuses"] == {"Master": {"succeeded": 1}, "Worker": {"succeeded": 2}}
    terminated = pods(kube)["train-master-0"].status.container_statuses[0].state.terminated
    assert (terminated.reason, terminated.exit_code) == ("Completed", 0)


def test_a_clock_jump_still_writes_every_transition(api, kube, sim, clock):
    submit(kube, job(workers=1))
    rv = client.CustomObjectsApi(kube).list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)["metadata"][
        "resourceVersion"
    ]
    clock.advance(10 * 3600)
    sim.step()
    stream = watch.Watch().stream(
        client.CustomObjectsApi(kube).list_namespaced_custom_object,
        GROUP,
        VERSION,
        NS,
        PLURAL,
        resource_version=rv,
        timeout_seconds=0,
    )
    seen = [[c["type"] for c in e["object"]["status"]["conditions"]] for e in stream]
    assert seen == [["Created"], ["Created", "Running"], ["Created", "Running", "Succeeded"]]


def test_replica_counts_follow_the_spec(kube, sim):
    submit(kube, job(workers=3))
    submit(kube, job("solo", workers=0))
    sim.step()
    assert sorted(pods(kube)) == ["train-master-0", "train-worker-0", "train-worker-1", "train-worker-2"]
    assert sorted(pods(kube, "solo")) == ["solo-master-0"]


# ------------------------------------------------------------------ failure


def test_failure_sequence_and_log(kube, sim, clock):
    sim.plan(NS, "train", "failure", pending_s=10, run_s=600)
    submit(kube, job())
    sim.step()
    clock.advance(10)
    sim.step()
    clock.advance(600)
    sim.step()
    status = read(kube)["status"]
    assert conditions(kube) == [
        ("Created", "True", "PyTorchJobCreated"),
        ("Running", "False", "PyTorchJobRunning"),
        ("Failed", "True", "PyTorchJobFailed"),
    ]
    assert (
        status["conditions"][2]["message"]
        == "PyTorchJob ml-training/train is failed because 1 Worker replica(s) failed."
    )
    assert status["replicaStatuses"]["Worker"] == {"active": 1, "failed": 1}
    failed = pods(kube)["train-worker-0"]
    terminated = failed.status.container_statuses[0].state.terminated
    assert failed.status.phase == "Failed" and (terminated.reason, terminated.exit_code) == ("Error", 1)
    tail = client.CoreV1Api(kube).read_namespaced_pod_log("train-worker-0", NS, container="pytorch", tail_lines=5)
    assert "RuntimeError: CUDA error: out of memory" in tail


def test_failure_without_workers_blames_the_master(kube, sim, clock):
    sim.plan(NS, "train", "failure")
    submit(kube, job(workers=0))
    sim.step()
    clock.advance(3600)
    sim.step()
    assert read(kube)["status"]["conditions"][-1]["message"].endswith("because 1 Master replica(s) failed.")


# ------------------------------------------------------------------ restarting


def test_restarting_sequence(kube, sim, clock):
    sim.plan(NS, "train", "restarting", pending_s=0, restart_at=100, restart_s=30, run_s=500)
    submit(kube, job())
    sim.step()
    assert conditions(kube) == [("Created", "True", "PyTorchJobCreated"), ("Running", "True", "PyTorchJobRunning")]
    uid_before = pods(kube)["train-worker-0"].metadata.uid

    clock.advance(100)
    sim.step()
    # As pkg/util/status.go does: Restarting replaces Running.
    assert conditions(kube) == [
        ("Created", "True", "PyTorchJobCreated"),
        ("Restarting", "True", "PyTorchJobRestarting"),
    ]
    assert read(kube)["status"]["conditions"][1]["message"] == (
        "PyTorchJob ml-training/train is restarting because 1 Worker replica(s) failed."
    )
    assert phases(kube)["train-worker-0"] == "Failed"

    clock.advance(30)
    sim.step()
    assert conditions(kube) == [("Created", "True", "PyTorchJobCreated"), ("Running", "True", "PyTorchJobRunning")]
    worker = pods(kube)["train-worker-0"]
    assert worker.status.phase == "Running" and worker.metadata.uid != uid_before

    clock.advance(370)
    sim.step()
    assert [c[:2] for c in conditions(kube)] == [("Created", "True"), ("Running", "False"), ("Succeeded", "True")]


# ------------------------------------------------------------------ stuck scenarios


def test_image_pull_backoff_alternates_forever(kube, sim, clock):
    sim.plan(NS, "train", "image-pull-backoff", backoff_s=20)
    submit(kube, job(image="bad/image:latest", workers=1))
    sim.step()
    assert waiting_reasons(kube) == {"ErrImagePull"}
    clock.advance(20)
    sim.step()
    assert waiting_reasons(kube) == {"ImagePullBackOff"}
    waiting = pods(kube)["train-master-0"].status.container_statuses[0].state.waiting
    # A registry's rate limit, which heals: the back-off names it, as kubelets since 1.30 do.
    assert waiting.message.startswith('Back-off pulling image "bad/image:latest": ErrImagePull: ')
    assert "toomanyrequests" in waiting.message
    clock.advance(20)
    sim.step()
    assert waiting_reasons(kube) == {"ErrImagePull"}
    clock.advance(86400 + 10)
    sim.step()
    assert set(phases(kube).values()) == {"Pending"}
    assert conditions(kube) == [("Created", "True", "PyTorchJobCreated")]


def test_unschedulable_stays_pending(kube, sim, clock):
    submit(kube, job(annotations={"jobsync.local/scenario": "unschedulable"}))
    sim.step()
    clock.advance(86400)
    sim.step()
    assert conditions(kube) == [("Created", "True", "PyTorchJobCreated")]
    for p in pods(kube).values():
        scheduled = p.status.conditions[0]
        assert p.status.phase == "Pending"
        assert (scheduled.type, scheduled.status, scheduled.reason) == ("PodScheduled", "False", "Unschedulable")
        assert scheduled.message == (
            "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. "
            "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
        )


def test_operator_down_writes_nothing(kube, sim, clock):
    sim.default_scenario = "operator-down"
    submit(kube, job())
    for _ in range(3):
        sim.step()
        clock.advance(3600)
    assert "status" not in read(kube)
    assert pods(kube) == {}


def test_suspended_from_the_spec(kube, sim):
    submit(kube, job(runPolicy={"suspend": True}))
    sim.step()
    assert conditions(kube)[-1] == ("Suspended", "True", "PyTorchJobSuspended")
    assert pods(kube) == {}


# ------------------------------------------------------------------ choosing scenarios, deletion, real time


def test_timings_from_the_annotation(kube, sim, clock):
    annotations = {
        "jobsync.local/scenario": "failure",
        "jobsync.local/timings": json.dumps({"pending_s": 1, "run_s": 2}),
    }
    submit(kube, job(annotations=annotations))
    sim.step()
    clock.advance(3)
    sim.step()
    assert conditions(kube)[-1] == ("Failed", "True", "PyTorchJobFailed")


def test_unknown_scenario_or_timing_is_refused(sim):
    with pytest.raises(ValueError, match="unknown scenario"):
        sim.plan(NS, "train", "explode")
    with pytest.raises(ValueError, match="unknown timing"):
        sim.plan(NS, "train", "success", run=5)
    sim.plan(NS, "train", "success", restart_at=5)  # another scenario's timing: ignored


def test_deleted_jobs_are_left_alone(api, kube, sim, clock):
    submit(kube, job())
    sim.step()
    client.CustomObjectsApi(kube).delete_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "train", propagation_policy="Background"
    )
    assert pods(kube) == {}
    rv = api.resource_version
    clock.advance(100_000)
    sim.step()
    assert api.resource_version == rv
    assert api.get((GROUP, VERSION, PLURAL, NS, "train")) is None


def test_a_recreated_job_starts_over(kube, sim, clock):
    submit(kube, job())
    sim.step()
    clock.advance(100)
    sim.step()
    client.CustomObjectsApi(kube).delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "train")
    submit(kube, job())
    sim.step()
    assert conditions(kube) == [("Created", "True", "PyTorchJobCreated")]


def test_sim_writes_stay_out_of_the_request_log(api, kube, sim):
    submit(kube, job())
    api.clear_requests()
    sim.step()
    assert api.requests == []


def test_background_thread_with_the_wall_clock():
    with KubeAPI(clock=time.time) as server:
        server.create_namespace(NS)
        simulator = OperatorSim(server)
        simulator.plan(NS, "train", "success", pending_s=0.05, run_s=0.1)
        simulator.run_in_background(interval=0.01)
        try:
            cfg = client.Configuration()
            cfg.host = server.url
            with client.ApiClient(cfg) as kube:
                submit(kube, job())
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline and ("Succeeded", "True", "PyTorchJobSucceeded") not in conditions(
                    kube
                ):
                    time.sleep(0.02)
                assert conditions(kube)[-1] == ("Succeeded", "True", "PyTorchJobSucceeded")
        finally:
            simulator.stop()
