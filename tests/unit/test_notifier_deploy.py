"""The notifier's image and cluster objects agree with the code that runs in them."""

from __future__ import annotations

import re
from pathlib import Path

from jobsync.settings import ClusterSettings, Settings, parse_allowed_kinds
from jobsync_notifier.deploy import HEALTH_PORT, objects
from jobsync_notifier.settings import NotifierSettings

ROOT = Path(__file__).resolve().parents[2]
KINDS = parse_allowed_kinds("PyTorchJob,Job")


def rendered(**extra):
    return objects("ml-training", KINDS, "registry.example/jobsync-notifier:1", "jobsync-jobs", "us-east-1", **extra)


def test_one_replica_recreated_probed_where_the_health_server_answers():
    account, _, binding, deployment = rendered()
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["serviceAccountName"] == account["metadata"]["name"] == binding["subjects"][0]["name"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["ports"] == [{"name": "health", "containerPort": HEALTH_PORT}]
    assert container["resources"]["requests"] and container["securityContext"]["runAsNonRoot"] is True


def test_the_role_only_lists_and_watches_the_allowed_kinds():
    _, role, _, _ = rendered()
    assert {(r["apiGroups"][0], tuple(r["resources"])) for r in role["rules"]} == {
        ("kubeflow.org", ("pytorchjobs",)),
        ("batch", ("jobs",)),
    }
    assert all(r["verbs"] == ["list", "watch"] for r in role["rules"])


def test_every_variable_the_pod_gets_is_one_the_notifier_reads_and_the_settings_load():
    _, _, _, deployment = rendered()
    env = {e["name"]: e["value"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    read = Settings.variables() | NotifierSettings.variables() | ClusterSettings.variables()
    assert {k for k in env if k.startswith("JOBSYNC_")} <= read
    assert [k.kind for k in Settings.from_env(env).allowed_kinds] == ["PyTorchJob", "Job"]
    assert NotifierSettings.from_env(env).event_bus_name == "jobsync-jobs"
    assert ClusterSettings.from_env(env).mode == "incluster"


def test_irsa_is_an_annotation_on_the_service_account():
    account, *_ = rendered(irsa_role_arn="arn:aws:iam::123456789012:role/notifier")
    assert account["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/notifier"
    }


def test_the_image_copies_what_exists_and_pins_what_the_layer_pins():
    dockerfile = (ROOT / "notifier" / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (\S+) ", dockerfile, re.M):
        assert (ROOT / source).exists(), source
    layer = dict(
        line.split("==") for line in (ROOT / "layers/jobsync/requirements.txt").read_text().splitlines() if "==" in line
    )
    notifier = dict(
        line.split("==") for line in (ROOT / "notifier/requirements.txt").read_text().splitlines() if "==" in line
    )
    assert notifier and all(layer[name] == version for name, version in notifier.items())
