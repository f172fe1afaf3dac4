"""The fault matrix: one test per fault, through the real state machine.

Each test runs an execution in LocalJobsync (tests that need credentials on
the wire in its EKS mode, tests/integration/local_eks.py), injects one fault,
and asserts the verdict, that exactly one job was created (POSTs answered
201, and objects in the store), and what is left in the cluster.
docs/reliability.md lists every row, with the faults tested elsewhere.
"""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from harness.kubeapi import Fault, KubeAPI
from harness.local import LocalJobsync
from jobsync import evaluate
from jobsync.cluster import connection as jobsync_cluster
from jobsync.evaluation.phase import Phase
from jobsync.run.manifests import job_name
from tests.integration.local_eks import REGION, count_mints, eks_jobsync
from tests.support.kube import PYTORCHJOBS
from tests.support.lambdas import QUIET, load_event

SHORT = {"pending_s": 30, "run_s": 300}
JOB_GET = "/pytorchjobs/"  # a path fragment only a request for one job has


def execution_input(**overrides):
    return {**load_event("run-job-input.json"), **overrides}


def execution_arn(local: LocalJobsync, name: str) -> str:
    return local._state_machine_arn.replace(":stateMachine:", ":execution:") + ":" + name


def created(api: KubeAPI) -> list:
    """The POSTs of a job the API answered 201: each is one job created."""
    return [r for r in api.requests if r.method == "POST" and r.resource == "pytorchjobs" and r.status == 201]


def assert_one_job_created(local: LocalJobsync) -> None:
    assert len(created(local.api)) == 1


def errors(local: LocalJobsync, function: str | None = None) -> list[str]:
    return [
        c.error["errorType"]
        for c in local.sfn.invocations
        if c.error and (function is None or c.function_name == function)
    ]


def calls(local: LocalJobsync, function: str) -> int:
    return sum(1 for c in local.sfn.invocations if c.function_name == function)


# --- the Kubernetes API -----------------------------------------------------------


# The client's read timeout is 20 s; these faults stall 0.6 s against a 0.3 s timeout instead.
TIMEOUTS_03 = {**QUIET, "JOBSYNC_CONNECT_TIMEOUT_SECONDS": "2", "JOBSYNC_READ_TIMEOUT_SECONDS": "0.3"}


def test_read_timeout_on_a_poll_is_retried_and_the_verdict_stands():
    with LocalJobsync("success", SHORT, env=TIMEOUTS_03) as local:
        # urllib3 retries a timed-out GET once by itself: two stalls make one poll fail.
        local.api.inject(Fault.delay(0.6), method="GET", path_contains=JOB_GET, times=2)
        result = local.run(execution_input(), name="read-timeout")
        assert result.status == "SUCCEEDED"
        assert errors(local) == ["TransientClusterError"]
        assert_one_job_created(local)
        assert [j["phase"] for j in result.jobs_left] == ["SUCCEEDED"]


def test_read_timeout_on_create_never_makes_a_second_job():
    # The API creates the job after the client gave up; the retried submit either
    # creates it (the stalled POST then gets 409) or adopts it. One job either way.
    with LocalJobsync("success", SHORT, env=TIMEOUTS_03) as local:
        local.api.inject(Fault.delay(0.6), method="POST", times=1)
        result = local.run(execution_input(), name="create-timeout")
        assert result.status == "SUCCEEDED"
        assert errors(local, "jobsync-submit") == ["TransientClusterError"]
        (job,) = local.api.objects(*PYTORCHJOBS)
        assert job["metadata"]["name"] == job_name(result.execution_arn, "pytorch-simple")
        assert len(created(local.api)) == 1


@pytest.mark.parametrize("fault", [Fault.internal_error(), Fault.too_many_requests(retry_after=1)], ids=["500", "429"])
def test_transient_fault_on_create_is_retried_and_makes_one_job(fault):
    with LocalJobsync("success", SHORT, env=QUIET) as local:
        local.api.inject(fault, method="POST", times=2)
        result = local.run(execution_input(), name="create-fault")
        assert result.status == "SUCCEEDED"
        assert errors(local) == ["TransientClusterError"] * 2
        assert_one_job_created(local)
        assert len(local.api.objects(*PYTORCHJOBS)) == 1


