"""A JobSet and a Kubeflow Trainer v2 TrainJob, through their real controllers, to SUCCEEDED and to FAILED.

The JobSet controller (v0.12) and Trainer's controller manager (v2.3, with the ClusterTrainingRuntimes its
release installs) run beside the control plane for this module only (e2e/controllers.py). The deployment
allows ``JobSet,TrainJob``; jobsync-lambda has the Role rendered for exactly those (get on the batch Jobs
their pods belong to). All four executions start at once; each test asserts one.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from e2e import controllers
from e2e.controlplane import JOB_NAMESPACE, ControlPlane
from e2e.tests.jobs import wait_for
from e2e.tests.runs import (
    apply_role,
    condition_types,
    get_job,
    job_of,
    jobsync_run,
    need_controllers,
    pod_annotations,
    run_input,
)
from harness.local import LocalJobsync, RunResult
from jobsync import evaluate

KINDS = "JobSet,TrainJob"
IMAGE = "docker.io/library/busybox:1.36"
SMALL = {"requests": {"cpu": "100m", "memory": "64Mi"}}
NAMES_ITSELF = {"e2e.jobsync.io/termination-message": "identity"}
JOBSET = ("jobsets", "jobset.x-k8s.io", "v1alpha2")
TRAINJOB = ("trainjobs", "trainer.kubeflow.org", "v1alpha1")


def pod_template(annotations: dict[str, str]) -> dict[str, Any]:
    container = {"name": "main", "image": IMAGE, "command": ["true"], "resources": SMALL}
    return {"metadata": {"annotations": annotations}, "spec": {"restartPolicy": "Never", "containers": [container]}}


def jobset(outcome: str) -> dict[str, Any]:
    """A driver and two workers; when it fails, the driver (its leader) fails first."""
    driver = {**pod_annotations(outcome, exit_code=None if outcome == "succeed" else 2), **NAMES_ITSELF}
    workers = {
        **pod_annotations(
            "fail" if outcome == "fail" else "succeed", run_duration="20s" if outcome == "fail" else "1s"
        ),
        **NAMES_ITSELF,
    }

    def replicated(name: str, replicas: int, annotations: dict[str, str]) -> dict[str, Any]:
        job = {"backoffLimit": 0, "completions": 1, "parallelism": 1, "template": pod_template(annotations)}
        return {"name": name, "replicas": replicas, "template": {"spec": job}}

    spec = {"replicatedJobs": [replicated("driver", 1, driver), replicated("workers", 2, workers)]}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "e2e"}, "spec": spec}


#: torch-distributed as released, its node Job without retries: the Job's default six, with their back-off,
#: would take minutes before the TrainJob fails.
NO_RETRY_RUNTIME = "e2e-torch-no-retry"


def no_retry_runtime() -> dict[str, Any]:
    [torch] = [
        d
        for d in controllers.rendered(controllers.SPECS["trainer"])
        if d["kind"] == "ClusterTrainingRuntime" and d["metadata"]["name"] == "torch-distributed"
    ]
    runtime = copy.deepcopy(torch)
    runtime["metadata"] = {"name": NO_RETRY_RUNTIME, "labels": torch["metadata"].get("labels", {})}
    for replicated in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        replicated["template"]["spec"]["backoffLimit"] = 0
    return runtime


def trainjob(outcome: str) -> dict[str, Any]:
    """Trainer's own torch-distributed runtime, one node; kwok's annotations put on its pods by a runtime patch."""
    annotations = {**pod_annotations(outcome, exit_code=None if outcome == "succeed" else 3), **NAMES_ITSELF}
    node = {"name": "node", "template": {"spec": {"template": {"metadata": {"annotations": annotations}}}}}
    runtime_spec = {"template": {"spec": {"replicatedJobs": [node]}}}
    patch = {"manager": "e2e.jobsync.io/kwok", "trainingRuntimeSpec": runtime_spec}
    spec = {
        "runtimeRef": {"name": "torch-distributed" if outcome == "succeed" else NO_RETRY_RUNTIME},
        "trainer": {"numNodes": 1, "command": ["true"], "resourcesPerNode": SMALL},
        "runtimePatches": [patch],
    }
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "e2e"},
        "spec": spec,
    }


CASES = [(kind, outcome) for kind in ("JobSet", "TrainJob") for outcome in ("succeed", "fail")]


def name_of(kind: str, outcome: str) -> str:
    return f"{kind.lower()}-{outcome}"


@pytest.fixture(scope="module")
def runs(control_plane: ControlPlane) -> Iterator[tuple[LocalJobsync, dict[tuple[str, str], RunResult]]]:
    need_controllers()
    with controllers.running(control_plane, "jobset", "trainer"):
        control_plane.apply([no_retry_runtime()])
        apply_role(control_plane, KINDS)
        with jobsync_run(control_plane, kinds=KINDS) as local:
            arns = {}
            for kind, outcome in CASES:
                manifest = jobset(outcome) if kind == "JobSet" else trainjob(outcome)
                arns[(kind, outcome)] = local.start(run_input(manifest, cleanup="never"), name=name_of(kind, outcome))
            assert local.sfn
            results = {case: local.result(arn, local.sfn.wait(arn, timeout_s=180)) for case, arn in arns.items()}
            for case, result in results.items():
                print(f"{name_of(*case)}: {result.status} {result.error} {len(result.polls)} polls")
            yield local, results


def _result(runs: Any, kind: str, outcome: str) -> tuple[RunResult, str]:
    local, results = runs
    return results[(kind, outcome)], job_of(local, name_of(kind, outcome), "e2e")


def test_a_jobset_succeeds_and_its_driver_leads(control_plane: ControlPlane, runs: Any) -> None:
    result, name = _result(runs, "JobSet", "succeed")
    assert result.status == "SUCCEEDED", result.cause
    assert (result.output["reason"], result.output["message"]) == ("AllJobsCompleted", "jobset completed successfully")
    assert result.output["result"]["pod"].startswith(f"{name}-driver-0-0-"), result.output["result"]
    obj = get_job(control_plane, JOBSET[0], name, JOBSET[1], JOBSET[2])
    assert obj["status"]["terminalState"] == "Completed"
    assert ("Completed", "True", "AllJobsCompleted") in condition_types(obj)


def test_a_jobset_fails_with_its_first_failed_job_named(control_plane: ControlPlane, runs: Any) -> None:
    result, name = _result(runs, "JobSet", "fail")
    assert result.status == "FAILED" and result.error == "JobFailed", result.cause
    cause = json.loads(result.cause or "{}")
    assert cause["reason"] == "FailedJobs"
    assert cause["message"] == f"jobset failed due to one or more job failures (first failed job: {name}-driver-0)"
    assert any(d.get("exitCode") == 2 for d in cause["diagnostics"]), cause["diagnostics"]
    assert cause["result"]["pod"].startswith(f"{name}-driver-0-0-"), cause["result"]
    obj = get_job(control_plane, JOBSET[0], name, JOBSET[1], JOBSET[2])
    assert obj["status"]["terminalState"] == "Failed"


def test_a_trainjob_succeeds_through_its_jobset(control_plane: ControlPlane, runs: Any) -> None:
    result, name = _result(runs, "TrainJob", "succeed")
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["job"]["kind"] == "TrainJob"
    assert (result.output["reason"], result.output["message"]) == ("AllJobsCompleted", "jobset completed successfully")
    assert result.output["result"]["pod"].startswith(f"{name}-node-0-0-"), result.output["result"]
    assert result.output["result"]["container"] == "node"
    obj = get_job(control_plane, TRAINJOB[0], name, TRAINJOB[1], TRAINJOB[2])
    assert ("Complete", "True", "AllJobsCompleted") in condition_types(obj)


def test_a_trainjob_fails_with_its_nodes_exit_code(control_plane: ControlPlane, runs: Any) -> None:
    result, name = _result(runs, "TrainJob", "fail")
    assert result.status == "FAILED" and result.error == "JobFailed", result.cause
    cause = json.loads(result.cause or "{}")
    assert cause["reason"] == "FailedJobs", cause
    assert any(d.get("exitCode") == 3 for d in cause["diagnostics"]), cause["diagnostics"]
    assert cause["result"]["pod"].startswith(f"{name}-node-0-0-"), cause["result"]


def test_a_trainjobs_reported_progress_reaches_the_evaluation(control_plane: ControlPlane, runs: Any) -> None:
    """What Trainer's status server writes (status.trainerStatus), as the real API server keeps it."""
    _, name = _result(runs, "TrainJob", "succeed")
    path = f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{JOB_NAMESPACE}/trainjobs/{name}/status"
    trainer_status = {
        "progressPercentage": 42,
        "estimatedRemainingSeconds": 120,
        "metrics": [{"name": "loss", "value": "0.123"}, {"name": "accuracy", "value": "0.95"}],
        "lastUpdatedTime": "2026-08-06T16:00:21Z",
    }
    resp = control_plane.request(
        "PATCH", path, {"status": {"trainerStatus": trainer_status}}, content_type="application/merge-patch+json"
    )
    assert resp.status == 200, resp.body

    obj = wait_for("trainerStatus kept", lambda: get_job(control_plane, TRAINJOB[0], name, TRAINJOB[1], TRAINJOB[2]))
    progress = evaluate(obj).to_dict()["progress"]

    assert progress["progressPercentage"] == 42 and progress["estimatedRemainingSeconds"] == 120
    assert progress["metrics"] == {"loss": "0.123", "accuracy": "0.95"}
    assert progress["jobs"][0]["name"] == "node"
