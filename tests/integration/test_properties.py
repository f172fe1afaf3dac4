"""Termination and idempotency, as properties of the real state machine.

For any scenario the operator simulator plays, any timings, and any list of
transient faults (in the API and in Lambda), an execution:

- ends, at the latest at its deadline plus the one poll that notices it (plus
  the time its retries waited);
- stays within the history budget: well under 25,000 events, and at 9 events
  a poll, a run that uses the policy's whole poll budget would still fit;
- creates exactly one job.

And submitting the same execution again, however often, never makes a second job.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.kubeapi import Fault
from harness.local import LocalJobsync
from jobsync import clock
from jobsync.core.wait import WaitBounds
from jobsync.run.manifests import job_name
from tests.support.kube import PYTORCHJOBS, local_kube_api
from tests.support.lambdas import QUIET, invoke, load_event

HISTORY_LIMIT = 25_000
EVENTS_PER_POLL = 9  # Wait 2, Task 5, Choice 2 (tests/integration/test_run_job.py counts them)
FUNCTION_TIMEOUT = 30  # LocalStepFunctions' default

FAULTS = {
    "500": Fault.internal_error(),
    "503": Fault.unavailable(),
    "429": Fault.too_many_requests(retry_after=1),
    "drop": Fault.drop(),
    "404": Fault.status(404, "NotFound", 'pytorchjobs.kubeflow.org "x" not found'),
}
api_faults = st.lists(
    st.tuples(
        st.sampled_from(sorted(FAULTS)),
        st.sampled_from(["GET", "POST", "DELETE"]),
        st.integers(1, 2),
    ),
    max_size=3,
).filter(lambda faults: all(kind != "404" or method == "GET" for kind, method, _ in faults))
lambda_faults = st.lists(
    st.tuples(
        st.sampled_from(["jobsync-submit", "jobsync-status", "jobsync-cleanup"]),
        st.sampled_from(["Lambda.ServiceException", "Sandbox.Timedout", "Runtime.ExitError"]),
        st.booleans(),  # call_handler: the handler ran, its result was lost
    ),
    max_size=2,
)
scenarios = st.sampled_from(
    ["success", "failure", "restarting", "image-pull-backoff", "unschedulable", "operator-down", "suspended"]
)
timings = st.fixed_dictionaries({"pending_s": st.integers(0, 600), "run_s": st.integers(0, 2 * 3600)})

_names = itertools.count()


@pytest.fixture(scope="module")
def local():
    with LocalJobsync("success", env=QUIET) as service:
        yield service


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    scenario=scenarios,
    timing=timings,
    timeout=st.integers(600, 3 * 3600),
    expected=st.none() | st.integers(60, 4 * 3600),
    faults=api_faults,
    lambda_errors=lambda_faults,
)
def test_every_execution_ends_by_its_deadline_within_the_history_budget_with_one_job(
    local, scenario, timing, timeout, expected, faults, lambda_errors
):
    local.api.clear_faults()
    local.api.clear_requests()
    local.sfn._injections.clear()
    for kind, method, times in faults:
        local.api.inject(FAULTS[kind], method=method, path_contains="/pytorchjobs", times=times)
    for function, error, call_handler in lambda_errors:
        local.sfn.inject_lambda_error(function, error, call_handler=call_handler)
    local.scenario, local.timings = scenario, timing
    execution_input: dict[str, Any] = {**load_event("run-job-input.json"), "timeoutSeconds": timeout}
    if expected:
        execution_input["expectedDurationSeconds"] = expected
    sleeps_before, invocations_before = len(local.sfn.retry_sleeps), len(local.sfn.invocations)

    result = local.run(execution_input, name=f"property-{next(_names)}")

    calls = local.sfn.invocations[invocations_before:]
    assert result.status in {"SUCCEEDED", "FAILED"}, result  # never RUNNING, never a harness crash
    submitted = next((c.result for c in calls if c.function_name == "jobsync-submit" and c.result), None)
    assert submitted is not None, f"no submit succeeded: {result.error} {result.cause}"
    deadline = clock.parse(submitted["deadline"])
    retried = sum(local.sfn.retry_sleeps[sleeps_before:])
    timed_out = sum(1 for c in calls if c.error and c.error["errorType"] == "Sandbox.Timedout")
    last = max(c.at for c in calls if c.function_name == "jobsync-status") if result.polls else deadline
    assert last <= deadline + retried + FUNCTION_TIMEOUT * timed_out + 1

    history = local.sfn.history(result.execution_arn)
    polls = sum(1 for c in calls if c.function_name == "jobsync-status")
    assert len(history) < HISTORY_LIMIT
    failed = sum(1 for c in calls if c.error)
    overhead = len(history) - EVENTS_PER_POLL * polls
    assert overhead <= 18 + 5 * failed + 5  # the execution's own events, a few per failed attempt
    assert EVENTS_PER_POLL * WaitBounds().poll_budget + overhead < HISTORY_LIMIT

    ours = [
        r
        for r in local.api.requests
        if r.method == "POST" and r.status == 201 and r.name is None and r.resource == "pytorchjobs"
    ]
    assert len(ours) == 1
    name = job_name(result.execution_arn, "pytorch-simple")
    assert len([j for j in local.api.objects(*PYTORCHJOBS) if j["metadata"]["name"] == name]) <= 1


# --- submitting twice ----------------------------------------------------------------


@pytest.fixture(scope="module")
def api():
    with local_kube_api(env=QUIET) as server:
        yield server


execution_names = st.text(
    alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"),
    min_size=1,
    max_size=80,
)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(name=execution_names, submits=st.integers(2, 4), fail_first=st.booleans())
def test_submitting_the_same_execution_again_never_makes_a_second_job(api, name, submits, fail_first):
    for job in api.objects(*PYTORCHJOBS):
        api.delete((*PYTORCHJOBS, "ml-training", job["metadata"]["name"]))
    api.clear_requests()
    if fail_first:  # the first create fails (etcd timeout): the retry must not then create twice
        api.inject(Fault.internal_error(), method="POST", times=1)
    arn = f"arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:{name}"
    event = {**load_event("run-job-input.json"), "execution": arn}

    results = []
    for _ in range(submits):
        try:
            results.append(invoke("submit", dict(event)))
        except Exception as exc:
            assert type(exc).__name__ == "TransientClusterError" and fail_first
    (job,) = api.objects(*PYTORCHJOBS)
    assert {r["job"]["uid"] for r in results} == {job["metadata"]["uid"]}
    assert {r["job"]["name"] for r in results} == {job_name(arn, "pytorch-simple")}
    assert len([r for r in api.requests if r.method == "POST" and r.status == 201]) == 1
