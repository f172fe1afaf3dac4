"""Status and cleanup act only on the job the calling execution created, whoever invokes them.

The Lambdas can be invoked by anyone with lambda:InvokeFunction, and their
EventBridge rule by anyone who can put an event that looks like one from
Step Functions. So nothing in a request is taken on trust:

- status reads a job (and its pods and logs) only when the object carries the
  request's ``jobsync.io/execution`` label (and, when the request has one,
  its uid); any other job is a ``NotOurJob`` error before a pod is listed;
- cleanup deletes only a job carrying the requesting execution's label; a
  request must name its execution, and a uid in it does not skip the check;
- cleanup after an execution event first asks Step Functions
  (DescribeExecution) that the execution is one of this deployment's state
  machine and really ended.

Everything here runs the real handlers against the local Kubernetes API and
moto's Step Functions, with the executions the real state machine started.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from harness.local import LocalJobsync, load_handler
from harness.operator_sim import CONTAINER, build_pod, pod_status
from jobsync import clock
from jobsync.run.manifests import job_labels, job_name
from tests.conftest import FakeLambdaContext, load_event
from tests.integration.test_aborts import execution_arn, status_change

QUIET = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}
PYTORCHJOBS = ("kubeflow.org", "v1", "pytorchjobs")
NS = "ml-training"
LONG = {"pending_s": 30, "run_s": 6 * 3600}
SECRET_LINE = "HF_TOKEN=hf_fake_not_a_real_token_0000"  # what a person's job might print


def invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
    return load_handler(function).lambda_handler(event, FakeLambdaContext())


def error_of(function: str, event: dict[str, Any]) -> BaseException:
    with pytest.raises(Exception) as caught:  # checked by name, as Step Functions sees it
        invoke(function, event)
    return caught.value


def hand_made_failed_job(local: LocalJobsync, name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A failed PyTorchJob someone created by hand, with a failed pod whose log holds a secret."""
    manifest = load_event("run-job-input.json")["job"]
    meta = {"name": name, "namespace": NS, "labels": labels}
    at = clock.isoformat(local.clock.now())
    failed = {"type": "Failed", "status": "True", "reason": "PyTorchJobFailed", "lastTransitionTime": at}
    stored = local.api.put((*PYTORCHJOBS, NS, name), {**manifest, "metadata": meta, "status": {"conditions": [failed]}})
    pod = build_pod(stored, "Master", 0, at)
    pod["status"] = pod_status("failed", "busybox", at)
    local.api.put(("", "v1", "pods", NS, pod["metadata"]["name"]), pod)
    local.api.set_pod_log(NS, pod["metadata"]["name"], CONTAINER, SECRET_LINE + "\nTraceback: boom\n")
    return stored


def loop_state_for(obj: dict[str, Any], execution: str) -> dict[str, Any]:
    state = load_event("status-running.json")
    state["job"] = {**state["job"], "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"]}
    state["execution"] = execution
    state["deadline"] = "2999-12-31T00:00:00Z"
    return state


def requests(local: LocalJobsync) -> list[tuple[str, str | None, int | None]]:
    return [(r.method, r.resource, r.status) for r in local.api.requests]


# --- status -------------------------------------------------------------------------


@pytest.mark.parametrize("owner", ["a person", "another execution"])
def test_status_refuses_a_job_this_execution_did_not_create_and_reads_none_of_its_pods_or_logs(owner):
    with LocalJobsync("success", env=QUIET) as local:
        execution = execution_arn(local, "nightly")
        labels = {"team": "vision"} if owner == "a person" else job_labels(execution_arn(local, "someone-else"))
        stored = hand_made_failed_job(local, "hand-made", labels)
        local.api.clear_requests()

        error = error_of("status", loop_state_for(stored, execution))

        assert type(error).__name__ == "NotOurJob", f"{type(error).__name__}: {error}"
        assert "hand-made" in str(error) and "not created by this execution" in str(error)
        assert SECRET_LINE not in str(error)
        assert requests(local) == [("GET", "pytorchjobs", 200)]  # no pod LIST, no log GET


