"""``jobsync preflight``, cluster side, against the real API server: each check seen failing with the exact
command that fixes it, that command run (helm through the real helm), and the check seen passing.

The AWS side is moto and its stand-in (tests/support/aws_standin.py), as in
tests/integration/test_preflight_aws.py, with the cluster's endpoint set to this API server, so the
deployer's kubeconfig (the admin's) points at the stack's cluster as ``aws eks update-kubeconfig`` makes it.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import subprocess
from collections.abc import Iterator

import pytest
import yaml

from e2e import helm
from e2e.controlplane import JOB_NAMESPACE, OUTCOME_ANNOTATION, ControlPlane
from e2e.tests.jobs import wait_for
from e2e.tests.runs import install_chart
from jobsync import runtime
from jobsync.cluster import reset_cache
from jobsync_cli import main as cli
from tests.support.aws_standin import Account

ROLE = "arn:aws:iam::123456789012:role/jobsync-ClusterAccessRole-1AB2CD3EF4GH"
TRAINJOB_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "trainjobs.trainer.kubeflow.org"},
    "spec": {
        "group": "trainer.kubeflow.org",
        "scope": "Namespaced",
        "names": {"plural": "trainjobs", "singular": "trainjob", "kind": "TrainJob", "listKind": "TrainJobList"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


@pytest.fixture
def aws(control_plane: ControlPlane) -> Iterator[Account]:
    """An account whose cluster "training" (API mode) is this API server."""
    runtime.reset()
    with Account() as account:
        account.cluster(mode="API")
        account.set_endpoint("training", control_plane.server)
        yield account
    reset_cache()
    install_chart(control_plane)  # as the other e2e tests expect to find the cluster


def preflight(cp: ControlPlane, capsys: pytest.CaptureFixture[str], user: str = "admin") -> tuple[int, dict[str, str]]:
    reset_cache()  # a fresh client per run, as a new process would have
    kubeconfig = cp.write_kubeconfig(user)
    code = cli.main(["preflight", "--region", "us-east-1", "--kubeconfig", str(kubeconfig)])
    lines = {}
    for line in capsys.readouterr().out.splitlines()[1:]:
        lines[line.split(None, 1)[1].split(": ", 1)[0]] = line
    return code, lines


def fix_of(line: str) -> str:
    assert line.startswith("fix "), line
    return line.split(" -> ", 1)[1]


def run_helm(cp: ControlPlane, command: str, *extra: str) -> None:
    """A ``helm upgrade --install`` preflight printed, as written, with the pinned helm on this API server."""
    words = shlex.split(command)
    assert words[:3] == ["helm", "upgrade", "--install"], command
    words = [str(helm.binary()), *[str(helm.CHART) if w == "charts/jobsync" else w for w in words[1:]]]
    subprocess.run([*words, *extra, "--kubeconfig", str(cp.write_kubeconfig("admin"))], check=True, capture_output=True)


def settles(cp: ControlPlane, capsys: pytest.CaptureFixture[str], name: str) -> dict[str, str]:
    """Preflight again until ``name`` is ok (RBAC reaches the authorizer through an informer)."""
    found: dict[str, str] = {}

    def passed() -> bool:
        nonlocal found
        _, found = preflight(cp, capsys)
        return found.get(name, "").startswith("ok ")

    wait_for(f"{name} to pass", passed, timeout=15, interval=1)
    return found


def test_the_functions_rbac_in_poll_and_watch_mode(
    control_plane: ControlPlane, aws: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    helm.uninstall(control_plane.write_kubeconfig("admin"), JOB_NAMESPACE)
    aws.deploy(ClusterName="training")
    code, lines = preflight(control_plane, capsys)
    assert code == 1
    assert lines["kubeconfig"].startswith(f"ok    kubeconfig: {control_plane.server} answers, Kubernetes v1.34.4")
    assert lines[f"namespace {JOB_NAMESPACE}"] == f"ok    namespace {JOB_NAMESPACE}: exists"
    assert lines["PyTorchJob (pytorchjobs.kubeflow.org/v1)"] == "ok    PyTorchJob (pytorchjobs.kubeflow.org/v1): served"
    install = (
        f"helm upgrade --install jobsync charts/jobsync -n {JOB_NAMESPACE} --set-string allowedKinds=PyTorchJob "
        "--set completionMode=poll --set-string kubernetesGroup=jobsync"
    )
    assert lines["RBAC of group jobsync"] == (
        "fix   RBAC of group jobsync: may not create pytorchjobs.kubeflow.org, delete pytorchjobs.kubeflow.org, "
        "get pods/log, get pytorchjobs.kubeflow.org, list events, list pods, list pytorchjobs.kubeflow.org -> "
        + install
    )
    run_helm(control_plane, fix_of(lines["RBAC of group jobsync"]))
    lines = settles(control_plane, capsys, "RBAC of group jobsync")
    assert lines["RBAC of group jobsync"] == "ok    RBAC of group jobsync: all 7 grants the functions need (poll mode)"

    aws.deploy(ClusterName="training", CompletionMode="watch")  # the stack goes to watch mode; the chart not yet
    code, lines = preflight(control_plane, capsys)
    assert code == 1
    assert lines["RBAC of group jobsync"].startswith(
        "fix   RBAC of group jobsync: may not watch pytorchjobs.kubeflow.org -> "
    )
    assert "--set completionMode=watch" in fix_of(lines["RBAC of group jobsync"])
    run_helm(control_plane, fix_of(lines["RBAC of group jobsync"]))
    lines = settles(control_plane, capsys, "RBAC of group jobsync")
    assert lines["RBAC of group jobsync"] == "ok    RBAC of group jobsync: all 8 grants the functions need (watch mode)"


def served(control_plane: ControlPlane) -> list[str]:
    """The resources discovery lists for trainer.kubeflow.org/v1alpha1 (none when the group is not served)."""
    body = control_plane.request("GET", "/apis/trainer.kubeflow.org/v1alpha1").body
    resources = body.get("resources") if isinstance(body, dict) else None
    return [str(r.get("name")) for r in resources or []]


def test_a_namespace_and_a_kind_the_cluster_does_not_serve(
    control_plane: ControlPlane, aws: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    aws.deploy(ClusterName="training", Namespace="ml-preflight", AllowedKinds="PyTorchJob,TrainJob")
    # Trainer v2's own CRDs may be installed by an earlier story (test_jobset_trainer.py): TrainJob unserved first.
    trainjobs = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/trainjobs.trainer.kubeflow.org"
    control_plane.request("DELETE", trainjobs)
    wait_for("trainjobs no longer served", lambda: control_plane.request("GET", trainjobs).status == 404, 60)
    wait_for("trainjobs gone from discovery", lambda: "trainjobs" not in served(control_plane), 60)
    code, lines = preflight(control_plane, capsys)
    assert code == 1
    assert lines["namespace ml-preflight"] == (
        "fix   namespace ml-preflight: does not exist -> kubectl create namespace ml-preflight"
    )
    assert lines["TrainJob (trainjobs.trainer.kubeflow.org/v1alpha1)"] == (
        "fix   TrainJob (trainjobs.trainer.kubeflow.org/v1alpha1): not served: its operator or CRD is missing -> "
        'kubectl apply --server-side -k "https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=v2.1.0"'
    )
    # No network here for the operator's manifests: its CRD alone makes the kind served.
    control_plane.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-preflight"}}, TRAINJOB_CRD])
    try:
        wait_for(
            "trainjobs served",
            lambda: control_plane.request("GET", "/apis/trainer.kubeflow.org/v1alpha1").status == 200,
            30,
        )
        run_helm(control_plane, fix_of(lines["RBAC of group jobsync"]))
        lines = settles(control_plane, capsys, "RBAC of group jobsync")
        assert lines["namespace ml-preflight"].startswith("ok ")
        assert lines["TrainJob (trainjobs.trainer.kubeflow.org/v1alpha1)"].endswith(": served")
    finally:
        with contextlib.suppress(helm.HelmError):
            helm.uninstall(control_plane.write_kubeconfig("admin"), "ml-preflight")
        control_plane.request(
            "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/trainjobs.trainer.kubeflow.org"
        )
        control_plane.request("DELETE", "/api/v1/namespaces/ml-preflight")


def test_a_config_map_cluster_needs_the_aws_auth_entry_preflight_renders(
    control_plane: ControlPlane, aws: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    aws.clusters["training"].mode = "CONFIG_MAP"
    aws.deploy(ClusterName="training", CreateAccessEntry="false")
    code, lines = preflight(control_plane, capsys)
    assert code == 1
    entry = f"[{{rolearn: '{ROLE}', username: jobsync-lambda, groups: [jobsync]}}]"
    assert lines["aws-auth"] == (
        "fix   aws-auth: kube-system/aws-auth does not exist -> eksctl create iamidentitymapping --cluster training "
        f"--region us-east-1 --arn {ROLE} --group jobsync --username jobsync-lambda  # or add to aws-auth's mapRoles: "
        + entry
    )
    # What eksctl would write (or a person, from the rendered entry): the entry in mapRoles.
    rendered = re.search(r"mapRoles: (.*)$", lines["aws-auth"]).group(1)
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "aws-auth", "namespace": "kube-system"},
        "data": {"mapRoles": yaml.safe_dump(yaml.safe_load(rendered))},
    }
    control_plane.apply([config_map])
    try:
        code, lines = preflight(control_plane, capsys)
        assert lines["aws-auth"] == f"ok    aws-auth: {ROLE} -> group jobsync"
        assert code == 0, lines
    finally:
        control_plane.request("DELETE", "/api/v1/namespaces/kube-system/configmaps/aws-auth")


def test_callback_mode_needs_the_notifier_running_with_its_grants(
    control_plane: ControlPlane, aws: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    helm.uninstall(control_plane.write_kubeconfig("admin"), JOB_NAMESPACE)
    outputs = aws.deploy(ClusterName="training", CompletionMode="callback", CreateNotifierRepository="true")
    code, lines = preflight(control_plane, capsys)
    assert code == 1
    command = fix_of(lines["notifier"])
    assert command == (
        f"helm upgrade --install jobsync charts/jobsync -n {JOB_NAMESPACE} --set-string allowedKinds=PyTorchJob "
        "--set completionMode=callback --set-string kubernetesGroup=jobsync --set eventBusName=jobsync-jobs "
        f"--set region=us-east-1 --set notifier.image.repository={outputs['NotifierRepositoryUri']}"
    )
    assert fix_of(lines["RBAC of jobsync-notifier"]) == command
    assert lines["notifier"] == f"fix   notifier: no Deployment {JOB_NAMESPACE}/jobsync-notifier -> {command}"
    # The notifier's identity: no Pod Identity in this stack, so IRSA, or the stack's own.
    assert "notifier identity" not in lines  # asked once the ServiceAccount exists

    # kwok plays the notifier's pod: it must run until deleted, as the notifier does.
    forever = f"notifier.podAnnotations.{OUTCOME_ANNOTATION.replace('.', chr(92) + '.')}=run-forever"
    run_helm(control_plane, command, "--set", forever, "--wait")
    lines = settles(control_plane, capsys, "RBAC of jobsync-notifier")
    assert lines["notifier"] == "ok    notifier: 1 replica available, publishing to jobsync-jobs"
    assert lines["notifier identity"] == (
        "fix   notifier identity: no Pod Identity (CreateNotifierIdentity=false) and no IRSA annotation -> "
        "sam deploy --stack-name jobsync --region us-east-1 --parameter-overrides CreateNotifierIdentity=true"
    )
    irsa = "notifier.irsaRoleArn=arn:aws:iam::123456789012:role/jobsync-notifier"
    run_helm(control_plane, command, "--set", forever, "--set", irsa, "--wait")
    code, lines = preflight(control_plane, capsys)
    assert (
        lines["notifier identity"]
        == "ok    notifier identity: IRSA role arn:aws:iam::123456789012:role/jobsync-notifier"
    )
    assert code == 0, lines


def test_a_kubeconfig_for_another_cluster_or_a_user_who_may_not_ask(
    control_plane: ControlPlane, aws: Account, capsys: pytest.CaptureFixture[str]
) -> None:
    aws.deploy(ClusterName="training")
    aws.set_endpoint("training", "https://0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com")
    code, lines = preflight(control_plane, capsys)
    assert code == 1
    assert lines["kubeconfig"] == (
        f"fix   kubeconfig: it points at {control_plane.server}, not training's endpoint "
        "https://0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com -> "
        "aws eks update-kubeconfig --name training --region us-east-1"
    )
    assert lines["RBAC"] == "skip  RBAC: needs the stack's cluster in the kubeconfig"

    aws.set_endpoint("training", control_plane.server)
    code, lines = preflight(control_plane, capsys, user="jobsync")  # the functions' own identity, not an admin
    assert (
        lines["RBAC"]
        == "fix   RBAC: the kubeconfig's user may not ask -> use a cluster admin's kubeconfig (--kubeconfig)"
    )
