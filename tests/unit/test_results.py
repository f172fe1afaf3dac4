"""A finished job's result: the leading replica per kind, its termination message as a bounded value."""

from __future__ import annotations

import json
import logging

import pytest
from kubernetes.client.exceptions import ApiException

from jobsync.core.result import (
    MAX_RESULT_BYTES,
    TRUNCATED_TEXT_BYTES,
    from_pods,
    from_status,
    leading_pods,
    parse_message,
)
from jobsync.evaluation.kinds import lookup
from tests.support.cluster import RecordingCluster

KF = "training.kubeflow.org"


def spec(kind, api_version="kubeflow.org/v1"):
    return lookup(api_version, kind)


def terminated(name, message=None, exit_code=0, last=False):
    term = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error"}
    if message is not None:
        term["message"] = message
    key = "lastState" if last else "state"
    return {"name": name, key: {"terminated": term}, **({"state": {"running": {}}} if last else {})}


def pod(name, labels, *containers, phase="Succeeded", created="2026-11-29T10:00:00Z"):
    return {
        "metadata": {"name": name, "labels": labels, "creationTimestamp": created},
        "status": {"phase": phase, "containerStatuses": list(containers)},
    }


def kubeflow_pod(job, rtype, index, message, container="pytorch", **kw):
    labels = {f"{KF}/job-name": job, f"{KF}/replica-type": rtype, f"{KF}/replica-index": str(index)}
    return pod(f"{job}-{rtype}-{index}", labels, terminated(container, message), **kw)


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("message", "value"),
    [
        ('{"accuracy": 0.97, "modelUri": "s3://b/m"}', {"accuracy": 0.97, "modelUri": "s3://b/m"}),
        ("[1, 2]", [1, 2]),
        ("0.93\n", 0.93),
        ('"done"', "done"),
        ("true", True),
        ("ok\n", "ok"),  # echo ok > /dev/termination-log
        ("accuracy=0.97 loss=0.07", "accuracy=0.97 loss=0.07"),
        ("NaN", "NaN"),  # not JSON: stays text, never a float Step Functions cannot serialise
        ('{"a": Infinity}', '{"a": Infinity}'),
        ("", None),
        (None, None),
        ("  \n", None),
    ],
)
def test_a_message_is_json_when_it_is_json_else_its_text(message, value):
    assert parse_message(message) == value


def test_a_message_over_the_bound_is_not_parsed_but_reported_with_its_size_and_head():
    message = json.dumps({"blob": "é" * 6000})  # valid JSON, 12 KB of UTF-8
    value = parse_message(message)
    assert value["truncated"] is True and value["bytes"] == len(message.encode())
    assert message.startswith(value["text"])
    assert len(value["text"].encode()) <= TRUNCATED_TEXT_BYTES  # cut on a character, never inside "é"
    assert len(value["text"].encode()) >= TRUNCATED_TEXT_BYTES - 1


def test_a_message_at_the_bound_is_still_parsed():
    message = json.dumps({"x": "a" * (MAX_RESULT_BYTES - 9)})
    assert len(message.encode()) == MAX_RESULT_BYTES
    assert parse_message(message) == {"x": "a" * (MAX_RESULT_BYTES - 9)}
    assert parse_message(message + " ")["truncated"] is True  # one byte more is over


@pytest.mark.parametrize(
    "message",
    ["\x00\x01\x02PK\x03\x04", "model\ufffd\ufffdweights", b"\x89PNG\r\n\x1a\n\xff\xfe", "half \udc80 surrogate"],
)
def test_binary_is_reported_by_size_never_returned(message):
    size = len(message) if isinstance(message, bytes) else len(message.encode("utf-8", "surrogatepass"))
    assert parse_message(message) == {"binary": True, "bytes": size}


def test_the_kubelets_cut_inside_a_character_is_not_binary():
    # The kubelet keeps the last 4096 bytes; cut inside "é", the API server writes U+FFFD first.
    assert parse_message('\ufffd la fin: "ok"') == 'la fin: "ok"'


def test_deep_nesting_is_text_not_a_crash():
    message = "[" * 4000
    assert parse_message(message) == message


# --------------------------------------------------------------------------- the leading replica


