"""``jobsync preflight``, AWS side, against an AWS account (moto, and tests/support/aws_standin.py for what
moto lacks): every check seen failing with the exact command that fixes it, that command run, and the check
seen passing. ``Account.deploy`` plays ``sam deploy`` of template.yaml for the parameters given.

The cluster side (namespace, CRDs, RBAC, aws-auth, the notifier) runs against the e2e tier's real API
server: e2e/tests/test_preflight.py.
"""

from __future__ import annotations

import shlex

import pytest

from jobsync import runtime
from jobsync_cli import main as cli
from jobsync_cli.preflight.stack import parse_overrides
from tests.support import awscli
from tests.support.aws_standin import ACCOUNT, Account
from tests.support.lambdas import ROOT

TEMPLATE = str(ROOT / "template.yaml")
ROLE = f"arn:aws:iam::{ACCOUNT}:role/jobsync-ClusterAccessRole-1AB2CD3EF4GH"
REDEPLOY = "sam deploy --stack-name jobsync --region us-east-1"


@pytest.fixture
def account():
    runtime.reset()
    with Account() as acc:
        yield acc


def preflight(capsys, *overrides: str) -> tuple[int, dict[str, str]]:
    """Run it (AWS side only); the exit code and each check's line by its name."""
    args = ["preflight", "--aws-only", "--region", "us-east-1", "--template", TEMPLATE, "--config-file", "/nonexistent"]
    if overrides:
        args += ["--parameter-overrides", " ".join(overrides)]
    code = cli.main(args)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("stack jobsync in us-east-1")
    lines = {}
    for line in out[1:]:
        status, rest = line.split(None, 1)
        name = rest.split(": ", 1)[0]
        lines[name] = line
        assert status in {"ok", "fix", "skip"}, line
    return code, lines


def fix_of(line: str) -> str:
    assert line.startswith("fix "), line
    return line.split(" -> ", 1)[1]


def deploy_as(account: Account, command: str, **base: str) -> None:
    """``sam deploy ... --parameter-overrides K=V ...``, as the fix says it (on top of ``base``)."""
    words = shlex.split(command)
    assert words[:2] == ["sam", "deploy"] and "--parameter-overrides" in words
    given = words[words.index("--parameter-overrides") + 1 :]
    account.deploy(**{**base, **parse_overrides(given)})


# ---------------------------------------------------------------- authentication modes


def test_an_api_cluster_before_and_after_sam_deploy(account, capsys):
    account.cluster(mode="API")
    code, lines = preflight(capsys, "ClusterName=training")
    assert code == 1
    assert lines["cluster"] == "ok    cluster: training is ACTIVE, Kubernetes 1.31"
    assert lines["authentication mode API"].startswith("ok ")
    assert lines["access entry"] == (
        "fix   access entry: the stack is not deployed: it creates the functions' role (and the entry) -> "
        f"{REDEPLOY} --parameter-overrides ClusterName=training"
    )
    assert lines["endpoint access"].startswith("ok    endpoint access: public endpoint open to every address")

    account.deploy(ClusterName="training")
    code, lines = preflight(capsys)
    assert code == 0, lines
    assert lines["access entry"] == f"ok    access entry: {ROLE} -> group jobsync"


def test_a_config_map_cluster_refuses_the_access_entry_and_the_fix_is_the_one_way_switch(account, capsys):
    account.cluster(mode="CONFIG_MAP")
    with pytest.raises(Exception, match=r"authentication mode must be set to one of \[API, API_AND_CONFIG_MAP\]"):
        account.deploy(ClusterName="training")  # as CloudFormation's AccessEntry fails, and the stack rolls back
    del account.stacks["jobsync"]

    code, lines = preflight(capsys, "ClusterName=training")
    assert code == 1
    switch = fix_of(lines["authentication mode CONFIG_MAP"])
    assert switch == (
        "aws eks update-cluster-config --name training --region us-east-1 "
        "--access-config authenticationMode=API_AND_CONFIG_MAP"
    )
    assert "access entry" not in lines  # a CONFIG_MAP cluster reads none

    awscli.run(switch)
    with pytest.raises(Exception, match="Unsupported authentication mode update"):
        awscli.run("aws eks update-cluster-config --name training --access-config authenticationMode=CONFIG_MAP")
    account.deploy(ClusterName="training")
    code, lines = preflight(capsys)
    assert code == 0, lines
    assert lines["authentication mode API_AND_CONFIG_MAP"].startswith("ok ")


