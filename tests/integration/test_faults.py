"""The fault matrix: one test per fault, through the real state machine.

Each test runs an execution in LocalJobsync (tests that need credentials on
the wire in its EKS mode, tests/integration/local_eks.py), injects one fault,
and asserts the verdict, that exactly one job was created (POSTs answered
201, and objects in the store), and what is left in the cluster.
docs/reliability.md lists every row, with the faults tested elsewhere.
"""

from __future__ import annotations

import pytest

from harness.kubeapi import KubeAPI
from harness.local import LocalJobsync
from tests.conftest import load_event

QUIET = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}
PYTORCHJOBS = ("kubeflow.org", "v1", "pytorchjobs")
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
