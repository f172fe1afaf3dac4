"""JobSet, RayJob, SparkApplication, Volcano Job and mpi-operator's MPIJob: every status value to a phase.

The real payloads are in test_evaluate_payloads; here each value of each status field, the combinations
that need care (a Ray job FAILED under a Complete deployment, a Volcano abort after failed pods), and what
is malformed.
"""

from __future__ import annotations

import pytest

from jobsync import Phase, evaluate
from jobsync.evaluation import ray, spark, volcano
from tests.payloads import load_payload

# --------------------------------------------------------------------------- RayJob


def rayjob(deployment: object = None, job_status: object = None, **status: object) -> dict:
    fields = {"jobDeploymentStatus": deployment, "jobStatus": job_status, **status}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "r"},
        "status": {k: v for k, v in fields.items() if v is not None},
    }


@pytest.mark.parametrize(
    ("job_status", "phase"),
    [("SUCCEEDED", Phase.SUCCEEDED), ("FAILED", Phase.FAILED), ("STOPPED", Phase.STOPPED)],
)
def test_a_complete_rayjob_is_what_its_ray_job_says(job_status, phase):
    evaluation = evaluate(rayjob("Complete", job_status, endTime="2026-07-01T09:04:12Z"))

    assert (evaluation.phase, evaluation.since) == (phase, "2026-07-01T09:04:12Z")


@pytest.mark.parametrize("job_status", [None, "", "RUNNING", "PENDING", "LOST"])
def test_a_complete_rayjob_whose_ray_job_did_not_end_is_unknown_never_a_success(job_status):
    evaluation = evaluate(rayjob("Complete", job_status))

    assert evaluation.phase is Phase.UNKNOWN
    assert "Complete with jobStatus" in evaluation.reason


@pytest.mark.parametrize(
    ("job_status", "phase", "reason"),
    [
        (None, Phase.PENDING, "Submitting"),
        ("PENDING", Phase.PENDING, "RayJobPending"),
        ("RUNNING", Phase.RUNNING, "RayJobRunning"),
        ("SUCCEEDED", Phase.RUNNING, "Finishing: SUCCEEDED"),
        ("FAILED", Phase.RUNNING, "Finishing: FAILED"),
        ("STOPPED", Phase.RUNNING, "Finishing: STOPPED"),
    ],
)
def test_a_running_deployment_follows_the_ray_job(job_status, phase, reason):
    evaluation = evaluate(rayjob("Running", job_status))

    assert (evaluation.phase, evaluation.reason) == (phase, reason)


@pytest.mark.parametrize(
    ("deployment", "phase"),
    [
        (None, Phase.PENDING),
        ("Initializing", Phase.PENDING),
        ("Waiting", Phase.PENDING),
        ("Retrying", Phase.RUNNING),
        ("Suspending", Phase.SUSPENDED),
        ("Suspended", Phase.SUSPENDED),
        ("Failed", Phase.FAILED),
        ("ValidationFailed", Phase.FAILED),
        ("Exploded", Phase.UNKNOWN),
    ],
)
def test_every_deployment_status_has_its_phase(deployment, phase):
    assert evaluate(rayjob(deployment)).phase is phase


def test_the_deployment_table_covers_kuberays_values():
    # rayjob_types.go (KubeRay v1.7): New "", Initializing, Running, Complete, Failed, ValidationFailed,
    # Suspending, Suspended, Retrying, Waiting.
    kuberay = {"", "Initializing", "Running", "Complete", "Failed", "ValidationFailed"}
    kuberay |= {"Suspending", "Suspended", "Retrying", "Waiting"}
    assert set(ray._DEPLOYMENT) | {"Running", "Complete"} == kuberay


@pytest.mark.parametrize("reason", ["AppFailed", "SubmissionFailed", "DeadlineExceeded", "PreRunningDeadlineExceeded"])
def test_a_failed_deployment_quotes_kuberays_reason(reason):
    evaluation = evaluate(rayjob("Failed", "RUNNING", reason=reason, message="why"))

    assert (evaluation.phase, evaluation.reason, evaluation.message) == (Phase.FAILED, reason, "why")


