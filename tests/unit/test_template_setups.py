"""The template in each common setup: clusters in any authentication mode, private clusters, callback mode's
notifier identity and image repository, and a schedule that starts either state machine.

Rendered for one stack from SAM's translation (tests/support/stack.py), so what is checked is what
CloudFormation would create for those parameters.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cfn import load_template
from tests.support.stack import ACCOUNT, PARTITION, REGION, render, translated

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = load_template()
VPC = {
    "SubnetIds": "subnet-0a1b2c3d,subnet-1a2b3c4d",
    "SecurityGroupIds": "sg-lambdas,sg-other",
    "VpcId": "vpc-0a1b2c3d",
    "RouteTableIds": "rtb-0a1b2c3d,rtb-1a2b3c4d",
}


def stack(**parameters: str) -> dict[str, Any]:
    return render(translated(), "jobsync", {"ClusterName": "training", **parameters}).resources


def of_type(resources: dict[str, Any], kind: str) -> dict[str, Any]:
    return {rid: r["Properties"] for rid, r in resources.items() if r["Type"] == kind}


# ---------------------------------------------------------------- private clusters


def services_the_lambdas_call() -> set[str]:
    """Every service the Lambdas make a client for (``aws.client``/``aws.resource`` in the layer and functions).

    The command line (follow.py) runs on a deployer's machine and the notifier in the cluster: not here.
    """
    found = set()
    folders = [ROOT / "layers" / "jobsync" / "jobsync", ROOT / "functions"]
    for path in (p for folder in folders for p in folder.rglob("*.py") if p.name != "follow.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"client", "resource"}
                and ast.unparse(node.func.value) == "aws"
                and isinstance(node.args[0], ast.Constant)
            ):
                found.add(node.args[0].value)
    return found


def test_a_private_stack_gets_an_endpoint_for_every_service_the_lambdas_call():
    called = services_the_lambdas_call()
    # sts only presigns the cluster token, locally (tests/unit/test_eks_token.py): no call, no endpoint.
    endpoint_name = {"stepfunctions": "states"}
    needed = {endpoint_name.get(service, service) for service in called - {"sts"}}
    assert needed == {"eks", "states", "dynamodb", "s3"}

    endpoints = of_type(
        stack(CreateVpcEndpoints="true", TemplateBucket="templates-bucket", **VPC), "AWS::EC2::VPCEndpoint"
    )
    by_service = {e["ServiceName"].removeprefix(f"com.amazonaws.{REGION}."): e for e in endpoints.values()}
    assert set(by_service) == needed
    for name in ("eks", "states"):
        endpoint = by_service[name]
        assert endpoint["VpcEndpointType"] == "Interface" and endpoint["PrivateDnsEnabled"] is True
        assert endpoint["SubnetIds"] == VPC["SubnetIds"].split(",")
    for name in ("dynamodb", "s3"):
        assert by_service[name]["VpcEndpointType"] == "Gateway"
        assert by_service[name]["RouteTableIds"] == VPC["RouteTableIds"].split(",")


def test_the_interface_endpoints_admit_https_from_the_lambdas_and_open_nothing_else():
    resources = stack(CreateVpcEndpoints="true", **VPC)
    (group,) = of_type(resources, "AWS::EC2::SecurityGroup").values()
    assert group["VpcId"] == VPC["VpcId"]
    (ingress,) = group["SecurityGroupIngress"]
    # Every function carries all of SecurityGroupIds: the first admits them.
    assert (ingress["FromPort"], ingress["ToPort"], ingress["SourceSecurityGroupId"]) == (443, 443, "sg-lambdas")
    assert [rule["CidrIp"] for rule in group["SecurityGroupEgress"]] == ["127.0.0.1/32"]
    functions = of_type(resources, "AWS::Lambda::Function")
    assert all(f["VpcConfig"]["SecurityGroupIds"] == ["sg-lambdas", "sg-other"] for f in functions.values())


@pytest.mark.parametrize(
    "parameters",
    [{}, VPC, {**VPC, "CreateVpcEndpoints": "false", "TemplateBucket": "b"}],
    ids=["no VPC", "VPC with NAT", "endpoints off"],
)
def test_no_endpoint_unless_asked_for(parameters):
    resources = stack(**parameters)
    assert of_type(resources, "AWS::EC2::VPCEndpoint") == {}
    assert of_type(resources, "AWS::EC2::SecurityGroup") == {}


def test_without_a_template_bucket_no_s3_endpoint():
    endpoints = of_type(stack(CreateVpcEndpoints="true", **VPC), "AWS::EC2::VPCEndpoint")
    assert sorted(e["ServiceName"].rsplit(".", 1)[1] for e in endpoints.values()) == ["dynamodb", "eks", "states"]


# ---------------------------------------------------------------- parameters that only work together


def rule_value(node: Any, parameters: dict[str, Any]) -> Any:
    """CloudFormation's rule functions, the ones template.yaml uses."""
    if isinstance(node, dict) and len(node) == 1:
        ((key, arg),) = node.items()
        if key == "Ref":
            return parameters[arg]
        if key == "Fn::Not":
            return not rule_value(arg[0], parameters)
        if key == "Fn::Equals":
            return rule_value(arg[0], parameters) == rule_value(arg[1], parameters)
        if key == "Fn::EachMemberEquals":
            return all(member == rule_value(arg[1], parameters) for member in rule_value(arg[0], parameters))
        raise NotImplementedError(key)
    return node