def test_a_config_map_cluster_without_the_switch_deploys_with_no_access_entry(account, capsys):
    account.cluster(mode="CONFIG_MAP")
    outputs = account.deploy(ClusterName="training", CreateAccessEntry="false")
    code, lines = preflight(capsys)
    assert code == 0, lines
    assert lines["authentication mode CONFIG_MAP"] == (
        "ok    authentication mode CONFIG_MAP: the stack makes no access entry (CreateAccessEntry=false): "
        "aws-auth maps the role"
    )
    # What aws-auth needs (checked on the cluster side), as the stack renders it:
    assert outputs["AwsAuthMapRole"] == f"{{rolearn: {ROLE}, username: jobsync-lambda, groups: [jobsync]}}"


def test_an_access_entry_made_by_hand_must_map_the_stacks_group(account, capsys):
    account.cluster(mode="API")
    account.deploy(ClusterName="training", CreateAccessEntry="false")
    code, lines = preflight(capsys)
    create = fix_of(lines["access entry"])
    assert create == (
        f"aws eks create-access-entry --cluster-name training --principal-arn {ROLE} --kubernetes-groups jobsync "
        "--region us-east-1"
    )
    awscli.run(create.replace("--kubernetes-groups jobsync", "--kubernetes-groups ml-readers"))  # the wrong group
    code, lines = preflight(capsys)
    update = fix_of(lines["access entry"])
    assert update == (
        f"aws eks update-access-entry --cluster-name training --principal-arn {ROLE} --kubernetes-groups ml-readers "
        "jobsync --region us-east-1"
    )
    awscli.run(update)
    code, lines = preflight(capsys)
    assert code == 0 and lines["access entry"].startswith("ok "), lines


def test_no_such_cluster_names_the_clusters_there_are(account, capsys):
    account.cluster(name="training")
    code, lines = preflight(capsys, "ClusterName=trainnig")
    assert code == 1
    assert lines["cluster"] == (
        "fix   cluster: no cluster trainnig (clusters in us-east-1: training) -> "
        f"{REDEPLOY} --parameter-overrides ClusterName='<one of them>'"
    )
    assert list(lines) == ["cluster"]  # nothing else can be asked of a cluster that is not there


# ---------------------------------------------------------------- endpoints and private clusters


@pytest.mark.parametrize(
    ("public", "cidrs", "why"),
    [(False, None, "private only"), (True, ["203.0.113.0/24"], "public only to 203.0.113.0/24")],
)
def test_a_cluster_the_functions_cannot_reach_from_outside_a_vpc(account, capsys, public, cidrs, why):
    network = account.vpc(nat=False)
    account.cluster(subnets=network["SubnetIds"], mode="API", public=public, private=True, cidrs=cidrs)
    account.deploy(ClusterName="training")
    code, lines = preflight(capsys)
    assert code == 1
    deploy = fix_of(lines["endpoint access"])
    cluster_group = account.clusters["training"].security_group
    assert lines["endpoint access"].startswith(
        f"fix   endpoint access: the endpoint is {why}, and the functions run outside"
    )
    assert deploy == (
        f"{REDEPLOY} --parameter-overrides SubnetIds={','.join(network['SubnetIds'])} SecurityGroupIds={cluster_group} "
        f"CreateVpcEndpoints=true VpcId={network['VpcId']} RouteTableIds={network['RouteTableId']}"
    )

    deploy_as(account, deploy, ClusterName="training")
    code, lines = preflight(capsys)
    assert code == 0, lines
    assert (
        lines["endpoint access"]
        == f"ok    endpoint access: private endpoint, reached from the stack's subnets in {network['VpcId']}"
    )
    assert (
        lines["cluster security group"]
        == f"ok    cluster security group: {cluster_group} admits HTTPS from the functions"
    )
    for service in ("eks", "states", "dynamodb"):
        assert lines[f"route to {service}"].startswith(f"ok    route to {service}: "), lines
    assert "route to s3" not in lines  # no templates: the functions never call S3


