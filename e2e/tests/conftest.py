"""The e2e tier's fixtures: one real control plane for the whole session (see e2e/controlplane.py)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from e2e import controllers
from e2e.controlplane import ControlPlane, default_bin_dir, missing_binaries, pinned_versions
from lambda_runtime.daemon import Daemon
from lambda_runtime.remote import ready as lambda_runtime_ready

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder is an e2e test, marked or not."""
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.e2e)


def pytest_report_header(config: pytest.Config) -> str:
    pinned = pinned_versions() | controllers.pinned_versions()
    missing = missing_binaries() + controllers.missing()
    where = f"binaries: {default_bin_dir()}" + (f" (missing: {', '.join(missing)})" if missing else "")
    return "e2e pinned: " + ", ".join(f"{name} {version}" for name, version in pinned.items()) + f"; {where}"


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, controller-manager, scheduler, kwok and training-operator, started once."""
    missing = missing_binaries()
    if missing and os.environ.get("JOBSYNC_E2E_REQUIRED"):
        pytest.fail(f"JOBSYNC_E2E_REQUIRED is set but e2e binaries are missing in {default_bin_dir()}: {missing}")
    if missing:
        pytest.skip(
            f"e2e binaries missing in {default_bin_dir()} ({', '.join(missing)}): "
            "run `make e2e` (builds them with e2e/cluster/build.sh, then runs this tier)"
        )
    plane = ControlPlane()
    plane.start()
    _say(request, f"e2e control plane up in {plane.startup_seconds}s: {plane.versions_line()}")
    try:
        yield plane
    finally:
        if request.session.testsfailed:
            _say(request, plane.log_tails(60))
        plane.stop()


def _say(request: pytest.FixtureRequest, text: str) -> None:
    """Write past pytest's output capture, so that the line shows with -q too."""
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print("\n" + text, flush=True)


def _api_client(plane: ControlPlane, user: str) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(plane.write_kubeconfig(user)))


@pytest.fixture(scope="session")
def admin_api(control_plane: ControlPlane) -> Iterator[client.ApiClient]:
    """The kubernetes client as the admin (system:masters)."""
    api = _api_client(control_plane, "admin")
    yield api
    api.close()


@pytest.fixture(scope="session")
def jobsync_api(control_plane: ControlPlane) -> Iterator[client.ApiClient]:
    """The kubernetes client as jobsync-lambda (group jobsync), the identity the Lambdas have on EKS."""
    api = _api_client(control_plane, "jobsync")
    yield api
    api.close()


@pytest.fixture(scope="session")
def lambda_containers() -> Daemon:
    """The Docker daemon with the Lambda image and a sam build: the tests that run the functions in containers.

    Missing, they skip and say how to get them; under ``make e2e`` on a machine where the daemon can be had
    (JOBSYNC_SAM_LOCAL_REQUIRED, set by python -m lambda_runtime run) they fail instead.
    """
    daemon, missing = lambda_runtime_ready()
    if daemon is None:
        if os.environ.get("JOBSYNC_SAM_LOCAL_REQUIRED"):
            pytest.fail(f"JOBSYNC_SAM_LOCAL_REQUIRED is set but {missing}")
        pytest.skip(f"{missing}: run `make e2e` (it starts a Docker daemon, builds the image, runs sam build)")
    return daemon
