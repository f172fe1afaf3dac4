"""Check the simulator and the cost model against the real state machine, end to end.

A few jobs run through ``harness.local.LocalJobsync`` (run_job.asl.json in
moto's interpreter, the real handlers, the local Kubernetes API and the
operator simulator, on virtual time). For each, the job's actual start and end
(from its conditions) and its uid (the status step's jitter hashes it) are handed
to the simulator, which must predict the very poll times the execution made; and
the execution's history must hold as many states entered and events as the cost
model says for that many polls.

``delay_agreement`` does the same for a sample of jobs run together through
RunJobs (the throughput workload, poll mode): the simulator's mean detection
delay, each job replayed with its jitter, must agree with the real one within
``AGREEMENT`` (and the simulator without the jitter, as it was, is reported beside).
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
from dataclasses import dataclass
from typing import Any

from bench.simulate import Policy, policy_constants, poll_times, simulate
from bench.statemachine import CostModel, states_entered
from bench.workload import Job
from jobsync import clock as jobsync_clock
from tests.support.lambdas import QUIET, load_event


@dataclass(frozen=True)
class Case:
    pending_s: int
    run_s: int
    hint_s: int | None = None


# No hint; a hint whose window holds the end; a hint too short (the end falls past its window).
CASES = (Case(90, 1500), Case(200, 5400, hint_s=5800), Case(60, 3000, hint_s=2400))


def _conditions_time(job: dict[str, Any], ctype: str) -> float:
    for condition in job.get("status", {}).get("conditions", []):
        if condition["type"] == ctype:
            stamp = jobsync_clock.parse(condition["lastTransitionTime"])
            if stamp is not None:
                return stamp
    raise ValueError(f"the job has no {ctype} condition")


def run_case(case: Case, model: CostModel) -> dict[str, Any]:
    from harness.local import LocalJobsync  # pulls in moto: only when this check runs

    execution_input = {"job": load_event("run-job-input.json")["job"], "timeoutSeconds": 7 * 86_400}
    if case.hint_s:
        execution_input["expectedDurationSeconds"] = case.hint_s
    timings = {"pending_s": case.pending_s, "run_s": case.run_s}
    # Handler log lines go to stdout; the benchmark's table should not drown in them.
    with contextlib.redirect_stdout(io.StringIO()), LocalJobsync("success", timings, env=QUIET) as local:
        result = local.run(execution_input, timeout_s=300)
        assert local.sfn and local.api
        history = local.sfn.history(result.execution_arn)
        job = local.api.objects("kubeflow.org", "v1", "pytorchjobs")[0]
    if result.status != "SUCCEEDED":
        raise RuntimeError(f"cross-check execution ended {result.status}: {result.error} {result.cause}")
    submitted = jobsync_clock.parse(result.output["submittedAt"]) or 0.0
    started = _conditions_time(job, "Running") - submitted
    ended = (jobsync_clock.parse(job["status"]["completionTime"]) or 0.0) - submitted
    actual = [round(poll.at - submitted, 3) for poll in result.polls]
    # The simulator, given what really happened to the job.
    uid = result.output["job"]["uid"]
    replay = Job("cross-check", started, ended - started, case.hint_s or 0, name="cross-check", uid=uid)
    predicted = poll_times(replay, Policy("default", "", "jobsync", hint=case.hint_s is not None), 7 * 86_400)
    entered = states_entered(history)
    return {
        "pending_s": case.pending_s,
        "run_s": case.run_s,
        "expected_duration_s": case.hint_s,
        "polls": len(actual),
        "detection_delay_s": actual[-1] - ended,
        "poll_times_match": actual == predicted,
        "states_entered": entered,
        "states_entered_model": model.transitions(len(actual)),
        "history_events": len(history),
        "history_events_model": model.events(len(actual)),
    }


def crosscheck(model: CostModel) -> dict[str, Any]:
    runs = [run_case(case, model) for case in CASES]
    return {
        "runs": runs,
        "poll_times_match": all(r["poll_times_match"] for r in runs),
        "transitions_match": all(r["states_entered"] == r["states_entered_model"] for r in runs),
        "history_events_match": all(r["history_events"] == r["history_events_model"] for r in runs),
    }


AGREEMENT = 0.05  # the simulator's mean delay within 5 % of the real state machine's (default policy)
DEFAULT = Policy("default", "", "jobsync")


def delay_agreement(jobs: int = 40) -> dict[str, Any]:
    """``jobs`` jobs of the throughput workload, each a RunJob execution in poll mode: their real mean detection
    delay, and the simulator's for the same jobs (each job's pending and run time as they were, its jitter by
    its uid), with and without the jitter.

    One execution at a time: alone on the virtual clock, no other execution's Wait moves it while a
    Lambda runs (among many, it may, by the scheduling's settle time), so the real polls are the policy's.
    """
    from bench.throughput import job_input
    from harness.demo import quiet_interpreter
    from harness.local import LocalJobsync

    quiet_interpreter()
    outputs = []
    with contextlib.redirect_stdout(io.StringIO()), LocalJobsync(env=QUIET) as local:
        assert local.sfn
        machine = local.substitutions()["RunJobStateMachineArn"]
        for i in range(jobs):
            description = local.sfn.wait(local.sfn.start(machine, job_input(i)), timeout_s=300)
            if description["status"] != "SUCCEEDED":
                raise RuntimeError(f"sample job {i} ended {description['status']}: {description.get('error')}")
            outputs.append(json.loads(description["output"]))
    real, replayed, unjittered = [], [], []
    for out in outputs:
        submitted = jobsync_clock.parse(out["submittedAt"]) or 0.0
        started = (jobsync_clock.parse(out["startedAt"]) or 0.0) - submitted
        ended = (jobsync_clock.parse(out["finishedAt"]) or 0.0) - submitted
        real.append((jobsync_clock.parse(out["noticedAt"]) or 0.0) - submitted - ended)
        job = Job("sample", started, ended - started, 0, name=out["job"]["name"], uid=out["job"]["uid"])
        replayed.append(simulate(job, DEFAULT).delay_s)
        with policy_constants((("JITTER_FRACTION", 0.0),)):
            unjittered.append(simulate(job, DEFAULT).delay_s)
    mean_real, mean_sim = statistics.mean(real), statistics.mean(replayed)
    return {
        "jobs": len(real),
        "real_mean_delay_s": mean_real,
        "simulated_mean_delay_s": mean_sim,
        "simulated_without_jitter_mean_delay_s": statistics.mean(unjittered),
        "relative_difference": abs(mean_sim - mean_real) / mean_real,
        "agree": abs(mean_sim - mean_real) <= AGREEMENT * mean_real,
        "same_delay_every_job": real == replayed,
    }