def test_pytorchjob_master_leads_else_worker_zero():
    pods = [
        kubeflow_pod("j", "worker", 0, '{"rank": "w0"}'),
        kubeflow_pod("j", "master", 0, '{"rank": "m0"}'),
        kubeflow_pod("j", "worker", 1, '{"rank": "w1"}'),
    ]
    assert from_pods(spec("PyTorchJob"), pods) == {"rank": "m0"}
    assert from_pods(spec("PyTorchJob"), [pods[2], pods[0]]) == {"rank": "w0"}


def test_mpijob_launcher_leads_and_its_workers_never_do():
    launcher = kubeflow_pod("m", "launcher", 0, '"launcher"', container="mpi")
    worker = kubeflow_pod("m", "worker", 0, '"worker"', container="mpi")
    assert from_pods(spec("MPIJob"), [worker, launcher]) == "launcher"
    assert from_pods(spec("MPIJob"), [worker]) is None


def test_the_mpijob_launcher_leads_without_a_replica_index_label():
    # The v1.9 operator labels its one launcher pod with the replica type only (seen against the real operator).
    launcher = kubeflow_pod("m", "launcher", 0, '"launcher"', container="mpi")
    del launcher["metadata"]["labels"][f"{KF}/replica-index"]
    worker = kubeflow_pod("m", "worker", 0, '"worker"', container="mpi")
    assert from_pods(spec("MPIJob"), [worker, launcher]) == "launcher"


def test_tfjob_chief_then_master_then_worker_zero():
    chief = kubeflow_pod("t", "chief", 0, '"chief"', container="tensorflow")
    master = kubeflow_pod("t", "master", 0, '"master"', container="tensorflow")
    worker = kubeflow_pod("t", "worker", 0, '"worker"', container="tensorflow")
    ps = kubeflow_pod("t", "ps", 0, '"ps"', container="tensorflow")
    assert from_pods(spec("TFJob"), [ps, worker, master, chief]) == "chief"
    assert from_pods(spec("TFJob"), [ps, worker, master]) == "master"
    assert from_pods(spec("TFJob"), [ps, worker]) == "worker"


def test_xgboost_master_leads_never_a_worker():
    master = kubeflow_pod("x", "master", 0, '"master"', container="xgboost")
    worker = kubeflow_pod("x", "worker", 0, '"worker"', container="xgboost")
    assert from_pods(spec("XGBoostJob"), [worker, master]) == "master"
    assert from_pods(spec("XGBoostJob"), [worker]) is None


def test_jaxjob_worker_zero_leads():
    pods = [kubeflow_pod("x", "worker", i, f'"w{i}"', container="jax") for i in (2, 1, 0)]
    assert from_pods(spec("JAXJob"), pods) == "w0"


def test_paddlejob_master_else_worker_zero():
    worker = kubeflow_pod("p", "worker", 0, '"w0"', container="paddle")
    assert from_pods(spec("PaddleJob"), [worker]) == "w0"


def test_the_main_container_wins_over_a_sidecar_else_the_first_that_left_a_message():
    labels = {f"{KF}/replica-type": "master", f"{KF}/replica-index": "0"}
    both = pod("j-master-0", labels, terminated("istio-proxy", '"sidecar"'), terminated("pytorch", '"main"'))
    sidecar_only = pod("j-master-0", labels, terminated("istio-proxy", '"sidecar"'), terminated("pytorch"))
    assert from_pods(spec("PyTorchJob"), [both]) == "main"
    assert from_pods(spec("PyTorchJob"), [sidecar_only]) == "sidecar"


def test_a_restarted_container_s_last_state_counts():
    labels = {f"{KF}/replica-type": "master", f"{KF}/replica-index": "0"}
    restarted = pod("j-master-0", labels, terminated("pytorch", '{"epoch": 3}', last=True), phase="Running")
    assert from_pods(spec("PyTorchJob"), [restarted]) == {"epoch": 3}


def test_indexed_batch_job_reads_completion_index_zero():
    job = spec("Job", "batch/v1")
    index = "batch.kubernetes.io/job-completion-index"
    pods = [pod(f"b-{i}-x", {index: str(i)}, terminated("main", f'{{"index": {i}}}')) for i in (2, 1, 0)]
    assert from_pods(job, pods) == {"index": 0}