def test_transient_fault_on_delete_is_retried_and_the_job_goes():
    with LocalJobsync("failure", SHORT, env=QUIET) as local:
        local.api.inject(Fault.unavailable(), method="DELETE", times=2)
        result = local.run(execution_input(), name="delete-fault")
        assert result.error == "JobFailed"
        assert json.loads(result.cause)["deleted"] is True
        assert errors(local, "jobsync-cleanup") == ["TransientClusterError"] * 2
        assert_one_job_created(local)
        assert result.jobs_left == []


def test_a_401_once_remints_the_token_and_carries_on():
    with eks_jobsync("success", SHORT, env=QUIET) as local:
        mints = count_mints()
        local.api.inject(Fault.unauthorized(), method="GET", path_contains=JOB_GET, times=1)
        result = local.run(execution_input(), name="expired-token")
        assert result.status == "SUCCEEDED"
        assert errors(local) == []  # the client re-minted and retried inside one invocation
        assert len(mints) == 2  # the first token, and one more after the 401
        unauthorized = [r for r in local.api.requests if r.status == 401]
        assert len(unauthorized) == 1
        assert_one_job_created(local)


def test_a_401_always_is_a_clear_auth_error_and_no_loop():
    with eks_jobsync("success", SHORT, env=QUIET) as local:
        local.api.inject(Fault.unauthorized(), method="GET", path_contains=JOB_GET, times=1000)
        result = local.run(execution_input(), name="no-access-entry")
        assert result.status == "FAILED" and result.error == "ClusterAuthError"
        assert "401" in result.cause and "access entry" in result.cause
        assert calls(local, "jobsync-status") == 1  # not retried by the state machine
        # Status's GET and one re-auth retry; cleanup, leaving the job under onFailure, reads nothing.
        assert len([r for r in local.api.requests if r.method == "GET"]) == 2
        assert_one_job_created(local)
        # A jobsync error says nothing of the job: under the default onFailure the Catch leaves it alone.
        assert [j["phase"] for j in local.jobs_left()] == ["RUNNING"]


def test_describe_cluster_throttled_is_retried_by_the_state_machine():
    with eks_jobsync("success", SHORT, env=QUIET) as local:
        throttled: list[int] = []

        def throttle_first(**_):
            if not throttled:
                throttled.append(1)
                error = {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}
                raise ClientError({**error, "ResponseMetadata": {"HTTPStatusCode": 400}}, "DescribeCluster")

        jobsync_cluster._eks(REGION).meta.events.register("before-call.eks.DescribeCluster", throttle_first)
        result = local.run(execution_input(), name="throttled")
        assert result.status == "SUCCEEDED"
        assert errors(local) == ["TransientClusterError"]
        assert_one_job_created(local)


def test_a_404_right_after_create_is_pending_then_the_run_goes_on():
    with LocalJobsync("success", SHORT, env=QUIET) as local:
        not_found = Fault.status(404, "NotFound", 'pytorchjobs.kubeflow.org "x" not found')
        local.api.inject(not_found, method="GET", path_contains=JOB_GET, times=1)
        result = local.run(execution_input(), name="not-visible-yet")
        assert result.status == "SUCCEEDED"
        assert (result.polls[0].phase, result.polls[0].reason) == ("PENDING", "NotVisibleYet")
        assert_one_job_created(local)


