"""Fixtures every test folder shares; the fakes themselves live in tests/support."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Powertools as the template's Globals configure it, minus what needs AWS.
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "jobsync")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "jobsync")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

# Imported after the environment above, which Powertools reads.
from tests.support.clock import FakeClock
from tests.support.kube import local_kube_api
from tests.support.lambdas import ROOT, FakeLambdaContext, load_event

SHARED = ROOT.parent / "shared"


@pytest.fixture(autouse=True)
def reset_metrics():
    """No metric, dimension, metadata or cold start of one test reaches the next (Powertools' testing advice).

    Every ``Metrics()`` shares one set at class level, so a handler's metrics
    from one test would otherwise be flushed, or counted, in the next.
    """
    from aws_lambda_powertools import Metrics
    from aws_lambda_powertools.metrics.provider import cold_start

    def clear() -> None:
        metrics = Metrics()
        metrics.clear_default_dimensions()
        metrics.clear_metrics()
        cold_start.reset_cold_start_flag()

    clear()
    yield
    clear()


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


@pytest.fixture
def event_loader():
    return load_event


@pytest.fixture
def fake_clock():
    """jobsync's clock, stopped at a fixed instant until the test moves it: ``fake_clock.advance(60)``."""
    from jobsync import clock

    fake = FakeClock()
    clock.set_clock(fake)
    yield fake
    clock.set_clock(None)


@pytest.fixture
def pinned_clock(fake_clock):
    """jobsync's clock stopped at a time the test sets: ``pinned_clock("2026-11-29T11:00:00Z")``."""
    from jobsync import clock

    def pin(when: str) -> float:
        at = clock.parse(when)
        assert at is not None, when
        fake_clock.now = at
        return at

    return pin


@pytest.fixture
def kube_env() -> dict[str, str]:
    """What ``kube_api`` adds to jobsync's environment; a test module overrides it to add settings."""
    return {}


@pytest.fixture
def kube_crds():
    """The CRDs ``kube_api`` serves; None is the PyTorchJob CRD alone."""
    return None


@pytest.fixture
def kube_api(kube_env, kube_crds):
    """The local Kubernetes API with the namespace ``ml-training``, jobsync pointed at it (``url`` mode)."""
    with local_kube_api(env=kube_env, crds=kube_crds) as server:
        yield server


def shared_path(*parts: str) -> Path:
    """A path under ../shared; the test skips when the folder is not beside the project."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared/{'/'.join(parts)} is not available")
    return path