def test_status_refuses_an_object_that_replaced_ours_under_the_same_name():
    with LocalJobsync("success", env=QUIET) as local:
        execution = execution_arn(local, "nightly")
        stored = hand_made_failed_job(local, job_name(execution, "pytorch-simple"), job_labels(execution))
        state = loop_state_for(stored, execution)
        state["job"]["uid"] = "00000000-0000-0000-0000-0000000000aa"  # the object the loop saw was another
        local.api.clear_requests()

        error = error_of("status", state)

        assert type(error).__name__ == "NotOurJob", f"{type(error).__name__}: {error}"
        assert requests(local) == [("GET", "pytorchjobs", 200)]


def test_status_requires_the_execution_before_any_request():
    with LocalJobsync("success", env=QUIET) as local:
        stored = hand_made_failed_job(local, "hand-made", {})
        state = loop_state_for(stored, "unused")
        del state["execution"]
        local.api.clear_requests()

        error = error_of("status", state)

        assert type(error).__name__ == "InvalidInput" and "execution: Field required" in str(error)
        assert local.api.requests == []


# --- cleanup from the loop state ----------------------------------------------------


def test_cleanup_naming_a_hand_made_job_by_its_uid_leaves_it_alone():
    with LocalJobsync("success", env=QUIET) as local:
        stored = hand_made_failed_job(local, "hand-made", {"team": "vision"})
        request = {**loop_state_for(stored, execution_arn(local, "nightly")), "cleanup": "always"}
        local.api.clear_requests()

        out = invoke("cleanup", request)

        assert out["deleted"] is False and "left alone" in out["reason"]
        assert local.api.get((*PYTORCHJOBS, NS, "hand-made")) is not None
        assert requests(local) == [("GET", "pytorchjobs", 200)]  # the label check, no DELETE


def during_run(local: LocalJobsync, name: str, act, after_s: float = 900) -> tuple[dict[str, Any], Any]:
    """Start an execution and, ``after_s`` into it (the job RUNNING, the execution in a Wait), call
    ``act(arn)``; then stop the execution. Returns (DescribeExecution after the stop, what act returned)."""
    arn = execution_arn(local, name)
    t0 = local.clock.now()
    seen: list[Any] = []

    def hook(now: float) -> None:
        if not seen and now - t0 >= after_s:
            seen.append(act(arn))
            local.sfn.stop(arn, error="Cancelled", cause="stopped by hand")

    local.clock.on_advance(hook)
    local.start({**load_event("run-job-input.json"), "cleanup": "always"}, name=name)
    return local.sfn.wait(arn), seen[0]


def _attempt(function: str, event: dict[str, Any]) -> Any:
    try:
        return invoke(function, event)
    except Exception as exc:
        return exc


def test_cleanup_without_an_execution_is_refused_and_another_executions_running_job_survives():
    with LocalJobsync("success", LONG, env=QUIET) as local:

        def attack(arn: str) -> dict[str, Any]:
            (job,) = local.api.objects(*PYTORCHJOBS)
            ref = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": NS}
            ref |= {"name": job["metadata"]["name"], "uid": job["metadata"]["uid"]}
            before = len(local.api.requests)
            outcomes = {
                "no execution": _attempt("cleanup", {"job": ref, "cleanup": "always", "phase": "FAILED"}),
                "another execution": _attempt(
                    "cleanup", {"job": ref, "execution": execution_arn(local, "other"), "cleanup": "always"}
                ),
            }
            return {
                "outcomes": outcomes,
                "jobs": [j["metadata"]["name"] for j in local.api.objects(*PYTORCHJOBS)],
                "deletes": [r for r in local.api.requests[before:] if r.method == "DELETE"],
                "status": local.sfn._sfn.describe_execution(executionArn=arn)["status"],
            }

        _, seen = during_run(local, "victim", attack)

    assert seen["status"] == "RUNNING"
    refused = seen["outcomes"]["no execution"]
    assert type(refused).__name__ == "InvalidInput" and "execution: Field required" in str(refused)
    other = seen["outcomes"]["another execution"]
    assert isinstance(other, dict) and other["deleted"] is False and "left alone" in other["reason"], other
    assert seen["jobs"] == [job_name(execution_arn(local, "victim"), "pytorch-simple")] and seen["deletes"] == []


