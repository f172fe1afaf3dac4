"""The stack's sweeper against the real control plane: with the notifier dead, its LIST finds the job's end.

Callback mode as in test_callback.py: the state machine in moto's interpreter on the wall clock, its Lambdas
as jobsync-lambda with the chart's Role, the notifier the process it is when deployed, as its own
ServiceAccount. With ``JOBSYNC_SWEEP_SECONDS`` the run plays template.yaml's sweep schedule on the wall clock
(harness.sweeper): the real sweep function, every 2 s here, lists the jobs once per run and resumes an
execution whose job ended without an event. The Awaits wait as a stack with the sweeper does: their own
timeout is the long backstop, so nothing but the sweeper can end the wait once the notifier is dead.
"""

from __future__ import annotations

from typing import Any

import pytest

from e2e.controlplane import ControlPlane
from e2e.tests.jobs import condition, wait_for
from e2e.tests.runs import apply_role, get_job, job_of, jobsync_run, pod_annotations, pytorch_input
from e2e.tests.test_callback import (
    CALLBACK,
    NOTIFIER_ENV,
    PLURAL,
    calls,
    ended,
    parse_time,
    published,
    status,
    stop_date,
)
from harness.local import LocalJobsync

SWEEP_SECONDS = 2


@pytest.fixture(scope="module", autouse=True)
def lambdas_role(control_plane: ControlPlane) -> None:
    apply_role(control_plane, "PyTorchJob")


def sweeper_looks(local: LocalJobsync, arn: str) -> list[dict[str, Any]]:
    """What the sweep function's runs reported of their looks at the execution ``arn``, in order."""
    assert local.sfn
    runs = [c for c in list(local.sfn.invocations) if c.function_name == "jobsync-sweep" and c.result]
    return [look for c in runs for look in c.result["looks"] if look["execution"] == arn]


def test_with_the_notifier_dead_the_sweeper_resumes_the_execution(control_plane: ControlPlane) -> None:
    env = {**CALLBACK, "JOBSYNC_SWEEP_SECONDS": str(SWEEP_SECONDS)}
    with jobsync_run(control_plane, env, notifier=True, notifier_env=NOTIFIER_ENV) as local:
        assert local.sweeps is not None  # the schedule runs
        name = job_of(local, "cb-sweep")
        arn = local.start(pytorch_input(pod_annotations(run_duration="5s"), cleanup="never"), name="cb-sweep")
        # The Await waits out its backstop from the first look on (the sweeper takes a starting job's checks):
        # no later Await sees the job run, so the job's own Running condition says when.
        running = lambda: (job := get_job(control_plane, PLURAL, name)) and condition(job, "Running")  # noqa: E731
        wait_for("the job to run", running, 60, 0.1)
        local.kill_notifier()  # and never started again
        assert local.notifier and not local.notifier.running
        assert status(arn) == "RUNNING"
        stopped = stop_date(local, arn)
        assert local.sfn
        local.sfn.settle()

        # No event told the execution, and no Await timed out to look: each Await waited its backstop (the
        # deadline's rest, here), far past the job's end, and no Status ran.
        assert "SUCCEEDED" not in published(local, name), published(local, name)
        assert calls(local, "jobsync-resume", arn) == []
        assert calls(local, "jobsync-status", arn) == []
        armed = [c.event["state"] for c in calls(local, "jobsync-await", arn)]
        assert armed and all(state["waitSeconds"] >= 60 for state in armed), armed
        # The sweeper's look saw the end and resumed the execution, once.
        looks = sweeper_looks(local, arn)
        assert [look["phase"] for look in looks if look["resumed"]] == ["SUCCEEDED"], looks
        done = ended(control_plane, name)
        assert done is not None
        # lastTransitionTime is whole seconds (truncated): the delay is overstated by up to 1 s.
        delay = (stopped - parse_time(done["lastTransitionTime"])).total_seconds()
        print(f"cb-sweep: the sweeper ended the execution {delay:.2f}s after the job's end")
        assert delay < SWEEP_SECONDS + 5, delay  # one sweep interval, plus the look and a loaded machine
