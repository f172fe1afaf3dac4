"""Cleanup after an aborted ``jobTemplate`` execution, against the real API server: only the uid Submit returned.

A person copies the running job (``kubectl get -o yaml``), renames it and applies it as the admin: the copy
carries the execution's labels, ``jobsync.io/execution`` included. The execution is stopped; its status change
event goes to the real cleanup handler, which reads the uid from the execution's history and deletes that object
only, with the uid as precondition, as jobsync-lambda under the rendered Role. The copy runs on.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from e2e.controlplane import ControlPlane
from e2e.tests.jobs import wait_for
from e2e.tests.runs import (
    RUN_INPUT,
    apply_role,
    custom_path,
    execution_arn,
    get_job,
    jobsync_run,
    pod_annotations,
    run_input,
    wait_gone,
    with_pods,
)
from harness.local import TEMPLATE_BUCKET, TEMPLATE_PREFIX
from jobsync.run.manifests import EXECUTION_LABEL, execution_label, job_name
from tests.integration.test_aborts import status_change
from tests.support.lambdas import invoke

PLURAL = "pytorchjobs"
TEMPLATE = "run-forever.yaml"
MANIFEST_NAME = "copied-later"


def write_template(folder: Path) -> None:
    """The demo's PyTorchJob, its pods running until deleted (kwok), as a template with no placeholders."""
    job = with_pods(json.loads(RUN_INPUT.read_text())["job"], pod_annotations("run-forever"), "Never")
    job["metadata"]["name"] = MANIFEST_NAME
    (folder / TEMPLATE).write_text(yaml.safe_dump(job, sort_keys=False))


def renamed_copy(job: dict[str, Any], name: str) -> dict[str, Any]:
    """What ``kubectl get -o yaml`` gives, renamed and stripped of what the server sets: ready to apply."""
    body = copy.deepcopy(job)
    body.pop("status", None)
    for field in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        body["metadata"].pop(field, None)
    body["metadata"]["name"] = name
    return body


def running(cp: ControlPlane, name: str) -> bool:
    conditions = ((get_job(cp, PLURAL, name) or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Running" and c["status"] == "True" for c in conditions)


def test_an_aborted_template_executions_copy_survives_its_cleanup(
    control_plane: ControlPlane, admin_api: client.ApiClient, tmp_path: Path
) -> None:
    apply_role(control_plane, "PyTorchJob")
    write_template(tmp_path)
    execution_input = run_input(jobTemplate=f"s3://{TEMPLATE_BUCKET}/{TEMPLATE_PREFIX}{TEMPLATE}", cleanup="always")
    del execution_input["job"]
    copy_name = f"{MANIFEST_NAME}-by-hand"
    with jobsync_run(control_plane, template_dirs=(tmp_path,)) as local:
        assert local.sfn
        execution = "template-aborted"
        name = job_name(execution_arn(local, execution), MANIFEST_NAME)
        arn = local.start(execution_input, name=execution)
        wait_for("the job to run", lambda: running(control_plane, name), timeout=60, interval=0.2)
        own = get_job(control_plane, PLURAL, name)
        resp = control_plane.request("POST", custom_path(PLURAL), renamed_copy(own, copy_name))
        assert resp.status == 201, resp.body
        person = resp.body
        assert person["metadata"]["labels"][EXECUTION_LABEL] == execution_label(arn)  # the copy carries it
        try:
            local.sfn.stop(arn, error="Cancelled", cause="stopped by hand")
            description = local.sfn.wait(arn)
            assert description["status"] == "ABORTED"

            out = invoke("cleanup", status_change(description))

            assert out["deleted"] is True and out["reason"] == "deleted", out
            assert out["job"]["name"] == name and out["job"]["uid"] == own["metadata"]["uid"]
            wait_gone(control_plane, admin_api, PLURAL, name)
            left = get_job(control_plane, PLURAL, copy_name)
            assert left is not None and left["metadata"]["uid"] == person["metadata"]["uid"]  # the copy survives
            assert invoke("cleanup", status_change(description))["reason"] == "already gone"
            assert get_job(control_plane, PLURAL, copy_name) is not None
        finally:
            control_plane.request("DELETE", custom_path(PLURAL, copy_name))
    wait_gone(control_plane, admin_api, PLURAL, copy_name)
