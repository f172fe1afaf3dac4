"""Callback mode's job end -> execution resumed with the functions in the Lambda runtime: a benchmark, not a test.

``make bench-e2e-callback`` runs it (JOBSYNC_E2E_BENCH names the file its figures go to; bench/__main__.py
--e2e-callback records them in bench/results.json, key ``callback_containers``); ``make e2e`` skips it. Jobs
run on the real control plane (training-operator, kwok), the notifier as its process with the chart's Role,
the functions of the ``sam build`` artifact in containers behind ``sam local start-lambda`` (one warm
container per function, started by its first invocation). A watch of the test's own on the jobs notes when
the API server first shows each one Succeeded; the execution's history gives when the woken Await's task
succeeded (the execution resumed) and when the execution ended. The test asserts what must hold whatever
the machine's speed (every job SUCCEEDED, each woken by the notifier's event); the delays are figures.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch

from bench.simulate import p95
from e2e.controlplane import JOB_NAMESPACE, ControlPlane
from e2e.tests.runs import apply_role, job_of, jobsync_run, pod_annotations, pytorch_input
from e2e.tests.test_callback import CALLBACK, NOTIFIER_ENV, calls
from lambda_runtime.daemon import Daemon

OUT = os.environ.get("JOBSYNC_E2E_BENCH", "")
pytestmark = pytest.mark.skipif(
    not OUT, reason="a benchmark, not a test: `make bench-e2e-callback` runs it and records its figures"
)
JOBS = 8


class EndWatch:
    """When the API server first shows each job Succeeded or Failed, on this process's wall clock."""

    def __init__(self, api: client.ApiClient) -> None:
        self.ended: dict[str, float] = {}
        self._stop = threading.Event()
        self._custom = client.CustomObjectsApi(api)
        self._thread = threading.Thread(target=self._run, name="end-watch", daemon=True)

    def __enter__(self) -> EndWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            stream = watch.Watch().stream(
                self._custom.list_namespaced_custom_object,
                "kubeflow.org",
                "v1",
                JOB_NAMESPACE,
                "pytorchjobs",
                timeout_seconds=5,
            )
            for event in stream:
                seen = time.time()
                obj = event["object"]
                conditions = (obj.get("status") or {}).get("conditions") or []
                done = any(c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True" for c in conditions)
                if done:
                    self.ended.setdefault(obj["metadata"]["name"], seen)


def resumed_at(history: list[dict[str, Any]], after: float) -> float | None:
    """When the first task that waited for its token succeeded after ``after`` (the wake), in epoch seconds."""
    for event in history:
        details = event.get("taskSucceededEventDetails") or {}
        at = event["timestamp"].timestamp()
        if event["type"] == "TaskSucceeded" and "waitForTaskToken" in details.get("resource", "") and at >= after:
            return float(at)
    return None


def test_job_end_to_execution_resumed_in_containers(
    control_plane: ControlPlane, lambda_containers: Daemon, admin_api: client.ApiClient
) -> None:
    apply_role(control_plane, "PyTorchJob")
    # As test_containers' callback story: graces past the jobs' ends keep one Await waiting for the event.
    env = {**CALLBACK, "JOBSYNC_DIAGNOSE_AFTER_SECONDS": "120", "JOBSYNC_STUCK_GRACE_SECONDS": "120"}
    rows = []
    run = jobsync_run(control_plane, env, notifier=True, notifier_env=NOTIFIER_ENV, containers=lambda_containers)
    with EndWatch(admin_api) as ends, run as local:
        assert local.sfn is not None
        names = [f"ctr-latency-{i}" for i in range(JOBS)]
        arns = {}
        for i, name in enumerate(names):  # ends spread over half a minute
            body = pytorch_input(pod_annotations(run_duration=f"{25 + 4 * i}s"), cleanup="never")
            arns[name] = local.start(body, name=name)
        descriptions = {name: local.sfn.wait(arn, timeout_s=300) for name, arn in arns.items()}
        local.sfn.settle()
        first_resume = min((c.at for c in local.sfn.invocations if c.function_name == "jobsync-resume"), default=None)
        for name, arn in arns.items():
            assert descriptions[name]["status"] == "SUCCEEDED", descriptions[name].get("cause")
            woke = [c for c in calls(local, "jobsync-resume", arn) if (c.result or {}).get("resumed")]
            assert len(woke) == 1, [c.result for c in calls(local, "jobsync-resume", arn)]
            ended = ends.ended[job_of(local, name)]
            resumed = resumed_at(local.sfn.history(arn), woke[0].at)
            assert resumed is not None
            rows.append(
                {
                    "job": job_of(local, name),
                    "resumed_s": resumed - ended,
                    "ended_s": descriptions[name]["stopDate"].timestamp() - ended,
                    "cold_resume": woke[0].at == first_resume,
                }
            )
    resumed_s = sorted(r["resumed_s"] for r in rows)
    figures = {
        "jobs": len(rows),
        "p50_resumed_s": statistics.median(resumed_s),
        "p95_resumed_s": p95(resumed_s),
        "max_resumed_s": resumed_s[-1],
        "p95_ended_s": p95([r["ended_s"] for r in rows]),
        "cold_resumes": sum(r["cold_resume"] for r in rows),
        "rows": rows,
        "setup": "real control plane (training-operator, kwok), the notifier process with the chart's Role, "
        "the sam build functions in containers (sam local start-lambda, LAZY warm containers), moto's "
        "EventBridge and Step Functions on the wall clock",
    }
    Path(OUT).parent.mkdir(parents=True, exist_ok=True)
    Path(OUT).write_text(json.dumps(figures, indent=2) + "\n")
