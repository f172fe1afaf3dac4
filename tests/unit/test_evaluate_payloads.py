"""Every real payload under tests/payloads, through evaluate(), against the verdict its source shows."""

from __future__ import annotations

import pytest

from jobsync import Phase, evaluate
from jobsync.errors import EvaluationError
from tests.payloads import load_payload, payload_names

# payload -> (phase, reason, since); reason and since are checked when not None.
EXPECTED: dict[str, tuple[Phase, str | None, str | None]] = {
    # Kubeflow training-operator v1
    "kubeflow_v1/pytorchjob_succeeded_hyperpod.yaml": (Phase.SUCCEEDED, "PyTorchJobSucceeded", "2024-11-18T21:25:24Z"),
    "kubeflow_v1/pytorchjob_succeeded_at_index5.yaml": (Phase.SUCCEEDED, "PyTorchJobSucceeded", "2024-11-18T21:25:24Z"),
    "kubeflow_v1/tfjob_succeeded.yaml": (Phase.SUCCEEDED, "TFJobSucceeded", "2021-09-06T11:49:30Z"),
    "kubeflow_v1/tfjob_succeeded_out_of_order.yaml": (Phase.SUCCEEDED, "TFJobSucceeded", "2021-09-06T11:49:30Z"),
    "kubeflow_v1/xgboostjob_succeeded.yaml": (Phase.SUCCEEDED, "XGBoostJobSucceeded", "2021-09-06T18:34:23Z"),
    "kubeflow_v1/paddlejob_succeeded.yaml": (Phase.SUCCEEDED, "JobSucceeded", "2022-10-24T04:04:43Z"),
    "kubeflow_v1/jaxjob_succeeded.yaml": (Phase.SUCCEEDED, "JAXJobSucceeded", "2024-09-22T20:11:34Z"),
    "kubeflow_v1/mpijob_succeeded.yaml": (Phase.SUCCEEDED, "MPIJobSucceeded", "2019-07-09T22:17:06Z"),
    "kubeflow_v1/pytorchjob_failed_after_restarting.yaml": (Phase.FAILED, "PyTorchJobFailed", "2024-04-05T15:20:02Z"),
    "kubeflow_v1/pytorchjob_restarting.yaml": (Phase.RUNNING, "PyTorchJobRestarting", "2024-04-05T15:12:25Z"),
    "kubeflow_v1/pytorchjob_running.yaml": (Phase.RUNNING, "PyTorchJobRunning", "2024-01-01T00:00:10Z"),
    "kubeflow_v1/pytorchjob_resumed.yaml": (Phase.RUNNING, "PyTorchJobRunning", None),
    "kubeflow_v1/pytorchjob_suspended_after_running.yaml": (Phase.SUSPENDED, "PyTorchJobSuspended", None),
    "kubeflow_v1/pytorchjob_created_suspended.yaml": (Phase.SUSPENDED, "PyTorchJobSuspended", None),
    "kubeflow_v1/pytorchjob_created.yaml": (Phase.PENDING, "PyTorchJobCreated", None),
    "kubeflow_v1/pytorchjob_no_status.yaml": (Phase.PENDING, "NoStatus", None),
    # Kubeflow Trainer v2
    "trainer_v2/trainjob_complete.yaml": (Phase.SUCCEEDED, "AllJobsCompleted", "2025-05-01T10:12:41Z"),
    "trainer_v2/trainjob_resumed_complete.yaml": (Phase.SUCCEEDED, "AllJobsCompleted", None),
    "trainer_v2/trainjob_deadline_exceeded.yaml": (Phase.FAILED, "DeadlineExceeded", "2025-05-01T11:00:00Z"),
    "trainer_v2/trainjob_failed_jobs.yaml": (Phase.FAILED, "FailedJobs", None),
    "trainer_v2/trainjob_suspended.yaml": (Phase.SUSPENDED, "Suspended", None),
    "trainer_v2/trainjob_running.yaml": (Phase.RUNNING, "JobsActive", None),
    "trainer_v2/trainjob_created.yaml": (Phase.PENDING, "JobsCreationSucceeded", None),
    "trainer_v2/trainjob_progress.yaml": (Phase.RUNNING, "JobsActive", None),
    "trainer_v2/trainjob_progress_e2e.yaml": (Phase.SUCCEEDED, "AllJobsCompleted", "2026-08-06T16:00:30Z"),
    # JobSet
    "jobset/jobset_completed.yaml": (Phase.SUCCEEDED, "AllJobsCompleted", "2026-05-08T16:05:40Z"),
    "jobset/jobset_failed_jobs.yaml": (Phase.FAILED, "FailedJobs", "2026-05-08T16:02:11Z"),
    "jobset/jobset_reached_max_restarts.yaml": (Phase.FAILED, "ReachedMaxRestarts", "2026-05-08T16:10:02Z"),
    "jobset/jobset_fail_jobset_action.yaml": (Phase.FAILED, "FailJobSetFailurePolicyAction", None),
    "jobset/jobset_restarting.yaml": (Phase.RUNNING, "Restarting: DefaultFailurePolicy", "2026-05-08T16:08:00Z"),
    "jobset/jobset_suspended.yaml": (Phase.SUSPENDED, "SuspendedJobs", "2026-05-08T16:00:01Z"),
    "jobset/jobset_startup_in_progress.yaml": (Phase.PENDING, "InOrderStartupPolicyInProgress", None),
    "jobset/jobset_running.yaml": (Phase.RUNNING, "JobsReady", None),
    "jobset/jobset_no_status.yaml": (Phase.PENDING, "NoStatus", None),
    # mpi-operator MPIJob (kubeflow.org/v2beta1)
    "mpi_operator/mpijob_succeeded_readme.yaml": (Phase.SUCCEEDED, "MPIJobSucceeded", "2019-07-09T22:17:06Z"),
    "mpi_operator/mpijob_launcher_failed.yaml": (Phase.FAILED, "BackoffLimitExceeded/", "2026-07-02T17:05:30Z"),
    "mpi_operator/mpijob_evicted.yaml": (Phase.FAILED, "MPIJobEvicted", "2026-07-02T17:20:00Z"),
    "mpi_operator/mpijob_suspended.yaml": (Phase.SUSPENDED, "MPIJobSuspended", None),
    # KubeRay RayJob
    "ray/rayjob_complete_succeeded.yaml": (Phase.SUCCEEDED, "RayJobSucceeded", "2026-07-01T09:04:12Z"),
    "ray/rayjob_complete_failed_older.yaml": (Phase.FAILED, "RayJobFailed", "2024-01-10T08:00:40Z"),
    "ray/rayjob_stopped.yaml": (Phase.STOPPED, "RayJobStopped", "2026-07-01T10:02:00Z"),
    "ray/rayjob_failed_app.yaml": (Phase.FAILED, "AppFailed", "2026-07-01T09:11:30Z"),
    "ray/rayjob_deadline_exceeded.yaml": (Phase.FAILED, "DeadlineExceeded", "2026-07-01T11:00:06Z"),
    "ray/rayjob_submission_failed.yaml": (Phase.FAILED, "SubmissionFailed", "2026-07-01T12:03:10Z"),
    "ray/rayjob_validation_failed.yaml": (Phase.FAILED, "ValidationFailed", None),
    "ray/rayjob_succeeded_not_completed.yaml": (Phase.RUNNING, "Finishing: SUCCEEDED", None),
    "ray/rayjob_running.yaml": (Phase.RUNNING, "RayJobRunning", "2026-07-01T13:01:20Z"),
    "ray/rayjob_initializing.yaml": (Phase.PENDING, "Initializing", None),
    "ray/rayjob_suspended.yaml": (Phase.SUSPENDED, "Suspended", None),
    "ray/rayjob_retrying.yaml": (Phase.RUNNING, "Restarting: Retrying", None),
    # Spark operator SparkApplication
    "spark/sparkapplication_completed.yaml": (Phase.SUCCEEDED, "COMPLETED", "2026-08-01T10:01:15Z"),
    "spark/sparkapplication_failed.yaml": (Phase.FAILED, "FAILED", "2026-08-01T11:01:02Z"),
    "spark/sparkapplication_submission_failed.yaml": (Phase.PENDING, "SUBMISSION_FAILED", None),
    "spark/sparkapplication_driver_gone.yaml": (Phase.RUNNING, "FAILING", None),
    "spark/sparkapplication_running.yaml": (Phase.RUNNING, "RUNNING", None),
    "spark/sparkapplication_submitted.yaml": (Phase.PENDING, "SUBMITTED", None),
    "spark/sparkapplication_unknown.yaml": (Phase.UNKNOWN, "UNKNOWN", None),
    # Volcano Job
    "volcano/job_completed.yaml": (Phase.SUCCEEDED, "Completed", "2026-06-10T08:03:10Z"),
    "volcano/job_running.yaml": (Phase.RUNNING, "Running", "2026-06-10T08:00:20Z"),
    "volcano/job_pending.yaml": (Phase.PENDING, "Pending", "2026-06-10T08:00:00Z"),
    "volcano/job_failed.yaml": (Phase.FAILED, "Failed", "2026-06-10T09:00:40Z"),
    "volcano/job_aborted_by_policy.yaml": (Phase.FAILED, "Aborted", "2026-06-10T10:00:14Z"),
    "volcano/job_aborted_suspended.yaml": (Phase.SUSPENDED, "Aborted", "2026-06-10T11:05:00Z"),
    "volcano/job_terminated.yaml": (Phase.FAILED, "Terminated", "2026-06-10T12:00:14Z"),
    "volcano/job_restarting.yaml": (Phase.RUNNING, "Restarting", "2026-06-10T13:00:12Z"),
    # batch/v1 Job
    "batch/job_complete.yaml": (Phase.SUCCEEDED, "CompletionsReached", "2025-03-06T05:27:56Z"),
    "batch/job_failed.yaml": (Phase.FAILED, "PodFailurePolicy", None),
    "batch/job_failure_target.yaml": (Phase.RUNNING, "FailureTarget: PodFailurePolicy (pods terminating)", None),
    "batch/job_success_criteria_met.yaml": (
        Phase.RUNNING,
        "SuccessCriteriaMet: CompletionsReached (pods terminating)",
        "2025-03-06T05:27:56Z",
    ),
    "batch/job_suspended.yaml": (Phase.SUSPENDED, "Suspended", "2021-02-05T13:14:33Z"),
    "batch/job_running_docs.yaml": (Phase.RUNNING, "Active", "2022-06-15T08:40:15Z"),
    "batch/job_running_kube_rs.yaml": (Phase.RUNNING, "Active", "2025-03-06T05:27:27Z"),
    "batch/job_no_status.yaml": (Phase.PENDING, "NoStatus", None),
    # SageMaker Operators for Kubernetes
    "sagemaker/trainingjob_inprogress.yaml": (Phase.RUNNING, "InProgress", "2019-11-20T23:44:29Z"),
    "sagemaker/trainingjob_reconciling.yaml": (Phase.PENDING, "ReconcilingTrainingJob", None),
    "sagemaker/trainingjob_synchronizing.yaml": (Phase.PENDING, "SynchronizingK8sJobWithSageMaker", None),
    "sagemaker/trainingjob_no_status.yaml": (Phase.PENDING, "NoStatus", None),
    "sagemaker/hyperparametertuningjob_completed.yaml": (Phase.SUCCEEDED, "Completed", "2019-10-17T01:21:01Z"),
    "sagemaker/hyperparametertuningjob_reconciling.yaml": (Phase.PENDING, "ReconcilingTuningJob", None),
    "sagemaker/batchtransformjob_completed.yaml": (Phase.SUCCEEDED, "Completed", "2019-11-19T22:50:40Z"),
    "sagemaker/processingjob_inprogress.yaml": (Phase.RUNNING, "InProgress", "2020-09-22T21:14:29Z"),
    "sagemaker/processingjob_reconciling.yaml": (Phase.PENDING, "Reconciling", None),
    "sagemaker/processingjob_error.yaml": (Phase.FAILED, "Error", None),
    "sagemaker/hostingdeployment_creating.yaml": (Phase.RUNNING, "Creating", "2019-11-22T19:40:04Z"),
    "sagemaker/hostingdeployment_reconciling.yaml": (Phase.PENDING, "ReconcilingEndpoint", None),
    "sagemaker/hostingdeployment_inservice.yaml": (Phase.SUCCEEDED, "InService", None),
    "sagemaker/hostingautoscalingpolicy_created.yaml": (Phase.SUCCEEDED, "Created", None),
    "sagemaker/hostingautoscalingpolicy_reconciling.yaml": (Phase.PENDING, "Reconciling", None),
    "sagemaker/hostingautoscalingpolicy_error.yaml": (Phase.FAILED, "Error", None),
    # ACK SageMaker controller
    "ack/trainingjob_inprogress.yaml": (Phase.RUNNING, "InProgress", "2021-09-09T18:02:11Z"),
    "ack/trainingjob_completed.yaml": (Phase.SUCCEEDED, "Completed", "2021-09-09T18:06:40Z"),
    "ack/trainingjob_terminal.yaml": (Phase.FAILED, "ACK.Terminal", "2022-02-03T21:08:14Z"),
    "ack/processingjob_completed.yaml": (Phase.SUCCEEDED, "Completed", "2023-03-01T10:20:00Z"),
    "ack/transformjob_inprogress.yaml": (Phase.RUNNING, "InProgress", "2023-03-01T10:00:00Z"),
    "ack/hyperparametertuningjob_stopped.yaml": (Phase.STOPPED, "Stopped", None),
    # Azure ML
    "azure_ml/job_completed.json": (Phase.SUCCEEDED, "Completed", None),
    "azure_ml/job_running.json": (Phase.RUNNING, "Running", None),
}

# Payloads jobsync must refuse (their apiVersion is not one it serves).
REFUSED = {"kubeflow_v1/pytorchjob_succeeded_v1beta1_readme.yaml": "kubeflow.org/v1beta1"}


def test_every_payload_has_an_expectation():
    assert sorted({*EXPECTED, *REFUSED}) == payload_names()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_payload_verdict(name):
    phase, reason, since = EXPECTED[name]
    obj = load_payload(name)

    evaluation = evaluate(obj)

    assert evaluation.phase is phase
    assert evaluation.kind == obj["kind"]
    assert evaluation.terminal is phase.terminal
    if reason is not None:
        assert evaluation.reason == reason
    if since is not None:
        assert evaluation.since == since
    assert evaluation.to_dict()["phase"] == str(phase)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_payload(name):
    with pytest.raises(EvaluationError, match=REFUSED[name]):
        evaluate(load_payload(name))
