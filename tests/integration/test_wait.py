"""jobsync.wait: a job on a cluster, waited for without AWS, with a run's verdict, stuck-start rules and result.

The job is created as a person creates one (``kubectl apply``: no jobsync label), in the local
Kubernetes API, and moved by the operator simulator on virtual time; the wait's looks go over
real HTTP. The same story run through the state machine (``LocalJobsync``) gives the same verdict.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from harness.clock import VirtualClock
from harness.kubeapi import KubeAPI
from harness.local import LocalJobsync
from harness.operator_sim import OperatorSim
from jobsync import clock as jobsync_clock
from jobsync.cluster.jobs import KubeJobs
from jobsync.core.outcome import Phase
from jobsync.core.state import LoopState
from jobsync.errors import InvalidInput, NotOurJob
from jobsync.run.wait import WaitResult, spec_for, wait_for, wait_settings
from tests.support.kube import NAMESPACE, start_kube_api
from tests.support.lambdas import EVENTS, QUIET

SPEC = spec_for("pytorchjob")
TIMINGS = {"pending_s": 90, "run_s": 1200}


def manifest(name: str) -> dict[str, Any]:
    job = json.loads((EVENTS / "run-job-input.json").read_text())["job"]
    job["metadata"] = {"name": name, "namespace": NAMESPACE, "labels": {"team": "vision"}}
    return job


class Cluster:
    """The local API and the simulator on one virtual clock; jobs created with the real client."""

    def __init__(self) -> None:
        self.clock = VirtualClock(max_step=30)
        self.api: KubeAPI = start_kube_api(clock=self.clock.now)
        self.api.virtual_watch = self.clock.advance  # a watch lets virtual time pass, as in the local run
        self.sim = OperatorSim(self.api, self.clock.now)
        self.clock.on_advance(lambda _now: self.sim.step())
        config = k8s.Configuration()
        config.host = self.api.url
        self.client = k8s.ApiClient(config)
        self.jobs = KubeJobs(self.client)

    def create(self, name: str, scenario: str, **timings: float) -> dict[str, Any]:
        self.sim.plan(NAMESPACE, name, scenario, **(timings or TIMINGS))
        created: dict[str, Any] = k8s.CustomObjectsApi(self.client).create_namespaced_custom_object(
            "kubeflow.org", "v1", NAMESPACE, "pytorchjobs", manifest(name)
        )
        self.sim.step()
        return created

    def wait(self, name: str, watch: bool = True, **kwargs: Any) -> tuple[WaitResult, list[LoopState]]:
        looks: list[LoopState] = []
        settings = wait_settings(NAMESPACE, SPEC, watch=watch)
        result = wait_for(
            self.jobs, SPEC, NAMESPACE, name, settings, on_look=looks.append, sleep=self.clock.advance, **kwargs
        )
        return result, looks


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    made = Cluster()
    previous = jobsync_clock._now
    jobsync_clock.set_clock(made.clock.now)
    try:
        yield made
    finally:
        jobsync_clock.set_clock(previous)
        made.sim.stop()
        made.api.stop()


def run_verdict(scenario: str) -> dict[str, Any]:
    """The same story through the state machine: the output, or the failure's Cause."""
    with contextlib.ExitStack() as stack:
        local = stack.enter_context(LocalJobsync(scenario, TIMINGS, env=QUIET))
        execution_input = json.loads((EVENTS / "run-job-input.json").read_text())
        result = local.run(execution_input, timeout_s=300)
    return result.output if result.output is not None else json.loads(result.cause or "{}")