def test_non_indexed_batch_job_reads_the_latest_succeeded_pod():
    job = spec("Job", "batch/v1")
    failed = pod("b-aaaaa", {}, terminated("main", '"first try"', 1), phase="Failed", created="2026-11-29T10:05:00Z")
    ok = pod("b-bbbbb", {}, terminated("main", '"second try"'), created="2026-11-29T10:03:00Z")
    older = pod("b-ccccc", {}, terminated("main", '"old"'), created="2026-11-29T10:00:00Z")
    assert from_pods(job, [older, failed, ok]) == "second try"
    assert from_pods(job, [failed]) == "first try"


def test_trainjob_reads_the_trainer_node_rank_zero():
    train = spec("TrainJob", "trainer.kubeflow.org/v1alpha1")

    def node(step, rjob, job_index, completion, message):
        labels = {
            "jobset.sigs.k8s.io/jobset-name": "t",
            "jobset.sigs.k8s.io/replicatedjob-name": rjob,
            "jobset.sigs.k8s.io/job-index": str(job_index),
            "batch.kubernetes.io/job-completion-index": str(completion),
        }
        if step:
            labels["trainer.kubeflow.org/trainjob-ancestor-step"] = step
        return pod(f"t-{rjob}-{job_index}-{completion}", labels, terminated("node", message))

    pods = [
        node(None, "dataset-initializer", 0, 0, '"init"'),
        node("trainer", "node", 0, 1, '"rank1"'),
        node("trainer", "node", 0, 0, '"rank0"'),
    ]
    assert from_pods(train, pods) == "rank0"
    assert from_pods(train, [node(None, "node", 0, 0, '"rank0, no step label"')]) == "rank0, no step label"


def test_no_leader_no_result():
    assert from_pods(spec("PyTorchJob"), []) is None
    assert leading_pods(spec("PyTorchJob"), [kubeflow_pod("j", "worker", 1, '"w1"')]) == []


# --------------------------------------------------------------------------- SageMaker


def test_ack_training_job_gives_its_model_and_metrics():
    obj = {
        "status": {
            "trainingJobStatus": "Completed",
            "modelArtifacts": {"s3ModelArtifacts": "s3://bucket/job/output/model.tar.gz"},
            "finalMetricDataList": [
                {"metricName": "validation:accuracy", "value": 0.93, "timestamp": "2026-11-29T10:00:00Z"},
                {"metricName": "train:loss", "value": 0.12},
                {"metricName": "broken", "value": "n/a"},
            ],
        }
    }
    assert from_status(obj) == {
        "modelUri": "s3://bucket/job/output/model.tar.gz",
        "metrics": {"validation:accuracy": 0.93, "train:loss": 0.12},
    }


def test_sagemaker_operator_model_path_and_tuning_objective():
    assert from_status({"status": {"modelPath": "s3://b/out/model.tar.gz"}}) == {"modelUri": "s3://b/out/model.tar.gz"}
    tuning = {
        "status": {
            "bestTrainingJob": {
                "finalHyperParameterTuningJobObjectiveMetric": {"metricName": "validation:error", "value": 0.04}
            }
        }
    }
    assert from_status(tuning) == {"metrics": {"validation:error": 0.04}}
    assert from_status({"status": {"trainingJobStatus": "Completed"}}) is None
    assert from_status({}) is None


def test_a_kind_without_pods_never_lists_them(pinned_clock):
    from jobsync.run.poll import poll
    from jobsync.settings import Settings
    from tests.unit.test_poll_times import NAME, REF, pytorchjob, state

    pinned_clock("2026-11-29T11:00:00Z")
    sagemaker = {"apiVersion": "sagemaker.aws.amazon.com/v1", "kind": "TrainingJob"}
    obj = {**pytorchjob({"trainingJobStatus": "Completed", "modelPath": "s3://b/m"}), **sagemaker}
    cluster = RecordingCluster({NAME: obj}, expect={"get"})
    settings = Settings(allowed_kinds="sagemaker.aws.amazon.com/v1/TrainingJob")
    new = poll(state(job={**REF, **sagemaker, "uid": "uid-1"}, phase="RUNNING"), cluster, settings)
    assert new.result == {"modelUri": "s3://b/m"}
    assert cluster.calls == [("get", NAME)]


# --------------------------------------------------------------------------- never fails


class ListFails(RecordingCluster):
    def list_pods(self, namespace, label_selector):
        super().list_pods(namespace, label_selector)
        raise ApiException(status=403, reason="Forbidden")


