"""The functions of the ``sam build`` artifact in the Lambda runtime, behind the real state machine and the real
control plane: a kind besides PyTorchJob, watch mode, and callback mode with the notifier's event.

The state machine's tasks invoke the functions through ``sam local start-lambda`` (lambda_runtime/): the
runtime in the container loads the build's handler and the layer under /opt, reaches the API server as
jobsync-lambda (url mode, through ``KubeProxy``) and moto through a relay. The make demo stories run this way
too (test_scenarios.py). Each test checks that every invocation of the run went through SAM's Invoke API.
"""

from __future__ import annotations

import json
from pathlib import Path

from e2e.controlplane import ControlPlane
from e2e.tests.runs import apply_role, jobsync_run, pod_annotations, pytorch_input, run, run_input, with_pods
from e2e.tests.test_callback import CALLBACK, NOTIFIER_ENV, calls, stop_date
from e2e.tests.test_kinds import training_job
from harness.local import LocalJobsync
from jobsync import clock
from lambda_runtime.daemon import Daemon
from lambda_runtime.remote import RemoteHandler


def all_in_containers(local: LocalJobsync, cp: ControlPlane) -> None:
    """Every invocation the Lambda service recorded went to SAM's Invoke API, and SAM ran each in a container."""
    assert local.sfn is not None
    handlers = [h for h in local.sfn.handlers.values() if isinstance(h, RemoteHandler)]
    assert len(handlers) == len(local.sfn.handlers)
    assert sum(h.calls for h in handlers) == len(local.sfn.invocations) > 0
    log = Path(cp.logs_dir / "sam-local.log").read_text()
    assert log.count("Invoking app.lambda_handler (python3.11)") >= len(local.sfn.invocations), log[-2000:]


def test_a_tfjob_to_succeeded_and_to_failed(control_plane: ControlPlane, lambda_containers: Daemon) -> None:
    apply_role(control_plane, "TFJob")
    with jobsync_run(control_plane, kinds="TFJob", containers=lambda_containers) as local:
        ok = run(local, run_input(with_pods(training_job("TFJob"), pod_annotations())), "ctr-tfjob-ok")
        body = run_input(with_pods(training_job("TFJob"), pod_annotations("fail", exit_code=2)))
        failed = run(local, body, "ctr-tfjob-fail")
        all_in_containers(local, control_plane)
    assert ok.status == "SUCCEEDED", ok.cause
    assert ok.output["phase"] == "SUCCEEDED" and ok.output["reason"] == "TFJobSucceeded", ok.output
    assert failed.status == "FAILED" and failed.error == "JobFailed", failed.cause
    cause = json.loads(failed.cause or "{}")
    assert cause["reason"] == "TFJobFailed" and cause["deleted"] is True
    assert {d.get("exitCode") for d in cause["diagnostics"]} == {2}, cause["diagnostics"]


def test_watch_mode(control_plane: ControlPlane, lambda_containers: Daemon) -> None:
    """Each Status holds its watch in the container; the job's end answers it."""
    apply_role(control_plane, "PyTorchJob", watch=True)
    watch = {"JOBSYNC_COMPLETION_MODE": "watch", "JOBSYNC_WATCH_SECONDS": "30"}
    with jobsync_run(control_plane, watch, containers=lambda_containers) as local:
        result = run(local, pytorch_input(pod_annotations(run_duration="6s"), cleanup="never"), "ctr-watch")
        all_in_containers(local, control_plane)
    assert result.status == "SUCCEEDED", result.cause
    out = result.output
    held = [p for p in result.polls if p.answered is not None and p.answered - p.at >= 2]
    assert held, [(p.phase, p.at, p.answered) for p in result.polls]  # a watch was held open, then answered
    noticed, finished = clock.parse(out["noticedAt"]), clock.parse(out["finishedAt"])
    assert noticed is not None and finished is not None and noticed - finished <= 10, out


def test_callback_mode_resumed_by_the_notifiers_event(control_plane: ControlPlane, lambda_containers: Daemon) -> None:
    """Await stores its token (DynamoDB in moto) from the container; the notifier's event invokes Resume there,
    which polls the job and sends the task success (Step Functions in moto)."""
    apply_role(control_plane, "PyTorchJob")
    # The tier's lowered graces end an Await every few seconds while the job starts; in containers on a loaded
    # machine the gaps between those Awaits grow, and an event that falls in one finds no token (the next
    # Await's own look then sees the end: nothing is lost, but no event is tested). Graces past the job's
    # end keep one Await waiting for the event, and the job outlives the Await's start in its container.
    env = {**CALLBACK, "JOBSYNC_DIAGNOSE_AFTER_SECONDS": "90", "JOBSYNC_STUCK_GRACE_SECONDS": "90"}
    with jobsync_run(
        control_plane, env, notifier=True, notifier_env=NOTIFIER_ENV, containers=lambda_containers
    ) as local:
        body = pytorch_input(pod_annotations(run_duration="20s"), cleanup="never")
        arn = local.start(body, name="ctr-callback")
        stop_date(local, arn)
        assert local.sfn is not None
        local.sfn.settle()
        resumes = calls(local, "jobsync-resume", arn)
        awaited = calls(local, "jobsync-await", arn)
        all_in_containers(local, control_plane)
    resumed = [c.result for c in resumes if c.result]
    assert [r["resumed"] for r in resumed].count(True) == 1, resumed
    # The event woke the wait; the look it woke (the Await after the wake) saw the job terminal, none before it.
    (woke,) = [c for c in resumes if (c.result or {}).get("resumed")]
    saw_the_end = [c for c in awaited if (c.result or {}).get("terminal")]
    assert len(saw_the_end) == 1 and saw_the_end[0].at >= woke.at, ([c.result for c in awaited], woke.at)
