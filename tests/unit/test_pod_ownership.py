"""Which labelled pods are a job's: their controller reference leads to its uid, directly or through the
objects its controller creates (a TrainJob's JobSet, the JobSet's batch Jobs).

Objects as the API serves them: owner references as the controllers write them (training-operator,
Trainer v2's JobSet plugin, the JobSet controller, the job controller: ``controller: true``,
``blockOwnerDeletion: true``).
"""

from __future__ import annotations

from typing import Any

from jobsync.evaluation.kinds import KindSpec, lookup
from jobsync.run import manifests
from jobsync.run.inputs import LoopState
from jobsync.run.pods import NOT_OWNED, JobPods, OwnerRef, controller_of, job_pods, owned, owner_refs
from jobsync.run.poll import poll
from jobsync.settings import Settings
from tests.support.cluster import RecordingCluster

NS = "ml-training"
TRAINJOB = lookup("trainer.kubeflow.org/v1alpha1", "TrainJob")
PYTORCHJOB = lookup("kubeflow.org/v1", "PyTorchJob")
BATCH_JOB = lookup("batch/v1", "Job")
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"


def ref(api_version: str, kind: str, name: str, uid: str, controller: bool | None = True) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
    if controller is not None:
        out |= {"controller": controller, "blockOwnerDeletion": True}
    return out