@pytest.mark.parametrize("field", ["jobDeploymentStatus", "jobStatus"])
@pytest.mark.parametrize("value", [1, ["Complete"], {"x": 1}, True])
def test_a_rayjob_status_field_that_is_not_text_is_unknown(field, value):
    obj = rayjob("Complete", "SUCCEEDED")
    obj["status"][field] = value

    assert evaluate(obj).reason == f"MalformedStatus: {field} is a {type(value).__name__}"


# --------------------------------------------------------------------------- SparkApplication


def spark_app(state: object, **status: object) -> dict:
    app_state = {} if state is None else {"state": state}
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": {"name": "s"},
        "status": {"applicationState": app_state, **status},
    }


def test_the_spark_table_covers_the_operators_states():
    # api/v1beta2/sparkapplication_types.go (spark-operator v2.5.2), every ApplicationStateType.
    states = {"", "SUBMITTED", "RUNNING", "COMPLETED", "FAILED", "SUBMISSION_FAILED", "PENDING_RERUN"}
    states |= {"INVALIDATING", "SUCCEEDING", "FAILING", "SUSPENDING", "SUSPENDED", "RESUMING", "UNKNOWN"}
    assert set(spark.STATES) == states


@pytest.mark.parametrize(("state", "phase"), sorted(spark.STATES.items()))
def test_every_spark_state_has_its_phase(state, phase):
    assert evaluate(spark_app(state)).phase is phase


def test_a_spark_failure_quotes_the_error_and_its_termination_time():
    obj = spark_app("FAILED", terminationTime="2026-08-01T11:01:02Z")
    obj["status"]["applicationState"]["errorMessage"] = "driver container failed with ExitCode: 1, Reason: Error"

    evaluation = evaluate(obj)

    assert evaluation.message == "driver container failed with ExitCode: 1, Reason: Error"
    assert evaluation.since == "2026-08-01T11:01:02Z"


def test_a_submission_failure_waits_for_the_operators_retry_then_fails():
    obj = load_payload("spark/sparkapplication_submission_failed.yaml")
    assert evaluate(obj).phase is Phase.PENDING
    assert "failed to run spark-submit" in evaluate(obj).message

    obj["status"]["applicationState"]["state"] = "FAILED"  # retries spent
    assert evaluate(obj).phase is Phase.FAILED


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ({"applicationState": "RUNNING"}, "MalformedStatus: applicationState is a str"),
        ({"applicationState": {"state": 3}}, "MalformedStatus: applicationState.state is a int"),
        ({"applicationState": {"state": "RUNNNING"}}, "UnrecognisedStatus: applicationState.state='RUNNNING'"),
    ],
)
def test_a_spark_state_that_cannot_be_read_is_unknown(status, reason):
    obj = spark_app(None)
    obj["status"] = status

    assert (evaluate(obj).phase, evaluate(obj).reason) == (Phase.UNKNOWN, reason)


# --------------------------------------------------------------------------- Volcano Job


def vcjob(phase: object, **status: object) -> dict:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "v"},
        "status": {"state": {"phase": phase, "lastTransitionTime": "2026-06-10T08:00:00Z"}, **status},
    }


def test_the_volcano_table_covers_every_phase():
    # volcano-sh/apis batch/v1alpha1 JobPhase (its CRD's enum), and "" before the first one.
    phases = {"", "Pending", "Aborting", "Aborted", "Running", "Restarting", "Completing", "Completed"}
    phases |= {"Terminating", "Terminated", "Failed"}
    assert set(volcano.PHASES) == phases


@pytest.mark.parametrize(("value", "phase"), sorted(volcano.PHASES.items()))
def test_every_volcano_phase_has_its_phase(value, phase):
    evaluation = evaluate(vcjob(value))

    assert evaluation.phase is phase
    assert evaluation.since == "2026-06-10T08:00:00Z"


