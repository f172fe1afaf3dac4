"""The functions' Role grants exactly what the code uses, in both directions.

Full executions run through LocalJobsync - a success (cleanup always), a
failure with its logs, jobs stuck pending (pod diagnostics; the events of an
Unschedulable pod), an aborted execution cleaned up from its EventBridge event,
and a run in watch mode - and every request the functions made to the API is
turned into (verb, apiGroup, resource). That set must equal what they are said
to need (``jobsync_cli.preflight.grants``, which ``jobsync preflight`` checks on a
cluster) and what the chart's Role grants (charts/jobsync, the one renderer of it):
nothing used that is not granted (it would fail with 403 in a real cluster),
nothing granted that is not used.
"""

from __future__ import annotations

import pytest

from harness.local import LocalJobsync
from jobsync.settings import parse_allowed_kinds
from jobsync_cli.preflight import grants
from tests.integration.test_aborts import run_and_abort, status_change
from tests.support.chart import by_kind, render
from tests.support.lambdas import QUIET, invoke, load_event

# A template the local bucket does not hold: submit fails, as for a template removed after the run began.
MISSING_TEMPLATE = "s3://jobsync-templates-123456789012/jobsync/templates/missing.yaml"
WATCH = {**QUIET, "JOBSYNC_COMPLETION_MODE": "watch", "JOBSYNC_WATCH_SECONDS": "600"}


@pytest.fixture(scope="module")
def used() -> set[tuple[str, str, str]]:
    """What the functions asked the API for, in poll mode, over every path that calls it."""
    with LocalJobsync("success", {"pending_s": 30, "run_s": 300}, env=QUIET) as local:
        runs = [
            ("success", {"pending_s": 30, "run_s": 300}, {"cleanup": "always"}, "SUCCEEDED"),
            ("failure", {"pending_s": 30, "run_s": 300}, {}, "FAILED"),
            ("image-pull-backoff", {}, {}, "FAILED"),
            ("never-schedulable", {}, {}, "FAILED"),  # a stuck pod's events: can an autoscaler help?
        ]
        for scenario, timings, overrides, status in runs:
            local.scenario, local.timings = scenario, timings
            result = local.run({**load_event("run-job-input.json"), **overrides}, name=scenario)
            assert result.status == status, scenario
            assert result.jobs_left == [], scenario

        local.scenario, local.timings = "success", {"pending_s": 30, "run_s": 6 * 3600}
        description = run_and_abort(local, load_event("run-job-input.json"))
        out = invoke("cleanup", status_change(description))
        assert out["deleted"] is True
        # A template's execution that failed: its job is looked for by its label (list).
        arn = local.start(
            load_event("submit-template.json") | {"cleanup": "always", "jobTemplate": MISSING_TEMPLATE},
            name="from-template",
        )
        out = invoke("cleanup", status_change(local.sfn.wait(arn)))
        assert out["deleted"] is False

        found = local.api.verbs_used()
        assert 403 not in {r.status for r in local.api.requests}
    return found


def test_the_functions_need_exactly_what_they_call(used):
    assert used == {g.key() for g in grants.functions(parse_allowed_kinds("PyTorchJob"), "poll")}
    # What each verb is for (grants.py and docs/deployment.md say the same):
    assert ("create", "kubeflow.org", "pytorchjobs") in used  # submit
    assert ("list", "", "pods") in used  # diagnostics of a pending or failed job
    assert ("get", "", "pods/log") in used  # the log tail of a failed pod
    assert ("list", "", "events") in used  # the events of a stuck pod (autoscalers, the kubelet)


def test_the_charts_role_grants_exactly_what_the_functions_call(used):
    role = by_kind(render())["Role", "jobsync"]  # the chart's defaults: the template's
    assert grants.of_role(role) == used


def test_watch_mode_adds_exactly_the_watch_verb():
    with LocalJobsync("success", {"pending_s": 30, "run_s": 300}, env=WATCH) as local:
        assert (
            local.run({**load_event("run-job-input.json"), "cleanup": "always"}, name="watched").status == "SUCCEEDED"
        )
        watched = local.api.verbs_used()
    needed = {g.key() for g in grants.functions(parse_allowed_kinds("PyTorchJob"), "watch")}
    assert ("watch", "kubeflow.org", "pytorchjobs") in watched
    # A short successful run reads no log and no event: everything it used is granted, and watch is new.
    assert watched <= needed
    assert needed - {g.key() for g in grants.functions(parse_allowed_kinds("PyTorchJob"), "poll")} == {
        ("watch", "kubeflow.org", "pytorchjobs")
    }