def refused(**given: str) -> list[str]:
    """The AssertDescription of every rule assertion the parameters break, as CloudFormation would refuse them."""
    parameters = {}
    for name, spec in TEMPLATE["Parameters"].items():
        value = given.get(name, spec.get("Default", ""))
        parameters[name] = value.split(",") if spec["Type"] == "CommaDelimitedList" else value
    out = []
    for rule in TEMPLATE["Rules"].values():
        if "RuleCondition" in rule and not rule_value(rule["RuleCondition"], parameters):
            continue
        out += [a["AssertDescription"] for a in rule["Assertions"] if not rule_value(a["Assert"], parameters)]
    return out


def test_parameters_that_only_work_together_are_refused_by_name():
    assert refused() == []
    assert refused(**VPC) == []
    assert refused(CreateVpcEndpoints="true", **VPC) == []
    assert refused(SubnetIds="subnet-1") == [
        "SubnetIds needs SecurityGroupIds (the cluster's security group must allow 443 from them)."
    ]
    assert refused(CreateVpcEndpoints="true") == [
        "CreateVpcEndpoints=true needs SubnetIds (the Lambdas run in a VPC).",
        "CreateVpcEndpoints=true needs VpcId, the VPC of SubnetIds.",
        "CreateVpcEndpoints=true needs RouteTableIds, the route tables of SubnetIds.",
    ]
    no_routes = {**VPC, "RouteTableIds": ""}
    assert refused(CreateVpcEndpoints="true", **no_routes) == [
        "CreateVpcEndpoints=true needs RouteTableIds, the route tables of SubnetIds."
    ]


# ---------------------------------------------------------------- authentication modes


def outputs(**parameters: str) -> dict[str, Any]:
    return render(translated(), "jobsync", {"ClusterName": "training", **parameters}).outputs


def test_an_api_cluster_gets_the_access_entry_and_a_config_map_cluster_the_aws_auth_entry():
    api = stack()
    (entry,) = of_type(api, "AWS::EKS::AccessEntry").values()
    role_arn = f"arn:{PARTITION}:iam::{ACCOUNT}:role/jobsync-ClusterAccessRole-1AB2CD3EF4GH"
    assert entry["PrincipalArn"] == role_arn and entry["KubernetesGroups"] == ["jobsync"]
    assert "AwsAuthMapRole" not in outputs()

    config_map = stack(CreateAccessEntry="false", KubernetesGroup="ml-jobs")
    assert of_type(config_map, "AWS::EKS::AccessEntry") == {}
    mapping = yaml.safe_load(outputs(CreateAccessEntry="false", KubernetesGroup="ml-jobs")["AwsAuthMapRole"])
    assert mapping == {"rolearn": role_arn, "username": "jobsync-lambda", "groups": ["ml-jobs"]}


# ---------------------------------------------------------------- callback mode's notifier


def test_only_the_notifiers_service_account_in_its_namespace_on_this_cluster_may_assume_its_role():
    resources = stack(CreateNotifierIdentity="true", Namespace="ml-jobs")
    trust = resources["NotifierRole"]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    (statement,) = trust
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:RequestTag/eks-cluster-arn": f"arn:{PARTITION}:eks:{REGION}:{ACCOUNT}:cluster/training",
            "aws:RequestTag/kubernetes-namespace": "ml-jobs",
            "aws:RequestTag/kubernetes-service-account": "jobsync-notifier",
        }
    }
    (association,) = of_type(resources, "AWS::EKS::PodIdentityAssociation").values()
    assert (association["Namespace"], association["ServiceAccount"]) == ("ml-jobs", "jobsync-notifier")
    assert association["DisableSessionTags"] is False  # the trust policy reads them


def test_the_notifiers_repository_is_made_only_when_asked_for_with_immutable_scanned_tags():
    assert of_type(stack(), "AWS::ECR::Repository") == {}
    (repository,) = of_type(stack(CreateNotifierRepository="true"), "AWS::ECR::Repository").values()
    assert repository["ImageTagMutability"] == "IMMUTABLE"
    assert repository["ImageScanningConfiguration"] == {"ScanOnPush": True}
    assert repository["EmptyOnDelete"] is True  # sam delete removes it, images included
    uri = outputs(CreateNotifierRepository="true")["NotifierRepositoryUri"]
    assert uri.startswith(f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/")


# ---------------------------------------------------------------- the schedule


@pytest.mark.parametrize(("target", "machine"), [("RunJob", "jobsync-run-job"), ("RunJobs", "jobsync-run-jobs")])
def test_the_schedule_starts_the_state_machine_it_targets_and_may_start_no_other(target, machine):
    resources = stack(ScheduleTarget=target)
    (schedule,) = of_type(resources, "AWS::Scheduler::Schedule").values()
    arn = f"arn:{PARTITION}:states:{REGION}:{ACCOUNT}:stateMachine:{machine}"
    assert schedule["Target"]["Arn"] == arn
    role = resources["ScheduleRole"]["Properties"]
    (policy,) = role["Policies"]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert (statement["Action"], statement["Resource"]) == ("states:StartExecution", arn)
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Condition"]["ArnEquals"]["aws:SourceArn"].endswith(":schedule/default/jobsync-schedule")
