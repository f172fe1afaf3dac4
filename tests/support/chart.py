"""The chart (charts/jobsync) rendered by the real, pinned helm; skipped without it, failed without it in CI."""

from __future__ import annotations

import os
from typing import Any

import pytest

from e2e import helm


def render(values: dict[str, Any] | None = None, namespace: str = "ml-training") -> list[dict[str, Any]]:
    """``helm template`` of the chart: skips the test when helm is not built (``make chart`` builds it)."""
    if not helm.available():
        message = f"helm is not built in {helm.binary().parent}: make chart (or make e2e-build) builds it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return helm.template(values, namespace)


def by_kind(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(kind, name) -> object."""
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}


CALLBACK = {
    "completionMode": "callback",
    "eventBusName": "jobsync-jobs",
    "region": "us-east-1",
    "notifier": {"image": {"repository": "123456789012.dkr.ecr.us-east-1.amazonaws.com/jobsync-notifier"}},
}
