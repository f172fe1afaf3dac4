"""The pods of the new kinds, found through ownership, and which of them leads for ``result``.

Labels and owner references as each controller writes them: the JobSet controller (batch Jobs labelled
``jobset.sigs.k8s.io/*``), KubeRay (the submitter Job of the RayJob's name; head and workers owned by the
RayCluster named in ``status.rayClusterName``, labelled ``ray.io/cluster``), mpi-operator (workers owned by the
MPIJob, the launcher's pod by the ``<name>-launcher`` batch Job), the Spark operator (the driver pod owned by
the application, ``spark-role=driver``; executors owned by the driver) and Volcano (pods owned by the Job).
"""

from __future__ import annotations

from typing import Any

from jobsync.core.result import from_pods, leading_pods
from jobsync.evaluation.kinds import lookup
from jobsync.run.pods import job_pods
from jobsync.settings import parse_allowed_kinds
from jobsync_cli.preflight import grants as required
from tests.unit.test_pod_ownership import NS, Objects, obj, ref

RAYJOB = lookup("ray.io/v1", "RayJob")
MPIJOB = lookup("kubeflow.org/v2beta1", "MPIJob")
SPARK = lookup("sparkoperator.k8s.io/v1beta2", "SparkApplication")
VCJOB = lookup("batch.volcano.sh/v1alpha1", "Job")
JOBSET = lookup("jobset.x-k8s.io/v1alpha2", "JobSet")


def with_message(pod: dict[str, Any], container: str, message: str) -> dict[str, Any]:
    state = {"terminated": {"exitCode": 0, "reason": "Completed", "message": message}}
    return pod | {"status": {"phase": "Succeeded", "containerStatuses": [{"name": container, "state": state}]}}


def ray_world() -> tuple[Objects, dict[str, Any]]:
    """A RayJob ``r`` (uid r1): its submitter Job ``r``, its RayCluster ``r-abcde``, and their pods."""
    status = {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "rayClusterName": "r-abcde"}
    rayjob = obj("r", "r1") | {"apiVersion": "ray.io/v1", "kind": "RayJob", "status": status}
    submitter = obj("r", "b1", ref("ray.io/v1", "RayJob", "r", "r1"))
    cluster = obj("r-abcde", "c1", ref("ray.io/v1", "RayJob", "r", "r1"))
    other_cluster = obj("r-zzzzz", "c2", ref("ray.io/v1", "RayJob", "r", "an-earlier-rayjob"))
    batch = {"batch.kubernetes.io/job-name": "r", "ray.io/originated-from-cr-name": "r"}
    head = {"ray.io/cluster": "r-abcde", "ray.io/node-type": "head"}
    pods = [
        with_message(
            obj("r-xk2lp", "p1", ref("batch/v1", "Job", "r", "b1"), labels=batch), "ray-job-submitter", '"ok"'
        ),
        obj("r-abcde-head-7x", "p2", ref("ray.io/v1", "RayCluster", "r-abcde", "c1"), labels=head),
        obj(
            "r-abcde-worker-1",
            "p3",
            ref("ray.io/v1", "RayCluster", "r-abcde", "c1"),
            labels=head | {"ray.io/node-type": "worker"},
        ),
        obj("r-abcde-stray", "p4", ref("ray.io/v1", "RayCluster", "r-zzzzz", "c2"), labels=head),
    ]
    by_kind = {("Job", "r"): submitter, ("RayCluster", "r-abcde"): cluster, ("RayCluster", "r-zzzzz"): other_cluster}
    return Objects(by_kind, pods), rayjob


def test_a_rayjobs_pods_are_its_submitters_and_its_clusters():
    cluster, rayjob = ray_world()

    found = job_pods(RAYJOB, NS, "r", "r1", cluster, rayjob["status"])

    assert found is not None
    assert [p["metadata"]["name"] for p in found.pods] == ["r-xk2lp", "r-abcde-head-7x", "r-abcde-worker-1"]
    assert found.ignored == ("r-abcde-stray",)
    assert ("list_pods", "batch.kubernetes.io/job-name=r") in cluster.calls
    assert ("list_pods", "ray.io/cluster=r-abcde") in cluster.calls
    assert from_pods(RAYJOB, found.pods) == "ok"  # the submitter leads


def test_before_kuberay_names_the_cluster_only_the_submitter_is_looked_for():
    cluster, _ = ray_world()

    found = job_pods(RAYJOB, NS, "r", "r1", cluster, {"jobDeploymentStatus": "Initializing"})

    assert found is not None and [p["metadata"]["name"] for p in found.pods] == ["r-xk2lp"]
    assert [c for c in cluster.calls if c[0] == "list_pods"] == [("list_pods", "batch.kubernetes.io/job-name=r")]


def test_in_sidecar_mode_the_head_pods_submitter_leads():
    head = with_message(obj("h", "p", labels={"ray.io/node-type": "head"}), "ray-job-submitter", '{"rows": 3}')
    worker = with_message(obj("w", "q", labels={"ray.io/node-type": "worker"}), "ray-worker", '"no"')

    assert from_pods(RAYJOB, [worker, head]) == {"rows": 3}


