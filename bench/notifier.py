"""The notifier at cluster scale: memory, readiness and publishing, measured on the real process.

    PYTHONPATH=layers/jobsync:notifier:. python -m bench --notifier [--notifier-sizes 1000,10000,20000]

For each size N, the Kubernetes API emulator (this process, real HTTP) holds N PyTorchJobs of a realistic
size (about 2.5 KB of JSON each, managedFields included): N - 1,000 that succeeded and stay (the default
cleanup keeps them: the history) and 1,000 running, whose executions wait (their items are in the stack's
table). ``python -m jobsync_notifier`` runs as deployed (``harness.notifier_process``: INFO logs to a file,
the Deployment's environment), its EventBridge behind a proxy that adds a round trip (bench.aws_side, a
process of its own).

- ``ready_s``: from its LIST's last request (the API's request log) to ``/readyz`` answering 200: what it
  does after reading the LIST before it says it is ready; ``list_s``: from the LIST's first request to its
  last; ``ready_from_start_s``: from the process's start to ``/readyz`` (the interpreter's start included);
- ``rss_peak_mib``: the most it held (VmHWM) while it listed at start (``rss_list_peak_mib``), and while it
  listed again after a 410 on its watch (``rss_relist_peak_mib``); ``rss_steady_mib``: VmRSS once all is quiet;
- ``burst_1000_s``: the 1,000 running jobs end together (their status written one after another by the
  emulator): from the first write to the last event PutEvents took (``burst_s`` for fewer running jobs);
- ``events_per_s_at_{0,20}ms``: a restart finds N ended jobs whose executions all still wait (the worst a
  restart can meet); events taken per second, from the first taken to the last;
- ``restart_events``: what a start with only the 1,000 running jobs' executions waiting publishes.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobsync.aws.tokens import TOKEN_PREFIX

ROOT = Path(__file__).resolve().parent.parent
NS = "ml-training"
KEY = ("kubeflow.org", "v1", "pytorchjobs", NS)
BUS = "jobsync-jobs"
TABLE = "jobsync-table"
RUNNING = 1000
SIZES = (1000, 10_000, 20_000)
LATENCIES = (0.0, 0.02)
JOB_BYTES = 2500


def arn(name: str) -> str:
    return f"arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:{name}"


def realistic_job(name: str, ended: bool) -> dict[str, Any]:
    """A PyTorchJob as the API server returns it after the training-operator ran it: about 2.5 KB of JSON."""
    from jobsync.core.ours import job_labels

    container = {
        "name": "pytorch",
        "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=10", "--batch-size=64"],
        "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "4", "memory": "16Gi"}},
    }
    replica = {"replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [container]}}}
    stamp = "2026-11-29T10:00:00Z"
    managed = [
        {
            "apiVersion": "kubeflow.org/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:annotations": {".": {}, "f:jobsync.io/execution-arn": {}}, "f:labels": {".": {}}},
                "f:spec": {"f:pytorchReplicaSpecs": {".": {}, "f:Master": {".": {}}, "f:Worker": {".": {}}}},
            },
            "manager": "Boto3/1.44.8 md/Botocore#1.44.8 ua/2.1 os/linux lang/python#3.11",
            "operation": "Update",
            "time": stamp,
        },
        {
            "apiVersion": "kubeflow.org/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {".": {}, "f:conditions": {}, "f:replicaStatuses": {}, "f:startTime": {}}},
            "manager": "training-operator",
            "operation": "Update",
            "subresource": "status",
            "time": stamp,
        },
    ]
    conditions = [
        {"type": "Created", "status": "True", "reason": "PyTorchJobCreated", "lastTransitionTime": stamp},
        {"type": "Running", "status": "False" if ended else "True", "reason": "PyTorchJobRunning"},
    ]
    if ended:
        conditions.append({"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded"})
    for condition in conditions:
        condition.setdefault("lastTransitionTime", stamp)
        condition["message"] = f"PyTorchJob {NS}/{name} is {condition['type'].lower()}."
    status: dict[str, Any] = {
        "conditions": conditions,
        "replicaStatuses": {"Master": {"active": 0 if ended else 1}, "Worker": {"active": 0 if ended else 1}},
        "startTime": stamp,
    }
    if ended:
        status["completionTime"] = "2026-11-29T12:00:00Z"
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": name,
            "labels": {**job_labels(arn(name)), "team": "vision"},
            "annotations": {"jobsync.io/execution-arn": arn(name)},
            "managedFields": managed,
        },
        "spec": {
            "pytorchReplicaSpecs": {"Master": replica, "Worker": replica},
            "runPolicy": {"cleanPodPolicy": "None"},
        },
        "status": status,
    }
    # Fill to the realistic size (the API adds uid, resourceVersion, timestamps: about 150 bytes more).
    pad = JOB_BYTES - 150 - len(json.dumps(job, separators=(",", ":")))
    if pad > 0:
        job["metadata"]["annotations"]["example.com/notes"] = "x" * pad
    return job


class AwsSide:
    """bench.aws_side as a subprocess: its URL, what PutEvents took, the latency set per phase."""

    def __init__(self, latency: float) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "jobsync"), str(ROOT)])}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.aws_side", "--latency", str(latency)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout
        self.url = json.loads(self.proc.stdout.readline())["url"]

    def taken(self) -> list[tuple[float, int]]:
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/_bench/taken", timeout=10) as answer:
            return [(float(t), int(n)) for t, n in json.loads(answer.read())["taken"]]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def client(aws: AwsSide, service: str) -> Any:
    import boto3

    return boto3.client(
        service, endpoint_url=aws.url, region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )


def memory(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of ``pid``, MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def reset_peak(pid: int) -> None:
    """VmHWM starts again from the current RSS (proc(5): clear_refs, 5)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def wait_quiet(aws: AwsSide, quiet: float = 2.0, timeout: float = 900.0) -> list[tuple[float, int]]:
    """What PutEvents took so far, once nothing more came for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        taken = aws.taken()
        count = sum(n for _, n in taken)
        if count != seen:
            seen, since = count, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return taken
        time.sleep(0.2)
    raise TimeoutError("the notifier never stopped publishing")


def taken_after(taken: list[tuple[float, int]], start: float) -> tuple[int, float, float, int]:
    """(entries taken after ``start``, when the first and the last of them were taken, the calls that took any)."""
    after = [(t, n) for t, n in taken if t >= start and n]
    if not after:
        return 0, start, start, 0
    return sum(n for _, n in after), after[0][0], after[-1][0], len(after)


@dataclass
class Run:
    api: Any
    aws: AwsSide
    proc: Any
    names: list[str]
    started_at: float  # the wall clock (the API's request log's) when the process was started
    ready_at: float  # ... and when /readyz first answered 200


@contextlib.contextmanager
def cluster(size: int, running: int, latency: float, log: Path) -> Iterator[Run]:
    """The emulated API with ``size`` jobs (the first ``running`` of them running, their executions waiting; the
    others ended, their executions waiting too when none runs), the AWS side, and the notifier started."""
    from harness.aws_server import client_env
    from harness.kubeapi import KubeAPI
    from harness.local import pytorchjob_crd
    from harness.notifier_process import NotifierProcess, deployed_env

    api = KubeAPI(clock=time.time).start()
    aws = AwsSide(latency)
    proc = None
    try:
        api.register_crd(pytorchjob_crd())
        api.create_namespace(NS)
        names = [f"job-{i:05d}" for i in range(size)]
        for i, name in enumerate(names):
            api.put((*KEY, name), realistic_job(name, ended=i >= running))
        client(aws, "events").create_event_bus(Name=BUS)
        dynamodb = client(aws, "dynamodb")
        dynamodb.create_table(
            TableName=TABLE,
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        wait(dynamodb, names[:running] if running else names)
        env = deployed_env(NS, "PyTorchJob", BUS, "us-east-1", TABLE)
        env.update(JOBSYNC_CLUSTER_MODE="url", JOBSYNC_KUBE_URL=api.url, JOBSYNC_WATCH_TIMEOUT_SECONDS="5")
        aws_env = client_env(aws.url, base={}, service="EventBridge")
        aws_env["AWS_ENDPOINT_URL_DYNAMODB"] = aws.url
        proc = NotifierProcess({**aws_env, **env}, log=log)
        started_at = time.time()
        proc.start(ready_timeout=1800)
        yield Run(api, aws, proc, names, started_at, time.time())
    finally:
        if proc is not None:
            proc.stop()
        aws.close()
        api.stop()


def wait(dynamodb: Any, names: list[str]) -> None:
    """Those jobs' executions wait: their Awaits stored a token (jobsync.aws.tokens.TokenStore's item)."""
    for start in range(0, len(names), 25):  # BatchWriteItem's most
        items = [
            {"PutRequest": {"Item": {"pk": {"S": f"{TOKEN_PREFIX}{arn(name)}"}, "token": {"S": "t"}}}}
            for name in names[start : start + 25]
        ]
        left = dynamodb.batch_write_item(RequestItems={TABLE: items}).get("UnprocessedItems") or {}
        if left:
            raise RuntimeError(f"the token store took only part of a batch: {len(left.get(TABLE, []))} left")


def requests(api: Any, verb: str) -> list[float]:
    """When the notifier's requests of ``verb`` on the jobs arrived (the API's request log)."""
    with api.lock:
        return [r.at for r in api.requests if r.verb == verb and r.resource == "pytorchjobs"]


def relist(api: Any, timeout: float = 600.0) -> int:
    """Answer the notifier's next watch request 410 Gone; wait until it has listed again and watches anew.
    The LIST requests of the relist."""
    from harness.kubeapi import Fault

    lists = len(requests(api, "list"))
    api.inject(Fault.status(410, "Expired", "too old resource version"), "GET", "watch=", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        again = requests(api, "list")[lists:]
        if again and any(t >= again[-1] for t in requests(api, "watch")):
            return len(again)
        time.sleep(0.1)
    raise TimeoutError("the notifier did not list again after a 410 on its watch")


def measure_size(
    size: int,
    progress: Any = print,
    quiet: float = 2.0,
    settle: float = 3.0,
    latencies: tuple[float, ...] = LATENCIES,
) -> dict[str, Any]:
    """One size's figures (see the module docstring); ``quiet``: seconds without a PutEvents that end a phase,
    ``settle``: seconds before the steady and the relist's memory are read; ``latencies``: the round trips
    the start among ended jobs is measured at."""
    running = min(RUNNING, size)
    out: dict[str, Any] = {"jobs": size, "running": running, "job_bytes": JOB_BYTES}
    with tempfile.TemporaryDirectory(prefix="bench-notifier-") as tmp:
        with cluster(size, running, LATENCIES[-1], Path(tmp) / "notifier.log") as run:
            pid = run.proc.pid
            lists = requests(run.api, "list")
            out["ready_s"] = round(run.ready_at - lists[-1], 2)
            out["list_s"] = round(lists[-1] - lists[0], 2)
            out["list_requests"] = len(lists)
            out["ready_from_start_s"] = round(run.ready_at - run.started_at, 2)
            out["rss_list_peak_mib"] = round(memory(pid)["VmHWM"], 1)
            out["restart_events"] = sum(n for _, n in wait_quiet(run.aws, quiet))
            time.sleep(settle)
            out["rss_steady_mib"] = round(memory(pid)["VmRSS"], 1)
            progress(
                f"notifier {size:,} jobs: ready {out['ready_s']} s after its LIST, steady {out['rss_steady_mib']} MiB"
            )
            # The running jobs end together.
            start = time.monotonic()
            ended = realistic_job("x", ended=True)["status"]
            for name in run.names[:running]:
                run.api.update_status((*KEY, name), ended)
            count, _, last, _ = taken_after(wait_quiet(run.aws, quiet), start)
            out["burst_events"] = count
            out["burst_s"] = round(last - start, 2)
            out["burst_1000_s"] = out["burst_s"] if running == RUNNING else None
            # A relist: the next watch request answers 410.
            reset_peak(pid)
            out["relist_requests"] = relist(run.api)
            time.sleep(settle)
            out["rss_relist_peak_mib"] = round(memory(pid)["VmHWM"], 1)
        out["rss_peak_mib"] = max(out["rss_list_peak_mib"], out["rss_relist_peak_mib"])
        progress(f"notifier {size:,} jobs: peak {out['rss_peak_mib']} MiB, {running:,} ending: {out['burst_s']} s")
        # Publishing: a restart that finds every job ended and every execution waiting.
        for latency in latencies:
            with cluster(size, 0, latency, Path(tmp) / f"restart-{latency}.log") as run:
                count, first, last, calls = taken_after(wait_quiet(run.aws, quiet), 0.0)
            ms = round(latency * 1000)
            out[f"putevents_calls_at_{ms}ms"] = calls
            out[f"events_per_s_at_{ms}ms"] = round(count / (last - first), 1) if last > first else None
            out[f"republished_at_{ms}ms"] = count
            progress(f"notifier {size:,} jobs: {count:,} events at {ms} ms: {out[f'events_per_s_at_{ms}ms']}/s")
    return out


def measure(sizes: tuple[int, ...] = SIZES, progress: Any = print) -> dict[str, Any]:
    """Every size's figures, by size, and what they were measured with."""
    figures: dict[str, Any] = {str(size): measure_size(size, progress) for size in sizes}
    figures["latencies_s"] = list(LATENCIES)
    figures["sizes_not_run"] = [n for n in SIZES if n not in sizes]
    return figures