@pytest.mark.parametrize(
    ("scenario", "phase", "reason"),
    [
        ("success", Phase.SUCCEEDED, "PyTorchJobSucceeded"),
        ("failure", Phase.FAILED, "PyTorchJobFailed"),
        # The kubelet alternates ErrImagePull and ImagePullBackOff: the look that ends it sees either.
        ("bad-image", Phase.FAILED, ("ErrImagePull", "ImagePullBackOff")),
        ("never-schedulable", Phase.FAILED, "NeverSchedulable"),
        ("operator-down", Phase.FAILED, "OperatorNotReconciling"),
    ],
)
@pytest.mark.parametrize("watch", [True, False], ids=["watch", "poll"])
def test_a_wait_ends_as_a_run_of_the_same_story_ends(cluster, scenario, phase, reason, watch):
    created = cluster.create("mnist", scenario)
    started = cluster.clock.now()

    result, looks = cluster.wait("mnist", watch=watch)

    assert result.phase == phase
    assert result.state.reason in (reason if isinstance(reason, tuple) else (reason,))
    assert result.exit_code == phase.exit_code
    assert result.error == phase.error_name
    assert looks[-1] == result.state and looks[-1].terminal and not any(s.terminal for s in looks[:-1])
    assert result.state.job.uid == created["metadata"]["uid"]
    run = run_verdict(scenario)
    assert run["reason"] in (reason if isinstance(reason, tuple) else (reason,))
    output = result.output()
    for key in ("result", "timesFrom"):
        assert output.get(key) == run.get(key), key
    # The same pods found stuck or failed, named by replica (the job's own name differs).
    assert [d.get("pod", "").removeprefix("mnist-") for d in output.get("diagnostics") or []] == [
        d.get("pod", "").removeprefix(run["job"]["name"] + "-") for d in run.get("diagnostics") or []
    ]
    assert bool(output.get("logTail")) == bool(run.get("logTail"))
    assert "deleted" not in output  # a wait never deletes: the job is only read
    assert cluster.api.get(("kubeflow.org", "v1", "pytorchjobs", NAMESPACE, "mnist")) is not None
    if scenario == "operator-down":
        # The graces count from the job's creation, as a run's from its Submit.
        assert cluster.clock.now() - started >= 300


def test_a_job_that_ended_before_the_wait_began_gives_its_verdict_at_the_first_look(cluster):
    cluster.create("done-already", "success", pending_s=10, run_s=60)
    cluster.clock.advance(600)

    result, looks = cluster.wait("done-already")

    assert len(looks) == 1
    assert result.phase == Phase.SUCCEEDED
    assert result.state.timesFrom == {"startedAt": "job", "finishedAt": "job"}
    assert result.output()["durationSeconds"] == 60


def test_the_deadline_ends_a_wait_as_timed_out(cluster):
    cluster.create("long", "success", pending_s=60, run_s=7200)

    result, _ = cluster.wait("long", timeout_seconds=900)

    assert (result.phase, result.state.reason) == (Phase.TIMED_OUT, "DeadlineExceeded")
    assert result.exit_code == 5


def test_no_such_job_is_invalid_input_naming_it(cluster):
    with pytest.raises(InvalidInput, match=f"PyTorchJob {NAMESPACE}/absent: no such job"):
        cluster.wait("absent")


def test_a_job_replaced_under_its_name_is_not_the_one_waited_for(cluster):
    cluster.create("swapped", "success", pending_s=60, run_s=3600)
    api = k8s.CustomObjectsApi(cluster.client)

    def replace(state: LoopState) -> None:
        if state.polls == 2:
            api.delete_namespaced_custom_object("kubeflow.org", "v1", NAMESPACE, "pytorchjobs", "swapped")
            api.create_namespaced_custom_object("kubeflow.org", "v1", NAMESPACE, "pytorchjobs", manifest("swapped"))

    settings = wait_settings(NAMESPACE, SPEC, watch=False)
    with pytest.raises(NotOurJob, match="the name now belongs to another object"):
        wait_for(cluster.jobs, SPEC, NAMESPACE, "swapped", settings, on_look=replace, sleep=cluster.clock.advance)


def test_a_job_jobsync_submitted_is_checked_as_its_executions():
    """A run's job, waited for on its own: the execution it names is the one its label must match."""
    with LocalJobsync("success", {"pending_s": 60, "run_s": 600}, env=QUIET) as local:
        execution_input = json.loads((EVENTS / "run-job-input.json").read_text())
        result = local.run(execution_input, timeout_s=300)
        job = result.output["job"]
        assert local.api is not None
        config = k8s.Configuration()
        config.host = local.api.url
        jobs = KubeJobs(k8s.ApiClient(config))
        waited = wait_for(jobs, SPEC, NAMESPACE, job["name"], wait_settings(NAMESPACE, SPEC, watch=False))

    assert waited.state.execution == result.execution_arn
    assert (waited.phase, waited.result) == (Phase.SUCCEEDED, result.output["result"])
