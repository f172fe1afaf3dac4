"""A pod that carries a job's labels but that the job does not own changes nothing of the job's run.

Anyone allowed to create pods in the namespace can label one ``training.kubeflow.org/job-name=<job>``.
Such a pod, with no owner, must not fail a healthy job (stuck on a missing image while the job waits for
GPUs), become its ``result`` (a Succeeded pod with a termination message) or its log tail (a failed pod);
the run names it as ignored. The real state machine in moto, the real handlers, the local Kubernetes API;
the operator simulator's pods are owned by the job (``controller: true``, its uid), as the real
training-operator's are.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from harness.local import LocalJobsync
from harness.operator_sim import CONTAINER, LABEL_PREFIX, TERMINATION_MESSAGE_ANNOTATION, pod_status
from jobsync import clock
from jobsync.run.manifests import job_name
from jobsync.run.pods import NOT_OWNED
from tests.integration.test_aborts import execution_arn
from tests.support.lambdas import QUIET, load_event

NS = "ml-training"
MANIFEST = load_event("run-job-input.json")["job"]["metadata"]["name"]
STRANGER_RESULT = {"modelUri": "s3://someone-else/models/evil.pt"}
STRANGER_LOG = "someone else's job: do not show this\n"
OWN_RESULT = {"accuracy": 0.97, "modelUri": "s3://models/mnist/42/model.pt"}


def stranger_pod(local: LocalJobsync, job: str, name: str, state: str, message: str | None = None) -> dict[str, Any]:
    """A pod someone made by hand: the job's labels (its Master's, even), no owner reference."""
    at = clock.isoformat(local.clock.now())
    labels = {
        f"{LABEL_PREFIX}/job-name": job,
        f"{LABEL_PREFIX}/replica-type": "master",
        f"{LABEL_PREFIX}/replica-index": "0",
    }
    image = "registry.example.com/someone/else:missing"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"containers": [{"name": CONTAINER, "image": image}], "restartPolicy": "Never"},
        "status": pod_status(state, image, at),
    }
    if message is not None:
        pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"] = message
    assert local.api
    stored = local.api.put(("", "v1", "pods", NS, name), pod)
    if state == "failed":
        local.api.set_pod_log(NS, name, CONTAINER, STRANGER_LOG)
    return stored


def statuses(local: LocalJobsync) -> list[dict[str, Any]]:
    assert local.sfn
    return [c.result for c in local.sfn.invocations if c.function_name == "jobsync-status" and c.result]


def ignored_notes(local: LocalJobsync) -> list[str]:
    return [d["message"] for s in statuses(local) for d in s.get("diagnostics") or [] if d.get("reason") == NOT_OWNED]


def test_a_strangers_pod_stuck_on_a_missing_image_does_not_fail_a_job_waiting_for_gpus():
    with LocalJobsync("gpu-scale-up", {"scale_up_s": 2400, "run_s": 1800}, env=QUIET) as local:
        job = job_name(execution_arn(local, "gpus"), MANIFEST)
        # Listed before the job's own pods (by name), as the API server lists them.
        stranger = f"{job}-cache"
        stranger_pod(local, job, stranger, "ErrImagePull-missing")

        result = local.run(load_event("run-job-input.json"), name="gpus")

        assert result.status == "SUCCEEDED", result.cause
        assert all(p.phase != "FAILED" for p in result.polls)
        assert "WaitingForCapacity" in {p.reason for p in result.polls if p.phase == "PENDING"}
        assert result.output["deleted"] is False and [j["phase"] for j in result.jobs_left] == ["SUCCEEDED"]
        assert local.api and local.api.get(("", "v1", "pods", NS, stranger)) is not None  # never touched
        notes = ignored_notes(local)
        assert notes and set(notes) == {f"ignored 1 pod labelled for this job that it does not own: {stranger}"}
        diagnosed = [d for s in statuses(local) for d in s.get("diagnostics") or [] if d.get("pod")]
        assert diagnosed and all(d["pod"] != stranger for d in diagnosed)


def _run_with_a_strangers_succeeded_pod(own_message: str | None) -> tuple[Any, list[str]]:
    """A successful run (its Master leaving ``own_message``), and a stranger's Succeeded Master pod made mid-run."""
    execution_input = copy.deepcopy(load_event("run-job-input.json"))
    if own_message is not None:
        execution_input["job"]["metadata"].setdefault("annotations", {})[TERMINATION_MESSAGE_ANNOTATION] = own_message
    local = LocalJobsync("success", {"pending_s": 30, "run_s": 1800}, env=QUIET)
    with local:
        job = job_name(execution_arn(local, "result"), MANIFEST)
        t0 = local.clock.now()
        made: list[str] = []

        def make(now: float) -> None:
            # Made while the job runs, so it is the newest Master pod when the job ends.
            if not made and now - t0 >= 600:
                made.append(stranger_pod(local, job, f"{job}-master-copy", "succeeded", json.dumps(STRANGER_RESULT)))

        local.clock.on_advance(make)
        result = local.run(execution_input, name="result")
        assert made
        return result, ignored_notes(local)


def test_a_strangers_succeeded_pod_does_not_replace_the_jobs_result():
    result, notes = _run_with_a_strangers_succeeded_pod(json.dumps(OWN_RESULT))
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["result"] == OWN_RESULT
    assert notes and notes[-1].endswith("-master-copy")  # the terminal poll says which pod it left out


def test_a_strangers_termination_message_is_not_the_result_of_a_job_that_left_none():
    result, _ = _run_with_a_strangers_succeeded_pod(None)
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["result"] is None


def test_the_log_tail_and_diagnostics_of_a_failed_job_are_never_a_strangers_pods():
    with LocalJobsync("failure", {"pending_s": 60, "run_s": 600}, env=QUIET) as local:
        job = job_name(execution_arn(local, "failure"), MANIFEST)
        stranger = f"{job}-cache"
        stranger_pod(local, job, stranger, "failed", json.dumps(STRANGER_RESULT))

        result = local.run(load_event("run-job-input.json"), name="failure")

        assert result.status == "FAILED" and result.error == "JobFailed"
        cause = json.loads(result.cause or "{}")
        assert "RuntimeError: CUDA error: out of memory" in cause["logTail"]
        assert "someone else's job" not in cause["logTail"]
        assert cause.get("result") != STRANGER_RESULT
        pods = {d.get("pod") for d in cause["diagnostics"] if d["reason"] != NOT_OWNED}
        assert pods == {f"{job}-worker-0"}, cause["diagnostics"]
        note = f"ignored 1 pod labelled for this job that it does not own: {stranger}"
        assert {"reason": NOT_OWNED, "message": note} in cause["diagnostics"]
        # Cleanup deleted the job and its pods, and left the stranger's alone.
        assert result.jobs_left == []
        assert local.api and local.api.get(("", "v1", "pods", NS, stranger)) is not None
        assert not [p for p in local.api.objects("", "v1", "pods", NS) if p["metadata"]["name"] != stranger]
