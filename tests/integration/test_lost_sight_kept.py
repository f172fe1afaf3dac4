"""A run that lost sight of its job keeps it, and the FAILED status-change event that follows must not
delete it after all: cleanup after an execution event acts only when the execution's own Cleanup state
did not run."""

from __future__ import annotations

from harness.kubeapi import Fault
from harness.local import LocalJobsync
from tests.integration.test_aborts import status_change
from tests.support.lambdas import QUIET, invoke, load_event


def test_the_failed_event_of_a_run_that_kept_its_job_deletes_nothing():
    with LocalJobsync("success", {"pending_s": 30, "run_s": 3600}, env=QUIET) as local:
        assert local.api
        local.api.inject(Fault.forbidden(), method="GET", path_contains="/pytorchjobs/", times=1)
        result = local.run(load_event("run-job-input.json"), name="kept")  # cleanup: onFailure
        assert (result.status, result.error) == ("FAILED", "ClusterAccessDenied")
        assert len(local.jobs_left()) == 1  # ERROR: left alone under onFailure
        description = local.sfn._sfn.describe_execution(executionArn=result.execution_arn)
        out = invoke("cleanup", status_change(description))
        assert out["deleted"] is False and "own Cleanup state ran" in out["reason"]
        assert len(local.jobs_left()) == 1
