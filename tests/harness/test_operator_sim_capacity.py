"""The simulator's capacity and image scenarios: pods, and the events the scheduler, autoscaler and kubelet write."""

from __future__ import annotations

from kubernetes import client

from tests.harness.test_operator_sim import NS, api, clock, conditions, job, kube, phases, pods, sim, submit

__all__ = ["api", "clock", "kube", "sim"]  # the fixtures, shared


def events_of(kube, pod: str) -> list[tuple[str, str, str]]:
    selector = f"involvedObject.kind=Pod,involvedObject.name={pod}"
    items = client.CoreV1Api(kube).list_namespaced_event(NS, field_selector=selector).items
    return [(e.source.component, e.reason, e.message) for e in items]


def test_gpu_scale_up_is_unschedulable_with_a_triggered_scale_up_then_runs(kube, sim, clock):
    sim.plan(NS, "train", "gpu-scale-up", scale_up_s=2400, run_s=600)
    submit(kube, job(workers=1))
    sim.step()
    assert set(phases(kube).values()) == {"Pending"}
    said = events_of(kube, "train-worker-0")
    assert (
        "cluster-autoscaler",
        "TriggeredScaleUp",
        "pod triggered scale-up: [{eks-gpu-ng-5ec4a1b2 1->2 (max: 4)}]",
    ) in said
    assert any(c == "default-scheduler" and "Insufficient nvidia.com/gpu" in m for c, _, m in said)
    pod_uid = pods(kube)["train-worker-0"].metadata.uid
    items = client.CoreV1Api(kube).list_namespaced_event(NS).items
    assert {e.involved_object.uid for e in items if e.involved_object.name == "train-worker-0"} == {pod_uid}
    clock.advance(2400)
    sim.step()
    assert set(phases(kube).values()) == {"Running"}
    clock.advance(600)
    sim.step()
    assert conditions(kube)[-1] == ("Succeeded", "True", "PyTorchJobSucceeded")


def test_never_schedulable_says_no_node_group_fits(kube, sim, clock):
    sim.plan(NS, "train", "never-schedulable")
    submit(kube, job(workers=0))
    sim.step()
    clock.advance(86400)
    sim.step()
    assert set(phases(kube).values()) == {"Pending"}
    (reason,) = {c.reason for p in pods(kube).values() for c in p.status.conditions if c.type == "PodScheduled"}
    assert reason == "Unschedulable"
    assert ("NotTriggerScaleUp", "cluster-autoscaler") in {(r, c) for c, r, _ in events_of(kube, "train-master-0")}


def test_bad_image_alternates_pull_errors_keeping_the_pods_start(kube, sim, clock):
    sim.plan(NS, "train", "bad-image", backoff_s=20)
    submit(kube, job(image="example.com/train:nope", workers=0))
    sim.step()
    first = pods(kube)["train-master-0"].status
    assert "manifest unknown" in first.container_statuses[0].state.waiting.message
    clock.advance(20)
    sim.step()
    later = pods(kube)["train-master-0"].status
    assert later.container_statuses[0].state.waiting.message == 'Back-off pulling image "example.com/train:nope"'
    assert later.start_time == first.start_time
    kubelet = [m for c, r, m in events_of(kube, "train-master-0") if (c, r) == ("kubelet", "Failed")]
    assert any("manifest unknown" in m for m in kubelet)