def test_a_job_deleted_after_it_ended_is_not_found_with_the_last_phase_seen():
    with LocalJobsync("success", SHORT, env=QUIET) as local:
        gone: list[str] = []

        def ttl_controller(_now: float) -> None:
            # ttlSecondsAfterFinished: 0 - the job goes the moment it succeeds, between two polls.
            for job in local.api.objects(*PYTORCHJOBS):
                if evaluate(job).phase == Phase.SUCCEEDED:
                    local.api.delete((*PYTORCHJOBS, "ml-training", job["metadata"]["name"]))
                    gone.append(job["metadata"]["name"])

        local.clock.on_advance(ttl_controller)
        result = local.run(execution_input(), name="ttl-deleted")
        assert gone
        assert result.status == "FAILED" and result.error == "JobNotFound"
        cause = json.loads(result.cause)
        assert cause["reason"] == "JobDeleted" and "last seen RUNNING" in cause["message"]
        assert_one_job_created(local)
        assert result.jobs_left == []


# --- Step Functions and Lambda ---------------------------------------------------


def test_a_submit_whose_result_was_lost_is_retried_and_adopts_its_job():
    with LocalJobsync("success", SHORT, env=QUIET) as local:
        # The handler runs (the job is created), then the invocation times out: the result is lost.
        local.sfn.inject_lambda_timeout("jobsync-submit", call_handler=True)
        result = local.run(execution_input(), name="lost-submit")
        assert result.status == "SUCCEEDED"
        posts = [r.status for r in local.api.requests if r.method == "POST"]
        assert posts == [201, 409]  # the retry's create met the job, and adopted it
        assert_one_job_created(local)
        assert len(local.api.objects(*PYTORCHJOBS)) == 1


def test_a_foreign_job_of_the_same_name_is_a_conflict_and_left_untouched():
    with LocalJobsync("success", SHORT, env=QUIET) as local:
        name = job_name(execution_arn(local, "collision"), "pytorch-simple")
        foreign = load_event("run-job-input.json")["job"]
        foreign["metadata"] = {"name": name, "namespace": "ml-training", "labels": {"team": "someone-else"}}
        before = local.api.put((*PYTORCHJOBS, "ml-training", name), foreign)
        local.sim.stop()  # the foreign job stays exactly as it was put
        result = local.run(execution_input(), name="collision")
        assert result.status == "FAILED" and result.error == "JobConflict"
        assert "not created by this execution" in result.cause
        assert created(local.api) == []
        assert local.api.get((*PYTORCHJOBS, "ml-training", name)) == before
        assert not [r for r in local.api.requests if r.method == "DELETE"]


@pytest.mark.parametrize(
    "inject",
    [
        pytest.param(lambda sfn: sfn.inject_lambda_timeout("jobsync-status", times=2), id="timeout"),
        pytest.param(lambda sfn: sfn.inject_lambda_error("jobsync-status", "Runtime.ExitError", times=2), id="crash"),
        pytest.param(lambda sfn: sfn.inject_lambda_error("jobsync-status", "Lambda.Unknown", times=2), id="unknown"),
        pytest.param(
            lambda sfn: sfn.inject_lambda_error("jobsync-status", "Lambda.ServiceException", times=2), id="service"
        ),
    ],
)
def test_a_status_lambda_that_dies_mid_poll_is_retried_and_the_verdict_stands(inject):
    with LocalJobsync("success", SHORT, env=QUIET) as local:
        inject(local.sfn)
        result = local.run(execution_input(), name="status-dies")
        assert result.status == "SUCCEEDED"
        assert len(errors(local, "jobsync-status")) == 2
        assert_one_job_created(local)
        assert [j["phase"] for j in result.jobs_left] == ["SUCCEEDED"]  # not cleaned up as an error


def test_the_path_fragment_the_faults_use_matches_a_job_get():
    # Guards the matrix against a fault that silently never fires (a wrong path or method).
    with KubeAPI() as api:
        api.inject(Fault.unavailable(), method="GET", path_contains=JOB_GET, times=1)
        assert api.take_fault("GET", "/apis/kubeflow.org/v1/namespaces/ml-training/pytorchjobs/x") is not None
        assert api.take_fault("GET", "/apis/kubeflow.org/v1/namespaces/ml-training/pytorchjobs/x") is None
