"""charts/jobsync, rendered by the real helm: the Roles grant what the code needs, for every kind and mode,
the notifier runs as the stack expects, and bad values are refused by name.

What the functions need (``jobsync_cli.preflight.grants``) is itself checked against the requests they
make (tests/integration/test_rbac.py); here the chart's Roles are checked against it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from e2e import helm
from harness.notifier_process import deployed_env
from jobsync.settings import ClusterSettings, Settings, parse_allowed_kinds
from jobsync_cli.preflight import grants
from jobsync_notifier.settings import NotifierSettings
from tests.cfn import load_template
from tests.support.chart import CALLBACK, by_kind, render

ROOT = Path(__file__).resolve().parents[2]
KINDS = [
    "PyTorchJob",
    "PyTorchJob,TFJob,MPIJob,XGBoostJob,PaddleJob,JAXJob",
    "batch/v1/Job",
    "TrainJob",
    "TrainJob,Job",
    "TrainingJob",  # two API groups serve it: both
    "sagemaker.services.k8s.aws/v1alpha1/TrainingJob, ProcessingJob",
]


@pytest.mark.parametrize("mode", ["poll", "watch", "callback"])
@pytest.mark.parametrize("kinds", KINDS)
def test_the_functions_role_grants_exactly_what_the_code_needs(kinds, mode):
    values = {"allowedKinds": kinds, "completionMode": mode}
    docs = by_kind(render({**CALLBACK, **values} if mode == "callback" else values))
    needed = grants.functions(parse_allowed_kinds(kinds), mode)
    assert grants.of_role(docs["Role", "jobsync"]) == {g.key() for g in needed}
    if mode == "callback":
        assert grants.of_role(docs["Role", "jobsync-notifier"]) == {
            g.key() for g in grants.notifier(parse_allowed_kinds(kinds))
        }
    else:
        assert {kind for kind, _ in docs} == {"Role", "RoleBinding"}  # no notifier outside callback mode


def test_one_rule_per_api_group_resources_sorted():
    role = by_kind(render({"allowedKinds": "TFJob,PyTorchJob,Job,TrainJob"}))["Role", "jobsync"]
    assert [(r["apiGroups"], r["resources"]) for r in role["rules"]] == [
        (["batch"], ["jobs"]),
        (["kubeflow.org"], ["pytorchjobs", "tfjobs"]),
        (["trainer.kubeflow.org"], ["trainjobs"]),
        (["jobset.x-k8s.io"], ["jobsets"]),  # a TrainJob's JobSet, read as its pods' owner
        ([""], ["pods"]),
        ([""], ["pods/log"]),
        ([""], ["events"]),
    ]


def test_the_functions_role_is_namespaced_bound_to_the_stacks_group_and_grants_nothing_broad():
    docs = render({"kubernetesGroup": "ml-jobs"}, namespace="training")
    assert {doc["kind"] for doc in docs} == {"Role", "RoleBinding"}  # no ClusterRole: nothing cluster-wide
    assert {doc["metadata"]["namespace"] for doc in docs} == {"training"}
    binding = by_kind(docs)["RoleBinding", "jobsync"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "jobsync"}
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "ml-jobs"}]
    granted = grants.of_role(by_kind(docs)["Role", "jobsync"])
    assert not {verb for verb, _, _ in granted} & {"*", "update", "patch", "deletecollection", "escalate", "bind"}
    assert not {resource for _, _, resource in granted} & {"*", "secrets", "configmaps", "pods/exec"}


def test_the_notifier_runs_as_the_service_account_the_stacks_pod_identity_trusts():
    docs = by_kind(render(CALLBACK))
    template = load_template()
    association = template["Resources"]["NotifierPodIdentity"]["Properties"]
    trust = template["Resources"]["NotifierRole"]["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    account = association["ServiceAccount"]
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"] == account
    assert ("ServiceAccount", account) in docs
    deployment = docs["Deployment", "jobsync-notifier"]
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == account
    (container,) = pod["containers"]
    assert container["image"] == f"{CALLBACK['notifier']['image']['repository']}:{chart_app_version()}"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    binding = docs["RoleBinding", "jobsync-notifier"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "ml-training"}]


def test_every_variable_the_notifier_gets_is_one_it_reads_and_the_local_run_gives_it_the_same():
    values = {**CALLBACK, "allowedKinds": "PyTorchJob,Job"}
    deployment = by_kind(render(values))["Deployment", "jobsync-notifier"]
    env = {e["name"]: e["value"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    read = Settings.variables() | NotifierSettings.variables() | ClusterSettings.variables()
    assert {k for k in env if k.startswith("JOBSYNC_")} <= read
    assert [k.kind for k in Settings.from_env(env).allowed_kinds] == ["PyTorchJob", "Job"]
    assert NotifierSettings.from_env(env).event_bus_name == "jobsync-jobs"
    assert ClusterSettings.from_env(env).mode == "incluster"
    # The local run starts the notifier process with the Deployment's settings, the cluster's whereabouts aside.
    local = deployed_env("ml-training", "PyTorchJob,Job", "jobsync-jobs", "us-east-1")
    assert {k: v for k, v in env.items() if k not in {"JOBSYNC_CLUSTER_MODE", "JOBSYNC_HEALTH_PORT"}} == local


def test_irsa_is_an_annotation_and_the_architecture_a_node_selector():
    arn = "arn:aws:iam::123456789012:role/notifier"
    values = {**CALLBACK, "notifier": {**CALLBACK["notifier"], "irsaRoleArn": arn}}
    values["notifier"]["nodeSelector"] = {"kubernetes.io/arch": "arm64"}
    docs = by_kind(render(values))
    assert docs["ServiceAccount", "jobsync-notifier"]["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": arn}
    pod = docs["Deployment", "jobsync-notifier"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "arm64"}


@pytest.mark.parametrize(
    ("values", "namespace", "error"),
    [
        ({"completionMode": "callback"}, "ml-training", r"at '/eventBusName': minLength"),
        ({"completionMode": "callback"}, "ml-training", r"at '/notifier/image/repository': minLength"),
        ({"completionMode": "sometimes"}, "ml-training", r"at '/completionMode': value must be one of"),
        ({"allowedKinds": "PyTorchJob,Widget"}, "ml-training", r'allowedKinds: unknown kind "Widget"'),
        ({"allowedKinds": " , "}, "ml-training", r"allowedKinds names no kind"),
        ({"namespace": "ml-training"}, "default", r'namespace "ml-training" is not the release namespace "default"'),
        ({"watchSeconds": 840}, "ml-training", r"additional properties 'watchSeconds' not allowed"),
    ],
)
def test_bad_values_are_refused_by_name(values, namespace, error):
    render({})  # skips without helm
    with pytest.raises(helm.HelmError, match=error):
        helm.template(values, namespace)


def chart_app_version() -> str:
    return yaml.safe_load((ROOT / "charts" / "jobsync" / "Chart.yaml").read_text())["appVersion"]


def test_the_chart_is_versioned_with_the_package():
    chart = yaml.safe_load((ROOT / "charts" / "jobsync" / "Chart.yaml").read_text())
    version = re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert version and chart["version"] == chart["appVersion"] == version.group(1)