def test_an_abort_after_failed_pods_is_a_failure_and_a_plain_abort_a_suspension():
    assert evaluate(vcjob("Aborted", failed=1)).phase is Phase.FAILED
    assert evaluate(vcjob("Aborted")).phase is Phase.SUSPENDED
    assert evaluate(vcjob("Aborting", failed=1)).phase is Phase.SUSPENDED  # not over yet: pods are released


def test_a_volcano_state_reason_is_kept_beside_the_phase():
    obj = vcjob("Failed", failed=2, retryCount=3)
    assert evaluate(obj).message == "2 pod(s) failed, 0 succeeded, after 3 retries"
    obj["status"]["state"] |= {"reason": "PodFailed", "message": "task worker failed"}
    assert (evaluate(obj).reason, evaluate(obj).message) == ("Failed: PodFailed", "task worker failed")


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        ("Running", "MalformedStatus: state is a str"),
        ({"phase": ["Running"]}, "MalformedStatus: state.phase is a list"),
        ({"phase": "Runing"}, "UnrecognisedStatus: state.phase='Runing'"),
    ],
)
def test_a_volcano_state_that_cannot_be_read_is_unknown(state, reason):
    obj = vcjob("Running")
    obj["status"]["state"] = state

    assert (evaluate(obj).phase, evaluate(obj).reason) == (Phase.UNKNOWN, reason)


def test_volcanos_job_is_not_batch_v1s_job():
    batch = {"apiVersion": "batch/v1", "kind": "Job", "status": {"state": {"phase": "Completed"}}}
    assert evaluate(batch).phase is Phase.PENDING  # batch/v1 reads conditions and counts, not state.phase
    assert evaluate({**batch, "apiVersion": "batch.volcano.sh/v1alpha1"}).phase is Phase.SUCCEEDED


# --------------------------------------------------------------------------- JobSet


def test_a_jobset_with_only_active_jobs_is_still_starting():
    obj = load_payload("jobset/jobset_running.yaml")
    obj["status"]["replicatedJobsStatus"][0] |= {"ready": 0, "active": 3}

    evaluation = evaluate(obj)

    assert (evaluation.phase, evaluation.reason) == (Phase.PENDING, "JobsStarting")
    assert evaluation.message == "replicated jobs whose pods are not ready yet: workers"


def test_a_jobset_terminal_state_decides_without_its_condition():
    for state, phase in (("Completed", Phase.SUCCEEDED), ("Failed", Phase.FAILED)):
        obj = load_payload("jobset/jobset_running.yaml")
        obj["status"]["terminalState"] = state
        assert evaluate(obj).phase is phase


def test_a_jobset_failure_quotes_the_first_failed_job():
    evaluation = evaluate(load_payload("jobset/jobset_failed_jobs.yaml"))

    assert (
        evaluation.message == "jobset failed due to one or more job failures (first failed job: paralleljobs-workers-0)"
    )


def test_a_jobsets_restarting_condition_counts_only_while_true():
    obj = load_payload("jobset/jobset_reached_max_restarts.yaml")
    assert evaluate(obj).phase is Phase.FAILED  # RestartingJobSet False beside Failed

    del obj["status"]["conditions"][1], obj["status"]["terminalState"]
    assert evaluate(obj).phase is Phase.RUNNING  # ready child jobs, the restart condition False


def test_a_jobset_reports_its_child_job_counts_as_progress():
    progress = evaluate(load_payload("jobset/jobset_completed.yaml")).to_dict()["progress"]

    assert progress == {
        "jobs": [
            {"name": "workers", "active": 0, "ready": 0, "succeeded": 3, "failed": 0, "suspended": 0},
            {"name": "driver", "active": 0, "ready": 0, "succeeded": 1, "failed": 0, "suspended": 0},
        ]
    }


# --------------------------------------------------------------------------- mpi-operator's MPIJob


def test_mpi_operator_failures_keep_the_launchers_reason():
    evaluation = evaluate(load_payload("mpi_operator/mpijob_launcher_failed.yaml"))

    assert (evaluation.phase, evaluation.reason) == (Phase.FAILED, "BackoffLimitExceeded/")
    assert evaluation.kind == "MPIJob"
