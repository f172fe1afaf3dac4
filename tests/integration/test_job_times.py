"""The times an execution reports are the job's own, from its status; noticedAt is when jobsync saw the end.

Through the real state machine and handlers: the operator simulator writes
the job's Running condition and completionTime, and the output (or a
failure's Cause) must carry exactly those, with the detection delay
published as a metric.
"""

from __future__ import annotations

import json

from harness.local import LocalJobsync
from jobsync import clock
from tests.integration.test_metrics import emf_metrics
from tests.support.kube import PYTORCHJOBS
from tests.support.lambdas import QUIET, load_event

TIMINGS = {"pending_s": 90, "run_s": 3600}
WITH_METRICS = {"POWERTOOLS_LOG_LEVEL": "WARNING"}


def status_times(job):
    """(the Running condition's time, completionTime) as the simulator wrote them."""
    running = next(c for c in job["status"]["conditions"] if c["type"] == "Running")
    return running["lastTransitionTime"], job["status"]["completionTime"]


def test_a_success_reports_the_jobs_own_start_and_end_and_when_jobsync_noticed(capsys):
    with LocalJobsync("success", TIMINGS, env=WITH_METRICS) as local:
        result = local.run(load_event("run-job-input.json"), name="own-times")
        job = local.api.get((*PYTORCHJOBS, "ml-training", result.output["job"]["name"]))
    out = result.output
    assert result.status == "SUCCEEDED"
    started, finished = status_times(job)
    assert (out["startedAt"], out["finishedAt"]) == (started, finished)
    assert out["timesFrom"] == {"startedAt": "job", "finishedAt": "job"}
    assert clock.parse(out["noticedAt"]) >= clock.parse(out["finishedAt"])
    # The run only: the 90 s the job was pending are not in it (before, the polls made it 3690 s and more).
    assert out["durationSeconds"] == 3600
    assert clock.parse(out["startedAt"]) - clock.parse(out["submittedAt"]) >= 90

    delay = clock.parse(out["noticedAt"]) - clock.parse(out["finishedAt"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"DetectionDelaySeconds"' in line]
    assert [line["DetectionDelaySeconds"] for line in lines] == [[delay]]
    assert ("DetectionDelaySeconds", {"phase": "SUCCEEDED", "service": "jobsync"}) in emf_metrics(json.dumps(lines[0]))
    unit = lines[0]["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"]
    assert unit == "Seconds"


def test_a_failure_cause_carries_the_jobs_times_and_when_jobsync_noticed():
    execution_input = {**load_event("run-job-input.json"), "cleanup": "never"}
    with LocalJobsync("failure", {"pending_s": 90, "run_s": 1200}, env=QUIET) as local:
        result = local.run(execution_input, name="failed-times")
        cause = json.loads(result.cause or "{}")
        job = local.api.get((*PYTORCHJOBS, "ml-training", cause["job"]["name"]))
    assert result.error == "JobFailed"
    started, finished = status_times(job)
    assert (cause["startedAt"], cause["finishedAt"]) == (started, finished)
    assert cause["timesFrom"] == {"startedAt": "job", "finishedAt": "job"}
    assert cause["durationSeconds"] == 1200
    assert clock.parse(cause["noticedAt"]) >= clock.parse(cause["finishedAt"])
    assert cause["submittedAt"] < cause["startedAt"]


def test_a_timed_out_job_says_its_finish_is_the_polls_and_its_start_the_jobs():
    execution_input = {**load_event("run-job-input.json"), "timeoutSeconds": 1800}
    with LocalJobsync("success", TIMINGS, env=QUIET) as local:
        result = local.run(execution_input, name="timed-out-times")
    cause = json.loads(result.cause or "{}")
    assert result.error == "JobTimedOut"
    # The job never finished: the end is the poll that gave up, and says so.
    assert cause["timesFrom"] == {"startedAt": "job", "finishedAt": "polls"}
    assert cause["finishedAt"] == cause["noticedAt"]
    assert cause["durationSeconds"] == clock.parse(cause["finishedAt"]) - clock.parse(cause["startedAt"])


def test_a_job_that_never_ran_has_no_start_and_no_duration():
    with LocalJobsync("image-pull-backoff", {}, env=QUIET) as local:
        result = local.run(load_event("run-job-input.json"), name="never-ran", timeout_s=600)
    cause = json.loads(result.cause or "{}")
    assert result.error == "JobFailed"
    assert "startedAt" not in cause and cause["durationSeconds"] is None
    assert cause["timesFrom"] == {"finishedAt": "polls"}  # jobsync ended it: the job's status names no end
