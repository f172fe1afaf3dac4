"""The kind registry: one entry per job kind jobsync understands.

Everything that differs between kinds lives here: where the API serves it,
which evaluator reads its status, and how to find the pods it runs (the label
that selects them, and the objects between the job and its pods that ownership
goes through, ``jobsync.run.pods``). Adding a kind is one entry in ``KINDS``.
RayJob, SparkApplication and Volcano's Job are read from their status alone
here; their engines (a Ray head, a Spark driver, the Volcano scheduler) are
what runs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobsync.errors import EvaluationError
from jobsync.evaluation import ack, azure_ml, batch, jobset, kubeflow, ray, sagemaker, spark, trainer, volcano
from jobsync.evaluation.conditions import Evaluator
from jobsync.evaluation.phase import Evaluation

AZURE_ML_KIND = "AzureMLJob"


@dataclass(frozen=True)
class PodRoute:
    """One way to a job's pods: a LIST by label, then ownership.

    The pods labelled ``label`` (with the job's name as its value, or the
    value of ``status[named_by]`` when the controller names what owns the pods
    itself, like a RayJob's RayCluster), and ``also`` (more selector terms,
    ``spark-role=driver``), count when their controller reference leads to the
    job through one of ``chains``: each the objects between the job and its
    pods, outermost first; ``()`` is directly.
    """

    label: str
    chains: tuple[tuple[KindSpec, ...], ...] = ((),)
    named_by: str | None = None
    also: str = ""

    def selector(self, job_name: str, status: Mapping[str, Any] | None = None) -> str | None:
        """The label selector for the job's pods; None when the status does not name them yet."""
        value: Any = job_name
        if self.named_by is not None:
            value = status.get(self.named_by) if isinstance(status, Mapping) else None
            if not isinstance(value, str) or not value:
                return None
        return ",".join(t for t in (f"{self.label}={value}", self.also) if t)


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
    batch Jobs). A kind whose pods are reached in more than one way (a
    RayJob's head through its RayCluster, its submitter through a batch Job)
    lists its ``routes`` instead. ``by_name``: whether the kind name alone
    names it in ``JOBSYNC_ALLOWED_KINDS`` (Volcano's ``Job`` is named by its
    apiVersion: ``Job`` alone is batch/v1).
    """

    api_version: str | None
    kind: str
    plural: str | None
    evaluator: Evaluator
    pod_label: str | None = None
    via: tuple[KindSpec, ...] = ()
    routes: tuple[PodRoute, ...] = ()
    by_name: bool = True

    @property
    def pod_routes(self) -> tuple[PodRoute, ...]:
        """Every way to the job's pods; none for a kind without pods in the cluster."""
        if self.routes:
            return self.routes
        return (PodRoute(self.pod_label, (self.via,)),) if self.pod_label else ()

    @property
    def owners(self) -> tuple[KindSpec, ...]:
        """The kinds of the objects between the job and its pods (read by name, one by one)."""
        parts = [part for route in self.pod_routes for chain in route.chains for part in chain]
        return tuple(dict.fromkeys(parts))

    @property
    def group(self) -> str:
        if not self.api_version or "/" not in self.api_version:
            return ""
        return self.api_version.split("/", 1)[0]

    @property
    def version(self) -> str:
        return (self.api_version or "").rsplit("/", 1)[-1]

    def pod_selector(self, job_name: str) -> str | None:
        """The selector of the first way to the job's pods; None when the kind runs no pods in the cluster."""
        routes = self.pod_routes
        return routes[0].selector(job_name) if routes else None


def _not_evaluated(obj: Mapping[str, Any]) -> Evaluation:
    raise EvaluationError(f"{obj.get('kind')} is read only as an owner of a job's pods, not run as a kind of its own")


_KUBEFLOW_POD_LABEL = "training.kubeflow.org/job-name"
_JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
_BATCH_JOB_NAME = "batch.kubernetes.io/job-name"
_BATCH_JOB = KindSpec("batch/v1", "Job", "jobs", batch.batch_job, _BATCH_JOB_NAME)
# A JobSet owns its pods through its batch Jobs; a TrainJob's JobSet has the TrainJob's name.
_JOBSET = KindSpec(
    "jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets", jobset.jobset, _JOBSET_NAME_LABEL, via=(_BATCH_JOB,)
)
# The RayCluster a RayJob creates (named in status.rayClusterName) owns the head and worker pods.
_RAY_CLUSTER = KindSpec("ray.io/v1", "RayCluster", "rayclusters", _not_evaluated)
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
    # mpi-operator's MPIJob: the workers are the MPIJob's own pods, the launcher's pod is its batch Job's.
    KindSpec(
        "kubeflow.org/v2beta1",
        "MPIJob",
        "mpijobs",
        kubeflow.kubeflow_v1,
        routes=(PodRoute(_KUBEFLOW_POD_LABEL, chains=((), (_BATCH_JOB,))),),
    ),
    _BATCH_JOB,
    _JOBSET,
    # KubeRay: the submitter Job has the RayJob's name; the RayCluster's pods are labelled with the cluster's name.
    KindSpec(
        "ray.io/v1",
        "RayJob",
        "rayjobs",
        ray.ray_job,
        routes=(
            PodRoute(_BATCH_JOB_NAME, chains=((_BATCH_JOB,),)),
            PodRoute("ray.io/cluster", chains=((_RAY_CLUSTER,),), named_by="rayClusterName"),
        ),
    ),
    # Spark operator: the driver pod is the application's; its executors are the driver's (Spark sets them so).
    KindSpec(
        "sparkoperator.k8s.io/v1beta2",
        "SparkApplication",
        "sparkapplications",
        spark.spark_application,
        routes=(PodRoute("sparkoperator.k8s.io/app-name", also="spark-role=driver"),),
    ),
    KindSpec("batch.volcano.sh/v1alpha1", "Job", "jobs", volcano.volcano_job, "volcano.sh/job-name", by_name=False),
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
    """The entries a bare ``kind`` names (several API groups may share a name); see ``KindSpec.by_name``."""
    return [k for k in KINDS if k.kind == kind and k.by_name]