# --- cleanup after an execution event -------------------------------------------------


def forged(local: LocalJobsync, arn: str, status: str = "ABORTED", **detail: Any) -> dict[str, Any]:
    """The event an attacker could put on the bus: it claims ``arn`` ended."""
    description = {
        "executionArn": arn,
        "stateMachineArn": local._state_machine_arn,
        "name": arn.rsplit(":", 1)[-1],
        "status": status,
        "input": json.dumps({**load_event("run-job-input.json"), "cleanup": "always"}),
        "stopDate": local.clock.utcnow(),
    }
    event = status_change(description)
    event["detail"].update(detail)
    return event


def test_a_forged_aborted_event_for_a_running_execution_deletes_nothing():
    with LocalJobsync("success", LONG, env=QUIET) as local:

        def attack(arn: str) -> dict[str, Any]:
            before = len(local.api.requests)
            out = invoke("cleanup", forged(local, arn))
            return {
                "out": out,
                "jobs": [evaluate_phase(j) for j in local.api.objects(*PYTORCHJOBS)],
                "requests": local.api.requests[before:],
            }

        description, seen = during_run(local, "victim", attack)
        assert seen["out"]["deleted"] is False and "RUNNING" in seen["out"]["reason"], seen["out"]
        assert seen["jobs"] == ["RUNNING"] and seen["requests"] == []  # the cluster was not even asked

        # Once the execution really ended, the same cleanup goes ahead.
        assert description["status"] == "ABORTED"
        out = invoke("cleanup", status_change(description))
        assert out["deleted"] is True and local.jobs_left() == []


def evaluate_phase(job: dict[str, Any]) -> str:
    from jobsync import evaluate

    return str(evaluate(job).phase)


def test_an_event_for_an_execution_step_functions_does_not_know_deletes_nothing():
    with LocalJobsync("success", env=QUIET) as local:
        arn = execution_arn(local, "never-started")
        meta = {"name": job_name(arn, "pytorch-simple"), "namespace": NS, "labels": job_labels(arn)}
        local.api.put(
            (*PYTORCHJOBS, NS, job_name(arn, "pytorch-simple")),
            {**load_event("run-job-input.json")["job"], "metadata": meta},
        )
        local.api.clear_requests()

        out = invoke("cleanup", forged(local, arn))

        assert out["deleted"] is False and "left alone" in out["reason"], out
        assert local.api.requests == [] and len(local.jobs_left()) == 1


def test_an_event_for_another_state_machines_execution_deletes_nothing():
    with LocalJobsync("success", env=QUIET) as local:
        arn = (
            local._state_machine_arn.replace(":stateMachine:", ":execution:").replace(
                "jobsync-run-job", "someone-elses-machine"
            )
            + ":nightly"
        )
        meta = {"name": job_name(arn, "pytorch-simple"), "namespace": NS, "labels": job_labels(arn)}
        local.api.put(
            (*PYTORCHJOBS, NS, job_name(arn, "pytorch-simple")),
            {**load_event("run-job-input.json")["job"], "metadata": meta},
        )
        local.api.clear_requests()
        event = forged(local, arn, stateMachineArn=local._state_machine_arn)  # a detail that lies about it

        out = invoke("cleanup", copy.deepcopy(event))

        assert out["deleted"] is False and "state machine" in out["reason"], out
        assert local.api.requests == [] and len(local.jobs_left()) == 1
