"""Every kind jobsync allows here, through the real controller that owns it, to SUCCEEDED and to FAILED.

The deployment allows ``PyTorchJob,TFJob,MPIJob,XGBoostJob,PaddleJob,JAXJob,Job`` and jobsync-lambda has the
Role rendered for exactly those. The training-operator v1.9.0 runs with every scheme; batch/v1 Job is the
real kube-controller-manager's job controller. All executions start at once (the runs are independent) and
each test asserts one of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from e2e.controlplane import ControlPlane
from e2e.tests.runs import (
    apply_role,
    condition_types,
    get_job,
    job_of,
    jobsync_run,
    pod_annotations,
    run_input,
    wait_gone,
    with_pods,
)
from harness.local import LocalJobsync, RunResult

KINDS = "PyTorchJob,TFJob,MPIJob,XGBoostJob,PaddleJob,JAXJob,Job"
IMAGE = "docker.io/library/busybox:1.36"


def _replica(container: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "restartPolicy": "Never",
        "template": {"spec": {"containers": [{"name": container, "image": IMAGE, "command": ["true"]}]}},
    }


def training_job(kind: str) -> dict[str, Any]:
    """The smallest manifest of each kind the v1.9.0 operator accepts (its default container names)."""
    specs: dict[str, tuple[str, dict[str, Any]]] = {
        "TFJob": ("tfReplicaSpecs", {"Chief": _replica("tensorflow"), "Worker": _replica("tensorflow")}),
        "XGBoostJob": ("xgbReplicaSpecs", {"Master": _replica("xgboost"), "Worker": _replica("xgboost")}),
        "PaddleJob": ("paddleReplicaSpecs", {"Master": _replica("paddle"), "Worker": _replica("paddle")}),
        "JAXJob": ("jaxReplicaSpecs", {"Worker": _replica("jax", replicas=2)}),
        # MPIJob v1: the launcher runs mpirun against the workers; the job ends with the launcher.
        "MPIJob": ("mpiReplicaSpecs", {"Launcher": _replica("mpi"), "Worker": _replica("mpi")}),
    }
    key, replica_specs = specs[kind]
    spec: dict[str, Any] = {key: replica_specs}
    if kind == "MPIJob":
        spec["slotsPerWorker"] = 1
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": "e2e"}, "spec": spec}


def batch_job() -> dict[str, Any]:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": IMAGE}]}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "e2e"},
        "spec": {"backoffLimit": 0, "template": template},
    }


#: (kind, outcome) -> the execution's name.
CASES = [
    (kind, outcome)
    for kind in ("TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "Job")
    for outcome in ("succeed", "fail")
]
PLURALS = {
    "TFJob": "tfjobs",
    "MPIJob": "mpijobs",
    "XGBoostJob": "xgboostjobs",
    "PaddleJob": "paddlejobs",
    "JAXJob": "jaxjobs",
    "Job": "jobs",
}

#: What the v1.9.0 controllers write: two wordings of success, and MPIJob's reason prefixed twice.
SUCCEEDED_MESSAGE = {
    "TFJob": "TFJob ml-training/{name} successfully completed.",
    "JAXJob": "JAXJob ml-training/{name} successfully completed.",
    "MPIJob": "MPIJob {name} is successfully completed.",
    "XGBoostJob": "XGBoostJob {name} is successfully completed.",
    "PaddleJob": "PaddleJob {name} is successfully completed.",
}
FAILED_REASON = {"MPIJob": "MPIJobMPIJobFailed"}
NAMES_ITSELF = {"e2e.jobsync.io/termination-message": "identity"}
#: The replica whose termination message is the job's result, by the operator's labels, and its container.
#: (The v1.9.0 MPIJob launcher's pod carries no replica-index label: there is one launcher.)
LEADER = {
    "TFJob": ("chief", "0", "tensorflow"),
    "MPIJob": ("launcher", "", "mpi"),
    "XGBoostJob": ("master", "0", "xgboost"),
    "PaddleJob": ("master", "0", "paddle"),
    "JAXJob": ("worker", "0", "jax"),
}
LEADER_TYPE = {
    "TFJob": "Chief",
    "MPIJob": "Launcher",
    "XGBoostJob": "Master",
    "PaddleJob": "Master",
    "JAXJob": "Worker",
}


def manifest(kind: str, outcome: str) -> dict[str, Any]:
    base = batch_job() if kind == "Job" else training_job(kind)
    replicas = None
    # Every container that ends leaves a termination message naming its pod and replica (e2e/kwok/stages.yaml).
    annotations = {**pod_annotations(outcome, exit_code=None if outcome == "succeed" else 2), **NAMES_ITSELF}
    if kind == "MPIJob":
        # The launcher decides; the workers run until the operator cleans them up (as sshd would).
        replicas = {"Launcher": annotations, "Worker": {**pod_annotations("run-forever"), **NAMES_ITSELF}}
    elif outcome == "fail" and kind != "Job":
        # The leader fails first: a job failed by another replica while its leader still runs has no
        # leader's message yet (its result is rightly null), and which pod the kubelet ends first is a race.
        leader = LEADER_TYPE[kind]
        later = {**pod_annotations("fail", run_duration="30s", exit_code=2), **NAMES_ITSELF}
        replicas = {t: annotations if t == leader else later for t in replica_specs(base)}
        if kind == "JAXJob":  # one replica type: the second worker could end first
            replica_specs(base)[leader]["replicas"] = 1
    return with_pods(base, annotations, None, replicas)


def replica_specs(job: dict[str, Any]) -> dict[str, Any]:
    [specs] = [value for key, value in job["spec"].items() if key.endswith("ReplicaSpecs")]
    return specs


def name_of(kind: str, outcome: str) -> str:
    return f"{kind.lower()}-{outcome}"


@pytest.fixture(scope="module")
def runs(control_plane: ControlPlane) -> Iterator[tuple[LocalJobsync, dict[tuple[str, str], RunResult]]]:
    apply_role(control_plane, KINDS)
    with jobsync_run(control_plane, kinds=KINDS) as local:
        assert local.sfn
        arns = {}
        for kind, outcome in CASES:
            # Kept, to read the conditions the controller wrote; but the failed batch Job is cleaned up.
            cleanup = "onFailure" if (kind, outcome) == ("Job", "fail") else "never"
            execution_input = run_input(manifest(kind, outcome), cleanup=cleanup)
            arns[(kind, outcome)] = local.start(execution_input, name=name_of(kind, outcome))
        results = {case: local.result(arn, local.sfn.wait(arn, timeout_s=180)) for case, arn in arns.items()}
        for case, result in results.items():
            print(f"{name_of(*case)}: {result.status} {result.error} {len(result.polls)} polls")
        yield local, results


def _result(runs: Any, kind: str, outcome: str) -> tuple[LocalJobsync, RunResult, str]:
    local, results = runs
    return local, results[(kind, outcome)], job_of(local, name_of(kind, outcome), "e2e")


@pytest.mark.parametrize("kind", ["TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"])
def test_training_operator_kind_succeeds(control_plane: ControlPlane, runs: Any, kind: str) -> None:
    _local, result, name = _result(runs, kind, "succeed")
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["job"]["kind"] == kind
    assert result.output["reason"] == f"{kind}Succeeded", result.output
    assert result.output["message"] == SUCCEEDED_MESSAGE[kind].format(name=name), result.output
    job = get_job(control_plane, PLURALS[kind], name)
    assert ("Created", "True", f"{kind}Created") in condition_types(job), condition_types(job)
    assert ("Succeeded", "True", f"{kind}Succeeded") in condition_types(job), condition_types(job)


@pytest.mark.parametrize("kind", ["TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"])
def test_training_operator_kind_fails(control_plane: ControlPlane, runs: Any, kind: str) -> None:
    _local, result, name = _result(runs, kind, "fail")
    assert result.status == "FAILED" and result.error == "JobFailed", result.cause
    cause = json.loads(result.cause or "{}")
    assert cause["job"]["kind"] == kind and cause["reason"] == FAILED_REASON.get(kind, f"{kind}Failed"), cause
    assert any(d.get("exitCode") == 2 for d in cause["diagnostics"]), cause["diagnostics"]
    job = get_job(control_plane, PLURALS[kind], name)
    assert ("Failed", "True", FAILED_REASON.get(kind, f"{kind}Failed")) in condition_types(job), condition_types(job)
    print(kind, "failed:", cause["message"])


@pytest.mark.parametrize("outcome", ["succeed", "fail"])
@pytest.mark.parametrize("kind", ["TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "Job"])
def test_the_result_is_the_leading_replicas_termination_message(runs: Any, kind: str, outcome: str) -> None:
    _local, result, name = _result(runs, kind, outcome)
    value = (result.output or {}).get("result") if outcome == "succeed" else json.loads(result.cause or "{}")["result"]
    assert isinstance(value, dict), (result.output, result.cause)
    assert value["pod"].startswith(name), value
    if kind == "Job":
        assert value["container"] == "main", value  # the Job's one pod, as the job controller labels it
    else:
        assert (value["replica"], value["index"], value["container"]) == LEADER[kind], value


def test_batch_job_succeeds_through_the_job_controller(control_plane: ControlPlane, runs: Any) -> None:
    _local, result, name = _result(runs, "Job", "succeed")
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["job"]["kind"] == "Job" and result.output["job"]["apiVersion"] == "batch/v1"
    job = get_job(control_plane, "jobs", name, group="batch")
    assert ("Complete", "True", "CompletionsReached") in condition_types(job), condition_types(job)
    assert job["status"]["succeeded"] == 1


def test_batch_job_fails_and_its_cleanup_takes_the_pods(
    control_plane: ControlPlane, runs: Any, admin_api: client.ApiClient
) -> None:
    _local, result, name = _result(runs, "Job", "fail")
    assert result.status == "FAILED" and result.error == "JobFailed", result.cause
    cause = json.loads(result.cause or "{}")
    assert cause["reason"] == "BackoffLimitExceeded", cause
    assert [d["exitCode"] for d in cause["diagnostics"]] == [2], cause["diagnostics"]
    # Deleted by jobsync (cleanup onFailure) with Background propagation; the real garbage collector takes the
    # pods (a batch/v1 Job's own default, orphan, would leave them).
    assert cause["deleted"] is True
    wait_gone(control_plane, admin_api, "jobs", name, group="batch")