def test_an_mpi_operator_jobs_launcher_is_reached_through_its_batch_job():
    labels = {"training.kubeflow.org/job-name": "pi", "training.kubeflow.org/operator-name": "mpi-operator"}
    launcher_job = obj("pi-launcher", "b1", ref("kubeflow.org/v2beta1", "MPIJob", "pi", "m1"))
    launcher = obj(
        "pi-launcher-x7",
        "p1",
        ref("batch/v1", "Job", "pi-launcher", "b1"),
        labels=labels | {"training.kubeflow.org/job-role": "launcher"},
    )
    worker = obj(
        "pi-worker-0",
        "p2",
        ref("kubeflow.org/v2beta1", "MPIJob", "pi", "m1"),
        labels=labels | {"training.kubeflow.org/job-role": "worker"},
    )
    stranger = obj("pi-hand-made", "p3", labels=labels)
    cluster = Objects({("Job", "pi-launcher"): launcher_job}, [launcher, worker, stranger])

    found = job_pods(MPIJOB, NS, "pi", "m1", cluster)

    assert found is not None
    assert [p["metadata"]["name"] for p in found.pods] == ["pi-launcher-x7", "pi-worker-0"]
    assert found.ignored == ("pi-hand-made",)
    assert leading_pods(MPIJOB, found.pods) == [launcher]


def test_a_spark_applications_pods_are_its_driver_only():
    cluster = Objects({}, [])
    found = job_pods(SPARK, NS, "spark-pi", "s1", cluster)

    assert found is not None
    assert cluster.calls == [("list_pods", "sparkoperator.k8s.io/app-name=spark-pi,spark-role=driver")]
    driver = with_message(obj("spark-pi-driver", "p", labels={"spark-role": "driver"}), "spark-kubernetes-driver", "42")
    assert from_pods(SPARK, [driver]) == 42


def test_a_volcano_jobs_leader_is_its_master_task_index_zero():
    def task(name: str, index: int, message: str) -> dict[str, Any]:
        labels = {"volcano.sh/job-name": "v", "volcano.sh/task-spec": name, "volcano.sh/task-index": str(index)}
        return with_message(obj(f"v-{name}-{index}", f"u-{name}-{index}", labels=labels), "main", message)

    assert from_pods(VCJOB, [task("worker", 0, '"w0"'), task("master", 0, '"m0"'), task("worker", 1, '"w1"')]) == "m0"
    assert from_pods(VCJOB, [task("train", 1, '"t1"'), task("train", 0, '"t0"')]) == "t0"  # its only task
    assert from_pods(VCJOB, [task("a", 0, '"a"'), task("b", 0, '"b"')]) is None  # no leading role to choose


def test_a_jobsets_leader_is_its_first_jobs_first_pod():
    def jpod(global_index: int, completion: int, message: str) -> dict[str, Any]:
        labels = {
            "jobset.sigs.k8s.io/job-global-index": str(global_index),
            "batch.kubernetes.io/job-completion-index": str(completion),
        }
        return with_message(obj(f"js-{global_index}-{completion}", "u", labels=labels), "main", message)

    assert from_pods(JOBSET, [jpod(1, 0, '"second job"'), jpod(0, 1, '"rank 1"'), jpod(0, 0, '"rank 0"')]) == "rank 0"


def test_a_jobset_owns_its_pods_through_its_batch_jobs():
    labels = {"jobset.sigs.k8s.io/jobset-name": "js"}
    job = obj("js-workers-0", "b1", ref("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "s1"))
    pod = obj("js-workers-0-0", "p1", ref("batch/v1", "Job", "js-workers-0", "b1"), labels=labels)
    found = job_pods(JOBSET, NS, "js", "s1", Objects({("Job", "js-workers-0"): job}, [pod]))

    assert found is not None and found.pods == [pod]


def grants(kinds: str) -> set[tuple[str, str, str]]:
    """What the functions must be allowed (the list the chart's Role and the preflight are held to)."""
    return {grant.key() for grant in required.functions(parse_allowed_kinds(kinds))}


def test_each_kind_is_granted_under_its_real_api_group_with_get_on_what_owns_its_pods():
    plain = grants("PyTorchJob")
    verbs = list(required.JOB_VERBS)
    assert grants("PyTorchJob,RayJob") - plain == {
        *((v, "ray.io", "rayjobs") for v in verbs),
        ("get", "ray.io", "rayclusters"),
        ("get", "batch", "jobs"),
    }
    assert grants("PyTorchJob,JobSet") - plain == {
        *((v, "jobset.x-k8s.io", "jobsets") for v in verbs),
        ("get", "batch", "jobs"),
    }
    assert grants("PyTorchJob,SparkApplication") - plain == {
        (v, "sparkoperator.k8s.io", "sparkapplications") for v in verbs
    }
    volcano = grants("PyTorchJob,batch.volcano.sh/v1alpha1/Job") - plain
    assert volcano == {(v, "batch.volcano.sh", "jobs") for v in verbs}
    # MPIJob names both operators' versions (one group, one plural); mpi-operator's launcher is a batch Job.
    assert grants("PyTorchJob,MPIJob") - plain == {
        *((v, "kubeflow.org", "mpijobs") for v in verbs),
        ("get", "batch", "jobs"),
    }


def test_job_alone_is_batch_v1_and_volcanos_job_is_named_by_its_api_version():
    assert [s.api_version for s in parse_allowed_kinds("Job")] == ["batch/v1"]
    assert [s.api_version for s in parse_allowed_kinds("batch.volcano.sh/v1alpha1/Job")] == [
        "batch.volcano.sh/v1alpha1"
    ]
    assert sorted(s.api_version for s in parse_allowed_kinds("MPIJob")) == ["kubeflow.org/v1", "kubeflow.org/v2beta1"]
