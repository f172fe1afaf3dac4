"""What the status Lambda publishes to CloudWatch (Powertools' EMF lines on stdout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobsync.run.manifests import job_labels
from tests.support.kube import PYTORCHJOBS
from tests.support.lambdas import invoke, load_event

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"


def emf_metrics(text: str) -> list[tuple[str, dict[str, str]]]:
    """(metric name, its dimensions) for every metric in the EMF lines printed."""
    found = []
    for line in text.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        blob = json.loads(line)
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            dimensions = {name: blob[name] for group in directive["Dimensions"] for name in group}
            found += [(metric["Name"], dimensions) for metric in directive["Metrics"]]
    return found


def test_a_job_that_ends_is_counted_once_in_jobs_finished_with_its_phase(
    kube_api, lambda_context, pinned_clock, capsys
):
    event = load_event("status-running.json")
    pinned_clock("2026-11-29T11:00:00Z")
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": event["job"]["name"], "labels": job_labels(event["execution"])},
        "spec": {"pytorchReplicaSpecs": {}},
        "status": {"conditions": [{"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded"}]},
    }
    stored = kube_api.put((*PYTORCHJOBS, "ml-training", event["job"]["name"]), job)
    event["job"]["uid"] = stored["metadata"]["uid"]
    capsys.readouterr()
    out = invoke("status", event, lambda_context)
    assert out["phase"] == "SUCCEEDED"
    metrics = emf_metrics(capsys.readouterr().out)
    assert ("JobsFinished", {"phase": "SUCCEEDED", "service": "jobsync"}) in metrics
    assert [name for name, _ in metrics].count("JobsFinished") == 1
    assert ("Polls", {"service": "jobsync"}) in metrics  # Polls keeps its own dimensions
    assert not [name for name, _ in metrics if name.startswith("Jobs") and name != "JobsFinished"]


def test_every_handler_publishes_a_metric_even_when_it_raises_or_does_nothing(lambda_context, capsys):
    """Powertools warns of an invocation that published no metric; each one counts what it did, errors too."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "No application metrics to publish" would raise here
        for function in sorted(p.parent.name for p in FUNCTIONS.glob("*/app.py")):
            with pytest.raises(Exception) as raised:
                invoke(function, {"not": "an event of any of them"}, lambda_context)
            assert not isinstance(raised.value, UserWarning), function
    printed = capsys.readouterr().out
    for name in (f"{p.parent.name.capitalize()}Errors" for p in FUNCTIONS.glob("*/app.py")):  # SubmitErrors, ...
        assert f'"Name":"{name}"' in printed, name
