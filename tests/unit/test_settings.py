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


def test_variables_match_without_regard_to_case_and_the_first_alias_wins():
    from jobsync.settings import ClusterSettings

    assert Settings.from_env({"jobsync_namespace": "team-a"}).namespace == "team-a"
    both = {"JOBSYNC_CLUSTER_NAME": "c", "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "eu-west-1"}
    assert ClusterSettings.from_env(both).region == "us-east-1"
    assert (
        ClusterSettings.from_env({"JOBSYNC_CLUSTER_NAME": "c", "AWS_DEFAULT_REGION": "eu-west-1"}).region == "eu-west-1"
    )


def test_values_given_to_the_constructor_win_over_the_environment(monkeypatch):
    from jobsync.settings import ClusterSettings

    monkeypatch.setenv("JOBSYNC_NAMESPACE", "from-env")
    monkeypatch.setenv("JOBSYNC_MIN_WAIT_SECONDS", "45")
    monkeypatch.setenv("JOBSYNC_CLUSTER_MODE", "url")
    monkeypatch.setenv("JOBSYNC_READ_TIMEOUT_SECONDS", "7")
    given = Settings(namespace="given")
    assert (given.namespace, given.min_wait_seconds) == ("given", 45)
    cluster = ClusterSettings(url="http://127.0.0.1:9")
    assert (cluster.mode, cluster.url, cluster.read_timeout) == ("url", "http://127.0.0.1:9", 7.0)
    assert ClusterSettings(mode="url", url="http://127.0.0.1:9", read_timeout=0.5).read_timeout == 0.5


@pytest.mark.parametrize("variable", ["JOBSYNC_CONNECT_TIMEOUT_SECONDS", "JOBSYNC_READ_TIMEOUT_SECONDS"])
@pytest.mark.parametrize("value", ["abc", "0"])
def test_a_bad_cluster_timeout_names_its_variable(variable, value):
    from jobsync.settings import ClusterSettings

    with pytest.raises(ValueError, match=f"environment variable {variable} "):
        ClusterSettings.from_env({"JOBSYNC_CLUSTER_MODE": "url", "JOBSYNC_KUBE_URL": "http://x", variable: value})
