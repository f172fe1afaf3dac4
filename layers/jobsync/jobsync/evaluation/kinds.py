"""The kind registry: one entry per job kind jobsync understands.

Everything that differs between kinds lives here: where the API serves it,
which evaluator reads its status, and how to find the pods it runs (the label
that selects them, and the objects between the job and its pods that ownership
goes through, ``jobsync.run.pods``). Adding a kind is one entry in ``KINDS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobsync.errors import EvaluationError
from jobsync.evaluation import ack, azure_ml, batch, kubeflow, sagemaker, trainer
from jobsync.evaluation.conditions import Evaluator
from jobsync.evaluation.phase import Evaluation

AZURE_ML_KIND = "AzureMLJob"


@dataclass(frozen=True)
class KindSpec:
    """What jobsync knows about one kind.

    ``api_version`` is None for statuses that do not come from Kubernetes
    (Azure ML). ``pod_label`` is the label the operator puts on the job's
    pods, with the job's name as its value; None where no pods run in the
    cluster (the SageMaker operators run the work in SageMaker). The label only
    selects: a pod is the job's when its controller reference leads to the job,
    directly, or (``via``, outermost first) through the objects the job's
    controller creates, which own the pods (a TrainJob's JobSet, the JobSet's
    batch Jobs).
    """

    api_version: str | None
    kind: str
    plural: str | None
    evaluator: Evaluator
    pod_label: str | None = None
    via: tuple[KindSpec, ...] = ()

    @property
    def group(self) -> str:
        if not self.api_version or "/" not in self.api_version:
            return ""
        return self.api_version.split("/", 1)[0]

    @property
    def version(self) -> str:
        return (self.api_version or "").rsplit("/", 1)[-1]

    def pod_selector(self, job_name: str) -> str | None:
        return f"{self.pod_label}={job_name}" if self.pod_label else None


def _not_evaluated(obj: Mapping[str, Any]) -> Evaluation:
    raise EvaluationError("JobSet is read only as the owner of a TrainJob's batch Jobs, not run as a kind of its own")


_KUBEFLOW_POD_LABEL = "training.kubeflow.org/job-name"
_JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
_BATCH_JOB = KindSpec("batch/v1", "Job", "jobs", batch.batch_job, "batch.kubernetes.io/job-name")
# Not an allowed kind (it has no evaluator yet): the JobSet a TrainJob's controller creates, of the TrainJob's
# name. As a kind of its own it would own its pods through its batch Jobs: via=(_BATCH_JOB,).
_JOBSET = KindSpec("jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets", _not_evaluated, _JOBSET_NAME_LABEL)
_SAGEMAKER = "sagemaker.aws.amazon.com/v1"
_ACK_SAGEMAKER = "sagemaker.services.k8s.aws/v1alpha1"

KINDS: tuple[KindSpec, ...] = (
    # Kubeflow training-operator v1
    KindSpec("kubeflow.org/v1", "PyTorchJob", "pytorchjobs", kubeflow.kubeflow_v1, _KUBEFLOW_POD_LABEL),
    KindSpec("kubeflow.org/v1", "TFJob", "tfjobs", kubeflow.kubeflow_v1, _KUBEFLOW_POD_LABEL),
    KindSpec("kubeflow.org/v1", "MPIJob", "mpijobs", kubeflow.kubeflow_v1, _KUBEFLOW_POD_LABEL),
    KindSpec("kubeflow.org/v1", "XGBoostJob", "xgboostjobs", kubeflow.kubeflow_v1, _KUBEFLOW_POD_LABEL),
    KindSpec("kubeflow.org/v1", "PaddleJob", "paddlejobs", kubeflow.kubeflow_v1, _KUBEFLOW_POD_LABEL),
    KindSpec("kubeflow.org/v1", "JAXJob", "jaxjobs", kubeflow.kubeflow_v1, _KUBEFLOW_POD_LABEL),
    # Kubeflow Trainer v2: a TrainJob runs as a JobSet of the same name, whose batch Jobs own the pods.
    KindSpec(
        "trainer.kubeflow.org/v1alpha1",
        "TrainJob",
        "trainjobs",
        trainer.trainer_v2,
        _JOBSET_NAME_LABEL,
        via=(_JOBSET, _BATCH_JOB),
    ),
    _BATCH_JOB,
    # SageMaker Operators for Kubernetes
    KindSpec(_SAGEMAKER, "TrainingJob", "trainingjobs", sagemaker.sagemaker_training_job),
    KindSpec(_SAGEMAKER, "HyperparameterTuningJob", "hyperparametertuningjobs", sagemaker.sagemaker_tuning_job),
    KindSpec(_SAGEMAKER, "BatchTransformJob", "batchtransformjobs", sagemaker.sagemaker_transform_job),
    KindSpec(_SAGEMAKER, "ProcessingJob", "processingjobs", sagemaker.sagemaker_processing_job),
    KindSpec(_SAGEMAKER, "HostingDeployment", "hostingdeployments", sagemaker.sagemaker_hosting_deployment),
    KindSpec(
        _SAGEMAKER, "HostingAutoscalingPolicy", "hostingautoscalingpolicies", sagemaker.sagemaker_autoscaling_policy
    ),
    # ACK SageMaker controller
    KindSpec(_ACK_SAGEMAKER, "TrainingJob", "trainingjobs", ack.ack_training_job),
    KindSpec(_ACK_SAGEMAKER, "ProcessingJob", "processingjobs", ack.ack_processing_job),
    KindSpec(_ACK_SAGEMAKER, "TransformJob", "transformjobs", ack.ack_transform_job),
    KindSpec(_ACK_SAGEMAKER, "HyperParameterTuningJob", "hyperparametertuningjobs", ack.ack_tuning_job),
    # Azure ML: the status string of azure-ai-ml's Job, not a Kubernetes object.
    KindSpec(None, AZURE_ML_KIND, None, azure_ml.azure_ml_job),
)

_BY_KEY: dict[tuple[str | None, str], KindSpec] = {(k.api_version, k.kind): k for k in KINDS}


def lookup(api_version: str | None, kind: str) -> KindSpec:
    """The registry entry for ``apiVersion``/``kind``, or an error naming both."""
    spec = _BY_KEY.get((api_version, kind))
    if spec is None:
        known = ", ".join(sorted({f"{k.api_version or '-'} {k.kind}" for k in KINDS}))
        raise EvaluationError(f"unsupported kind: apiVersion {api_version!r} kind {kind!r} (known: {known})")
    return spec


def by_kind_name(kind: str) -> list[KindSpec]:
    """All entries with this ``kind`` (several API groups may share a name)."""
    return [k for k in KINDS if k.kind == kind]
