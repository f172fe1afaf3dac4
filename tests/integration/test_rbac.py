"""The RBAC Role grants exactly what the code uses, in both directions.

Full executions run through LocalJobsync - a success (cleanup always), a
failure with its logs, jobs stuck pending (pod diagnostics; the events of an
Unschedulable pod), and an
aborted execution cleaned up from its EventBridge event - and every request
the Lambdas made to the API is turned into (verb, apiGroup, resource). That
set must equal what the Role in manifests/rbac.yaml grants: nothing used that
is not granted (it would fail with 403 in a real cluster), nothing granted
that is not used.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.local import LocalJobsync
from tests.integration.test_aborts import run_and_abort, status_change
from tests.support.lambdas import QUIET, invoke, load_event

ROOT = Path(__file__).resolve().parents[2]

# A template the local bucket does not hold: submit fails, as for a template removed after the run began.
MISSING_TEMPLATE = "s3://jobsync-templates-123456789012/jobsync/templates/missing.yaml"


def granted() -> set[tuple[str, str, str]]:
    docs = list(yaml.safe_load_all((ROOT / "manifests" / "rbac.yaml").read_text()))
    (role,) = [d for d in docs if d["kind"] == "Role"]
    assert role["metadata"]["namespace"] == "ml-training"
    return {
        (verb, group, resource)
        for rule in role["rules"]
        for verb in rule["verbs"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


def test_the_role_grants_exactly_the_verbs_and_resources_the_lambdas_use():
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

        used = local.api.verbs_used()
        statuses = {r.status for r in local.api.requests}

    assert used == granted()
    assert 403 not in statuses
    # What each verb is for (manifests/rbac.yaml says the same):
    assert ("create", "kubeflow.org", "pytorchjobs") in used  # submit
    assert ("list", "", "pods") in used  # diagnostics of a pending or failed job
    assert ("get", "", "pods/log") in used  # the log tail of a failed pod
    assert ("list", "", "events") in used  # the events of a stuck pod (autoscalers, the kubelet)


def test_the_role_lives_in_one_namespace_and_binds_only_the_jobsync_group():
    docs = list(yaml.safe_load_all((ROOT / "manifests" / "rbac.yaml").read_text()))
    assert {d["kind"] for d in docs} == {"Role", "RoleBinding"}  # no ClusterRole: nothing cluster-wide
    (binding,) = [d for d in docs if d["kind"] == "RoleBinding"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "jobsync"}
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "jobsync"}]
    verbs = {verb for verb, _, _ in granted()}
    assert not verbs & {"*", "update", "patch", "deletecollection", "escalate", "bind", "impersonate"}
    assert not {resource for _, _, resource in granted()} & {"*", "secrets", "configmaps", "pods/exec"}