def obj(name: str, uid: str, *refs: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": uid, "labels": labels or {}}
    if refs:
        meta["ownerReferences"] = list(refs)
    return {"metadata": meta}


# --------------------------------------------------------------------------- the typed view


def test_owner_references_are_read_as_the_api_serves_them_and_odd_entries_are_skipped():
    pod = obj("p", "u", ref("v1", "Node", "n", "n1", controller=None), "junk", ref("batch/v1", "Job", "j", "b1"))
    assert owner_refs(pod) == [OwnerRef("v1", "Node", "n", "n1"), OwnerRef("batch/v1", "Job", "j", "b1", True)]
    assert controller_of(pod) == OwnerRef("batch/v1", "Job", "j", "b1", True)
    assert OwnerRef("v1", "Node", "n", "n1").group == "" and OwnerRef("batch/v1", "Job", "j", "b").group == "batch"
    for odd in ({}, {"metadata": None}, {"metadata": {"ownerReferences": "x"}}, obj("p", "u", ref("v1", "X", "x", ""))):
        assert controller_of(odd) is None


# --------------------------------------------------------------------------- directly owned


def test_a_kubeflow_jobs_pods_are_those_it_controls_directly():
    def never(spec: KindSpec, name: str) -> None:
        raise AssertionError("a kind without via reads no other object")

    mine = obj("j-master-0", "p1", ref("kubeflow.org/v1", "PyTorchJob", "j", "job-uid"))
    others = [
        obj("j-hand-made", "p2"),  # no owner at all
        obj("j-adopted", "p3", ref("kubeflow.org/v1", "PyTorchJob", "j", "job-uid", controller=False)),
        obj("j-old", "p4", ref("kubeflow.org/v1", "PyTorchJob", "j", "uid-of-an-earlier-job-of-that-name")),
    ]
    found = owned([others[0], mine, *others[1:]], "job-uid", PYTORCHJOB.via, never)
    assert found == JobPods([mine], ("j-hand-made", "j-adopted", "j-old"))
    assert owned([mine], "", PYTORCHJOB.via, never).pods == []  # no uid known: nothing is the job's


def test_the_note_names_the_ignored_pods_and_counts_them_all():
    assert JobPods([]).notes() == []
    assert JobPods([], ("a",)).notes() == [
        {"reason": NOT_OWNED, "message": "ignored 1 pod labelled for this job that it does not own: a"}
    ]
    many = JobPods([], tuple(f"p{i}" for i in range(7))).notes()[0]["message"]
    assert many == "ignored 7 pods labelled for this job that it does not own: p0, p1, p2, p3, p4 and 2 more"


# --------------------------------------------------------------------------- through the objects in between


class Objects(RecordingCluster):
    """Jobs, JobSets and pods by kind and name, as the API serves them; ``calls`` lists every request."""

    def __init__(self, by_kind: dict[tuple[str, str], dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        super().__init__(pods=pods)
        self.by_kind = by_kind

    def get(self, spec, namespace: str, name: str):
        self._record("get", f"{spec.kind}/{name}")
        return self.by_kind.get((spec.kind, name))


def trainjob_world() -> tuple[dict[tuple[str, str], dict[str, Any]], list[dict[str, Any]]]:
    """A TrainJob ``tj`` (uid t), its JobSet ``tj`` (uid s), two batch Jobs, and labelled pods of all sorts."""
    labels = {JOBSET_NAME: "tj"}
    trainjob = obj("tj", "t")
    jobset = obj("tj", "s", ref("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "t"))
    node = obj("tj-node-0", "b1", ref(JOBSET_API, "JobSet", "tj", "s"), labels=labels)
    init = obj("tj-dataset-initializer-0", "b2", ref(JOBSET_API, "JobSet", "tj", "s"), labels=labels)
    other_set = obj("other", "x", ref("trainer.kubeflow.org/v1alpha1", "TrainJob", "other", "o"))
    other_job = obj("stray-0", "b3", ref(JOBSET_API, "JobSet", "other", "x"), labels=labels)
    by_kind = {
        ("TrainJob", "tj"): trainjob,
        ("JobSet", "tj"): jobset,
        ("JobSet", "other"): other_set,
        ("Job", "tj-node-0"): node,
        ("Job", "tj-dataset-initializer-0"): init,
        ("Job", "stray-0"): other_job,
    }
    pods = [
        obj("tj-node-0-0", "p1", ref("batch/v1", "Job", "tj-node-0", "b1"), labels=labels),
        obj("tj-node-0-1", "p2", ref("batch/v1", "Job", "tj-node-0", "b1"), labels=labels),
        obj(
            "tj-dataset-initializer-0-0", "p3", ref("batch/v1", "Job", "tj-dataset-initializer-0", "b2"), labels=labels
        ),
        obj("aaa-hand-made", "p4", labels=labels),  # no owner
        obj("tj-node-0-old", "p5", ref("batch/v1", "Job", "tj-node-0", "b-earlier"), labels=labels),  # another Job
        obj("stray-0-0", "p6", ref("batch/v1", "Job", "stray-0", "b3"), labels=labels),  # another JobSet's Job
        obj("direct", "p7", ref("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "t"), labels=labels),
        obj("core-job", "p8", ref("v1", "Job", "tj-node-0", "b1"), labels=labels),  # not batch's Job
        obj("missing-0", "p9", ref("batch/v1", "Job", "missing", "b9"), labels=labels),  # no such Job
    ]
    return by_kind, pods


def test_a_trainjobs_pods_are_those_its_jobsets_batch_jobs_control():
    by_kind, pods = trainjob_world()
    cluster = Objects(by_kind, pods)
    found = job_pods(TRAINJOB, NS, "tj", "t", cluster)
    assert found is not None
    assert [p["metadata"]["name"] for p in found.pods] == ["tj-node-0-0", "tj-node-0-1", "tj-dataset-initializer-0-0"]
    assert found.ignored == ("aaa-hand-made", "tj-node-0-old", "stray-0-0", "direct", "core-job", "missing-0")
    # One LIST by label, then each object a pod names, once: the JobSet for both of its Jobs.
    assert cluster.calls == [
        ("list_pods", f"{JOBSET_NAME}=tj"),
        ("get", "Job/tj-node-0"),
        ("get", "JobSet/tj"),
        ("get", "Job/tj-dataset-initializer-0"),
        ("get", "Job/stray-0"),
        ("get", "JobSet/other"),
        ("get", "Job/missing"),
    ]


def test_a_jobset_of_the_trainjobs_name_that_another_trainjob_controls_owns_none_of_its_pods():
    by_kind, pods = trainjob_world()
    by_kind[("JobSet", "tj")] = obj("tj", "s", ref("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "t-earlier"))
    found = job_pods(TRAINJOB, NS, "tj", "t", Objects(by_kind, pods))
    assert found is not None and found.pods == []


def test_a_jobset_as_a_kind_of_its_own_owns_its_pods_through_its_batch_jobs():
    jobset_kind = KindSpec(JOBSET_API, "JobSet", "jobsets", TRAINJOB.evaluator, JOBSET_NAME, via=(BATCH_JOB,))
    by_kind, pods = trainjob_world()
    found = job_pods(jobset_kind, NS, "tj", "s", Objects(by_kind, pods))
    assert found is not None and len(found.pods) == 3 and "direct" in found.ignored


def test_a_kind_without_pods_reads_none():
    sagemaker = lookup("sagemaker.aws.amazon.com/v1", "TrainingJob")
    cluster = RecordingCluster(expect=set())
    assert job_pods(sagemaker, NS, "j", "u", cluster) is None and cluster.calls == []


# --------------------------------------------------------------------------- through the status step

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:train"
NAME = manifests.job_name(EXECUTION, None)


def failed_pod(name: str, owner: dict[str, Any] | None, log_container: str = "node") -> dict[str, Any]:
    terminated = {"exitCode": 1, "reason": "Error", "message": f'{{"from": "{name}"}}'}
    pod = obj(name, f"uid-{name}", *([owner] if owner else []), labels={JOBSET_NAME: NAME})
    pod["metadata"]["labels"] |= {"jobset.sigs.k8s.io/replicatedjob-name": "node", "jobset.sigs.k8s.io/job-index": "0"}
    pod["status"] = {
        "phase": "Failed",
        "containerStatuses": [{"name": log_container, "state": {"terminated": terminated}}],
    }
    return pod


def test_a_failed_trainjobs_log_tail_result_and_diagnostics_come_from_its_own_pods():
    meta = {"name": NAME, "namespace": NS, "uid": "t", "labels": manifests.job_labels(EXECUTION)}
    failed = {"type": "Failed", "status": "True", "reason": "JobSetFailed", "message": "jobset failed"}
    trainjob = {"apiVersion": TRAINJOB.api_version, "kind": "TrainJob", "metadata": meta}
    trainjob["status"] = {"conditions": [failed]}
    jobset = obj(NAME, "s", ref("trainer.kubeflow.org/v1alpha1", "TrainJob", NAME, "t"))
    node = obj(f"{NAME}-node-0", "b1", ref(JOBSET_API, "JobSet", NAME, "s"))
    own = failed_pod(f"{NAME}-node-0-0", ref("batch/v1", "Job", f"{NAME}-node-0", "b1"))
    stranger = failed_pod(f"{NAME}-aaa", None)  # listed first
    cluster = Objects({("TrainJob", NAME): trainjob, ("JobSet", NAME): jobset, ("Job", f"{NAME}-node-0"): node}, [])
    cluster.pods = [stranger, own]
    cluster.logs = {(f"{NAME}-node-0-0", "node"): "own log\nboom\n", (f"{NAME}-aaa", "node"): "a stranger's log\n"}
    state = LoopState.model_validate(
        {
            "job": {"apiVersion": TRAINJOB.api_version, "kind": "TrainJob", "namespace": NS, "name": NAME, "uid": "t"},
            "execution": EXECUTION,
            "submittedAt": "2026-11-29T10:00:00Z",
            "deadline": "2999-11-30T10:00:00Z",
            "phase": "RUNNING",
            "phaseSince": "2026-11-29T10:00:00Z",
        }
    )

    new = poll(state, cluster, Settings(allowed_kinds="TrainJob"))

    assert new.phase == "FAILED"
    assert new.logTail == "own log\nboom\n"
    assert new.result == {"from": f"{NAME}-node-0-0"}
    assert [d.get("pod") for d in new.diagnostics] == [f"{NAME}-node-0-0", None]
    assert new.diagnostics[-1]["message"].endswith(f"does not own: {NAME}-aaa")
    assert ("read_log", f"{NAME}-aaa") not in cluster.calls


# --------------------------------------------------------------------------- what the Role allows for it


def test_a_trainjob_deployments_role_may_get_its_pods_owners_and_nothing_more():
    """What the functions need (and the chart grants: tests/integration/test_chart.py) for a TrainJob."""
    from jobsync.settings import parse_allowed_kinds
    from jobsync_cli.preflight import grants

    def needed(kinds: str) -> set[tuple[str, str, str]]:
        return {g.key() for g in grants.functions(parse_allowed_kinds(kinds))}

    plain = needed("PyTorchJob")
    assert needed("PyTorchJob,TrainJob") - plain == {
        *((verb, "trainer.kubeflow.org", "trainjobs") for verb in grants.JOB_VERBS),
        ("get", "batch", "jobs"),
        ("get", "jobset.x-k8s.io", "jobsets"),
    }
    # An allowed batch/v1 Job already has get (and the other job verbs): nothing more for it as an owner.
    batch = {verb for verb, group, _ in needed("TrainJob,Job") if group == "batch"}
    assert batch == set(grants.JOB_VERBS)
