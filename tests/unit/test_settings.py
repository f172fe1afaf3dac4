"""Deployment settings read from the environment the template sets."""

from __future__ import annotations

import pytest

from jobsync.settings import MAX_WATCH_SECONDS, Settings, parse_allowed_kinds


def test_defaults_without_environment():
    settings = Settings.from_env({})
    assert settings.namespace == "ml-training"
    assert [(k.api_version, k.kind) for k in settings.allowed_kinds] == [("kubeflow.org/v1", "PyTorchJob")]
    assert settings.watch_seconds == 0


def test_allowed_kinds_by_name_or_api_version():
    assert [k.kind for k in parse_allowed_kinds("PyTorchJob, TFJob")] == ["PyTorchJob", "TFJob"]
    # TrainingJob exists in two API groups: a name takes both, apiVersion/Kind one.
    assert len(parse_allowed_kinds("TrainingJob")) == 2
    (ack,) = parse_allowed_kinds("sagemaker.services.k8s.aws/v1alpha1/TrainingJob")
    assert ack.plural == "trainingjobs"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"JOBSYNC_ALLOWED_KINDS": "PyTorchJobs"}, "unknown kind 'PyTorchJobs'"),
        ({"JOBSYNC_ALLOWED_KINDS": " , "}, "names no kind"),
        ({"JOBSYNC_MIN_WAIT_SECONDS": "ten"}, "JOBSYNC_MIN_WAIT_SECONDS must be a whole number"),
        ({"JOBSYNC_WATCH_SECONDS": str(MAX_WATCH_SECONDS + 1)}, "JOBSYNC_WATCH_SECONDS must be 0 to 840"),
        ({"JOBSYNC_MIN_WAIT_SECONDS": "0"}, "wait bounds"),
    ],
)
def test_bad_settings_name_the_variable(env, message):
    with pytest.raises(ValueError, match=message):
        Settings.from_env(env)