def test_a_list_that_fails_gives_none_and_a_warning(pinned_clock, caplog):
    from jobsync.run.poll import poll
    from jobsync.settings import Settings
    from tests.unit.test_poll_times import state

    pinned_clock("2026-11-29T11:00:00Z")
    cluster, name = _poll_job(["Created", "Succeeded"], cluster_cls=ListFails)
    with caplog.at_level(logging.WARNING, logger="jobsync.run.poll"):
        assert poll(state(phase="RUNNING"), cluster, Settings()).result is None
    assert [c for c in cluster.calls if c[0] == "list_pods"] == [("list_pods", f"{KF}/job-name={name}")]
    assert "result not read" in caplog.text


def test_given_pods_are_reused_and_gone_pods_give_none():
    pods = [kubeflow_pod("j", "master", 0, '{"a": 1}')]
    assert from_pods(spec("PyTorchJob"), pods) == {"a": 1}
    assert from_pods(spec("PyTorchJob"), []) is None


# --------------------------------------------------------------------------- through the status step


def _poll_job(status_conditions, cluster_cls=RecordingCluster, pods=()):
    from tests.unit.test_poll_times import NAME, condition, pytorchjob

    job = pytorchjob({"conditions": [condition(c) for c in status_conditions]})
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": NAME, "controller": True}
    for each in pods:  # as the operator makes them: owned by the job
        each["metadata"]["ownerReferences"] = [{**owner, "uid": job["metadata"]["uid"]}]
    return cluster_cls({NAME: job}, pods=list(pods)), NAME


def test_a_succeeded_poll_lists_the_pods_once_and_carries_the_result(pinned_clock):
    from jobsync.run.poll import poll
    from jobsync.settings import Settings
    from tests.unit.test_poll_times import state

    pinned_clock("2026-11-29T11:00:00Z")
    cluster, name = _poll_job(["Created", "Succeeded"], pods=[kubeflow_pod(name_of(), "master", 0, '{"acc": 0.9}')])
    new = poll(state(phase="RUNNING"), cluster, Settings())
    assert (new.phase, new.result) == ("SUCCEEDED", {"acc": 0.9})
    assert [c for c in cluster.calls if c[0] == "list_pods"] == [("list_pods", f"{KF}/job-name={name}")]
    assert new.model_dump(exclude_none=True)["result"] == {"acc": 0.9}


def test_a_running_poll_reads_no_result(pinned_clock):
    from jobsync.run.poll import poll
    from jobsync.settings import Settings
    from tests.unit.test_poll_times import state

    pinned_clock("2026-11-29T11:00:00Z")
    cluster, _ = _poll_job(["Created", "Running"], pods=[kubeflow_pod(name_of(), "master", 0, '"early"')])
    new = poll(state(phase="RUNNING"), cluster, Settings())
    assert new.phase == "RUNNING" and new.result is None
    assert not [c for c in cluster.calls if c[0] == "list_pods"]


def test_a_pod_list_error_on_success_leaves_the_verdict_standing(pinned_clock):
    from jobsync.run.poll import poll
    from jobsync.settings import Settings
    from tests.unit.test_poll_times import state

    pinned_clock("2026-11-29T11:00:00Z")
    cluster, _ = _poll_job(["Created", "Succeeded"], cluster_cls=ListFails)
    new = poll(state(phase="RUNNING"), cluster, Settings())
    assert (new.phase, new.terminal, new.result) == ("SUCCEEDED", True, None)


def test_a_failed_poll_reads_the_result_from_the_diagnostics_listing(pinned_clock):
    from jobsync.run.poll import poll
    from jobsync.settings import Settings
    from tests.unit.test_poll_times import state

    pinned_clock("2026-11-29T11:00:00Z")
    master = kubeflow_pod(name_of(), "master", 0, '{"error": "diverged", "epoch": 7}', phase="Failed")
    master["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = 1
    cluster, _ = _poll_job(["Created", "Failed"], pods=[master])
    new = poll(state(phase="RUNNING"), cluster, Settings())
    assert (new.phase, new.result) == ("FAILED", {"error": "diverged", "epoch": 7})
    assert len([c for c in cluster.calls if c[0] == "list_pods"]) == 1  # one LIST for both


def name_of():
    from tests.unit.test_poll_times import NAME

    return NAME
