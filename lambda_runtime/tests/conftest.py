"""The sam local checks' fixtures: the daemon, the image and the build that ``make sam-local`` prepares.

Every test here is a ``samlocal`` test; ``make test`` does not collect this folder (testpaths is tests/).
Run directly without a daemon, the image or ``sam build``, they skip and say to run ``make sam-local``;
under it (JOBSYNC_SAM_LOCAL_REQUIRED=1) a missing piece fails them instead.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lambda_runtime import relay
from lambda_runtime.daemon import Daemon
from lambda_runtime.remote import ready

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.samlocal)


def missing(why: str) -> None:
    if os.environ.get("JOBSYNC_SAM_LOCAL_REQUIRED"):
        pytest.fail(f"JOBSYNC_SAM_LOCAL_REQUIRED is set but {why}")
    pytest.skip(f"{why}: run `make sam-local` (starts a daemon, builds the image, runs sam build, then these)")


@pytest.fixture(scope="session")
def daemon() -> Daemon:
    found, why = ready()
    if found is None:
        missing(why)
    assert found is not None
    return found


@pytest.fixture(scope="session")
def gateway(daemon: Daemon) -> str:
    return relay.gateway(daemon)


@pytest.fixture
def tmp_event(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "event.json"
    yield path
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