def test_a_private_stack_without_routes_or_a_security_group_rule_is_told_each(account, capsys):
    network = account.vpc(nat=False)
    account.cluster(subnets=network["SubnetIds"], mode="API", public=False, private=True)
    vpc = {
        "ClusterName": "training",
        "SubnetIds": ",".join(network["SubnetIds"]),
        "SecurityGroupIds": network["LambdaSecurityGroup"],
        "TemplateBucket": "jobsync-templates",
    }
    account.deploy(**vpc)
    code, lines = preflight(capsys)
    assert code == 1
    rule = fix_of(lines["cluster security group"])
    assert rule == (
        f"aws ec2 authorize-security-group-ingress --group-id {account.clusters['training'].security_group} "
        f"--protocol tcp --port 443 --source-group {network['LambdaSecurityGroup']} --region us-east-1"
    )
    endpoints = (
        f"{REDEPLOY} --parameter-overrides CreateVpcEndpoints=true VpcId={network['VpcId']} "
        f"RouteTableIds={network['RouteTableId']}"
    )
    for service in ("eks", "states", "dynamodb", "s3"):
        assert lines[f"route to {service}"].startswith(f"fix   route to {service}: no NAT gateway and no "), lines
        assert fix_of(lines[f"route to {service}"]) == endpoints

    awscli.run(rule)
    deploy_as(account, endpoints, **vpc)
    code, lines = preflight(capsys)
    assert code == 0, lines


def test_subnets_behind_a_nat_gateway_need_no_endpoint(account, capsys):
    network = account.vpc(nat=True)
    account.cluster(subnets=network["SubnetIds"], mode="API", public=True, private=False)
    account.deploy(
        ClusterName="training",
        SubnetIds=",".join(network["SubnetIds"]),
        SecurityGroupIds=network["LambdaSecurityGroup"],
    )
    code, lines = preflight(capsys)
    assert code == 0, lines
    assert lines["endpoint access"].startswith("ok    endpoint access: public endpoint, reached through nat-")
    assert lines["route to AWS APIs"].startswith("ok    route to AWS APIs: every subnet routes through nat-")


def test_subnets_of_another_vpc_are_named(account, capsys):
    account.cluster(mode="API", private=True)
    other = account.vpc()
    account.deploy(
        ClusterName="training", SubnetIds=other["SubnetIds"][0], SecurityGroupIds=other["LambdaSecurityGroup"]
    )
    code, lines = preflight(capsys)
    assert code == 1
    assert lines["endpoint access"].startswith(
        f"fix   endpoint access: subnets {other['SubnetIds'][0]} are not in the cluster's VPC"
    )


# ---------------------------------------------------------------- callback mode


def test_callback_mode_needs_the_pod_identity_agent_the_association_and_the_bus(account, capsys):
    account.cluster(mode="API")
    parameters = ("ClusterName=training", "CompletionMode=callback", "CreateNotifierIdentity=true")
    code, lines = preflight(capsys, *parameters)
    assert code == 1
    add_on = fix_of(lines["add-on eks-pod-identity-agent"])
    assert (
        add_on == "aws eks create-addon --cluster-name training --addon-name eks-pod-identity-agent --region us-east-1"
    )
    # Before the first deploy there is no previous value: the command sends what preflight was given.
    first_deploy = f"{REDEPLOY} --parameter-overrides {' '.join(parameters)}"
    assert fix_of(lines["pod identity association"]) == first_deploy
    assert fix_of(lines["event bus"]) == first_deploy

    awscli.run(add_on)
    deploy_as(account, first_deploy)
    code, lines = preflight(capsys)
    assert code == 0, lines
    assert lines["pod identity association"].startswith(
        "ok    pod identity association: ml-training/jobsync-notifier -> arn:aws:iam::"
    )
    assert lines["event bus"] == "ok    event bus: jobsync-jobs, rule jobsync-ResumeFunctionJobEnded -> jobsync-resume"


def test_callback_mode_with_irsa_asks_nothing_of_pod_identity(account, capsys):
    account.cluster(mode="API")
    account.deploy(ClusterName="training", CompletionMode="callback")
    code, lines = preflight(capsys)
    assert code == 0, lines
    assert not {"add-on eks-pod-identity-agent", "pod identity association"} & set(lines)


# ---------------------------------------------------------------- what it cannot read


def test_an_override_that_is_no_parameter_is_refused_by_name(account, capsys):
    code = cli.main(
        ["preflight", "--region", "us-east-1", "--template", TEMPLATE, "--parameter-overrides", "Namspace=x"]
    )
    assert code == 2
    assert capsys.readouterr().err.strip() == f"jobsync preflight: Namspace: not a parameter of {TEMPLATE}"


def test_no_stack_and_no_template_says_what_to_do(account, capsys, tmp_path):
    code = cli.main(["preflight", "--region", "us-east-1", "--template", str(tmp_path / "template.yaml")])
    assert code == 2
    assert "is not deployed in us-east-1 and" in capsys.readouterr().err
