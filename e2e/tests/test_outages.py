"""The real components going away: the training-operator down, the API server restarted."""

from __future__ import annotations

import time
import uuid

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from e2e.controlplane import JOB_NAMESPACE, ControlPlane
from e2e.tests.jobs import GROUP, PLURAL, VERSION, condition, pytorchjob, wait_for


def test_a_job_waits_without_status_while_the_operator_is_down(
    control_plane: ControlPlane, admin_api: client.ApiClient
) -> None:
    custom = client.CustomObjectsApi(admin_api)
    name = f"down-{uuid.uuid4().hex[:6]}"
    control_plane.stop_operator()
    try:
        custom.create_namespaced_custom_object(GROUP, VERSION, JOB_NAMESPACE, PLURAL, pytorchjob(name))
        time.sleep(2)
        job = custom.get_namespaced_custom_object(GROUP, VERSION, JOB_NAMESPACE, PLURAL, name)
        assert "status" not in job, job.get("status")
    finally:
        control_plane.start_operator()

    def succeeded() -> dict | None:
        job = custom.get_namespaced_custom_object(GROUP, VERSION, JOB_NAMESPACE, PLURAL, name)
        return job if condition(job, "Succeeded") else None

    wait_for(f"PyTorchJob {name} to succeed once the operator is back", succeeded, timeout=60)


def test_an_apiserver_restart_expires_old_resource_versions(
    control_plane: ControlPlane, admin_api: client.ApiClient
) -> None:
    """The watch cache starts again at etcd's revision: a watch from before the restart answers 410."""
    core = client.CoreV1Api(admin_api)
    name = f"restart-{uuid.uuid4().hex[:6]}"
    old_rv = core.create_namespaced_config_map(JOB_NAMESPACE, {"metadata": {"name": name}}).metadata.resource_version
    core.patch_namespaced_config_map(name, JOB_NAMESPACE, {"data": {"n": "1"}})
    control_plane.restart_apiserver()

    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, JOB_NAMESPACE, resource_version=old_rv, timeout_seconds=3
        ):
            pass
    assert err.value.status == 410, err.value
