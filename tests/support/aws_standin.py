"""An AWS account for ``jobsync preflight``: moto, and a stand-in for what moto 5.2.5 lacks.

moto serves EC2, EventBridge and EKS clusters. It has no EKS authentication modes
(``accessConfig``), access entries, add-ons or Pod Identity associations, fills in none of the
``resourcesVpcConfig`` fields AWS adds (the VPC, the cluster security group, the endpoint defaults),
and its CloudFormation needs extras the test environment cannot hold. ``Account`` answers those
operations itself, at botocore's ``before-call`` hook, as AWS does (the API reference's shapes; its
error codes, HTTP statuses and messages), and lets moto answer the rest. ``deploy`` plays ``sam
deploy``: it renders template.yaml for the parameters (SAM's translation, tests/support/stack.py) and
creates in the account what CloudFormation would create that the preflight reads.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.handlers
from botocore.awsrequest import AWSResponse
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.eks.models import eks_backends

from tests.support.stack import render, translated

REGION = "us-east-1"
ACCOUNT = DEFAULT_ACCOUNT_ID
MODES = ("CONFIG_MAP", "API_AND_CONFIG_MAP", "API")  # the order a cluster may move in, never back


class AwsError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class ClusterState:
    mode: str = "CONFIG_MAP"  # what CreateCluster gives when accessConfig is not set
    security_group: str = ""
    endpoint: str | None = None
    access_entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    addons: dict[str, dict[str, Any]] = field(default_factory=dict)
    associations: dict[str, dict[str, Any]] = field(default_factory=dict)


class Account:
    """mock_aws plus the stand-in; use ``with Account() as account``."""

    def __init__(self) -> None:
        self.clusters: dict[str, ClusterState] = {}
        self.stacks: dict[str, dict[str, Any]] = {}
        self._mock = mock_aws()
        self._handlers = [
            ("before-parameter-build.eks", self._keep_params),
            ("before-parameter-build.cloudformation", self._keep_params),
            ("before-call.eks", self._eks),
            ("after-call.eks.DescribeCluster", self._describe_cluster),
            ("before-call.cloudformation.DescribeStacks", self._describe_stacks),
        ]

    def __enter__(self) -> Account:
        self._mock.start()
        botocore.handlers.BUILTIN_HANDLERS.extend(self._handlers)
        boto3.setup_default_session(region_name=REGION)  # a session made now registers the handlers
        self.ec2 = boto3.client("ec2", region_name=REGION)
        return self

    def __exit__(self, *exc: object) -> None:
        for handler in self._handlers:
            botocore.handlers.BUILTIN_HANDLERS.remove(handler)
        boto3.setup_default_session()
        self._mock.stop()

    # ---------------------------------------------------------------- what a test sets up

    def vpc(self, nat: bool = False, subnets: int = 2) -> dict[str, Any]:
        """A VPC with private subnets on one route table (with a NAT gateway's default route, or none)."""
        vpc = self.ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
        ids = [
            self.ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.1.{n}.0/24", AvailabilityZone=f"{REGION}{'abc'[n]}")[
                "Subnet"
            ]["SubnetId"]
            for n in range(subnets)
        ]
        table = self.ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
        for subnet in ids:
            self.ec2.associate_route_table(RouteTableId=table, SubnetId=subnet)
        if nat:
            public = self.ec2.create_subnet(VpcId=vpc, CidrBlock="10.1.100.0/24")["Subnet"]["SubnetId"]
            allocation = self.ec2.allocate_address(Domain="vpc")["AllocationId"]
            gateway = self.ec2.create_nat_gateway(SubnetId=public, AllocationId=allocation)["NatGateway"]
            self.ec2.create_route(
                RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=gateway["NatGatewayId"]
            )
        lambdas = self.ec2.create_security_group(GroupName="lambdas", Description="functions", VpcId=vpc)["GroupId"]
        return {"VpcId": vpc, "SubnetIds": ids, "RouteTableId": table, "LambdaSecurityGroup": lambdas}

    def cluster(
        self,
        name: str = "training",
        subnets: list[str] | None = None,
        mode: str = "CONFIG_MAP",
        public: bool = True,
        private: bool = False,
        cidrs: list[str] | None = None,
    ) -> None:
        """A cluster as CreateCluster makes it: its own security group (members admit each other)."""
        if subnets is None:
            subnets = self.vpc()["SubnetIds"]
        config: dict[str, Any] = {
            "subnetIds": subnets,
            "endpointPublicAccess": public,
            "endpointPrivateAccess": private,
        }
        if cidrs:
            config["publicAccessCidrs"] = cidrs
        eks = boto3.client("eks", region_name=REGION)
        eks.create_cluster(
            name=name, version="1.31", roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks", resourcesVpcConfig=config
        )
        vpc = self.ec2.describe_subnets(SubnetIds=subnets)["Subnets"][0]["VpcId"]
        group = self.ec2.create_security_group(
            GroupName=f"eks-cluster-sg-{name}", Description="EKS created security group", VpcId=vpc
        )["GroupId"]
        self.ec2.authorize_security_group_ingress(
            GroupId=group, IpPermissions=[{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group}]}]
        )
        self.clusters[name] = ClusterState(mode=mode, security_group=group)

    def deploy(self, name: str = "jobsync", **parameters: str) -> dict[str, str]:
        """``sam deploy`` of template.yaml: what the stack creates that preflight reads. Returns its outputs.

        A second deploy of the same stack is an update: what exists stays, what is new is created.
        """
        stack = render(translated(), name, parameters)
        template = translated()["Parameters"]
        values = {k: str(parameters.get(k, spec.get("Default", ""))) for k, spec in template.items()}
        self.stacks[name] = {"parameters": values, "outputs": {k: str(v) for k, v in stack.outputs.items()}}
        cluster = values["ClusterName"]
        groups: dict[str, str] = {}
        for rid, resource in stack.resources.items():
            props = resource.get("Properties", {})
            kind = resource["Type"]
            if kind == "AWS::EKS::AccessEntry":
                entries = self._state(cluster).access_entries
                if props["PrincipalArn"] in entries:
                    entries[props["PrincipalArn"]]["kubernetesGroups"] = list(props["KubernetesGroups"])
                else:
                    self._create_access_entry(cluster, props["PrincipalArn"], props["KubernetesGroups"])
            elif kind == "AWS::EKS::PodIdentityAssociation":
                known = self._state(cluster).associations.values()
                if not any(a["roleArn"] == props["RoleArn"] for a in known):
                    self._associate(cluster, props["Namespace"], props["ServiceAccount"], props["RoleArn"])
            elif kind == "AWS::EC2::SecurityGroup":
                existing = self.ec2.describe_security_groups(
                    Filters=[{"Name": "group-name", "Values": [f"{name}-{rid}"]}]
                )["SecurityGroups"]
                if existing:
                    groups[stack.refs[rid]] = existing[0]["GroupId"]
                    continue
                group = self.ec2.create_security_group(
                    GroupName=f"{name}-{rid}", Description=props["GroupDescription"], VpcId=props["VpcId"]
                )["GroupId"]
                ingress = [
                    {
                        "IpProtocol": rule["IpProtocol"],
                        "FromPort": rule["FromPort"],
                        "ToPort": rule["ToPort"],
                        "UserIdGroupPairs": [{"GroupId": rule["SourceSecurityGroupId"]}],
                    }
                    for rule in props.get("SecurityGroupIngress", [])
                ]
                self.ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=ingress)
                groups[stack.refs[rid]] = group
            elif kind == "AWS::Events::EventBus":
                events = boto3.client("events", region_name=REGION)
                if props["Name"] not in {b["Name"] for b in events.list_event_buses()["EventBuses"]}:
                    events.create_event_bus(Name=props["Name"])
        for resource in stack.resources.values():  # after the groups and the bus they name
            props = resource.get("Properties", {})
            if resource["Type"] == "AWS::EC2::VPCEndpoint":
                there = self.ec2.describe_vpc_endpoints(
                    Filters=[
                        {"Name": "vpc-id", "Values": [props["VpcId"]]},
                        {"Name": "service-name", "Values": [props["ServiceName"]]},
                    ]
                )["VpcEndpoints"]
                if there:
                    continue
                extra: dict[str, Any] = {}
                if props["VpcEndpointType"] == "Interface":
                    extra = {
                        "SubnetIds": props["SubnetIds"],
                        "SecurityGroupIds": [groups[g] for g in props["SecurityGroupIds"]],
                        "PrivateDnsEnabled": props["PrivateDnsEnabled"],
                    }
                else:
                    extra = {"RouteTableIds": props["RouteTableIds"]}
                self.ec2.create_vpc_endpoint(
                    VpcId=props["VpcId"],
                    ServiceName=props["ServiceName"],
                    VpcEndpointType=props["VpcEndpointType"],
                    **extra,
                )
            elif resource["Type"] == "AWS::Events::Rule" and props.get("EventBusName"):
                events = boto3.client("events", region_name=REGION)
                rule = f"{name}-ResumeFunctionJobEnded"
                events.put_rule(
                    Name=rule,
                    EventBusName=props["EventBusName"],
                    EventPattern=json.dumps(props["EventPattern"]),
                    State=props.get("State", "ENABLED"),
                )
                targets = [{"Id": t["Id"], "Arn": t["Arn"]} for t in props["Targets"]]
                events.put_targets(Rule=rule, EventBusName=props["EventBusName"], Targets=targets)
        return self.stacks[name]["outputs"]

    def set_endpoint(self, cluster: str, url: str) -> None:
        """The cluster's API endpoint (the e2e tier's API server stands in for EKS's)."""
        self.clusters[cluster].endpoint = url

    # ---------------------------------------------------------------- the stand-in

    @staticmethod
    def _keep_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["standin_params"] = dict(params)

    def _eks(self, event_name: str, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        operation = event_name.rsplit(".", 1)[-1]
        handler = getattr(self, f"_eks_{operation}", None)
        if handler is None:
            return None  # moto's
        params = context.get("standin_params", {})
        try:
            return _answer(200, handler(params))
        except AwsError as err:
            return _answer(err.status, {"Error": {"Code": err.code, "Message": err.message}})

    def _state(self, name: str) -> ClusterState:
        if name not in self.clusters:
            raise AwsError(404, "ResourceNotFoundException", f"No cluster found for name: {name}.")
        return self.clusters[name]

    def _describe_cluster(self, parsed: dict[str, Any], **_: Any) -> None:
        cluster = parsed.get("cluster")
        if not cluster or cluster["name"] not in self.clusters:
            return
        state = self.clusters[cluster["name"]]
        cluster["accessConfig"] = {"authenticationMode": state.mode, "bootstrapClusterCreatorAdminPermissions": True}
        config = cluster.setdefault("resourcesVpcConfig", {})
        subnets = config.get("subnetIds") or []
        if subnets:
            config["vpcId"] = self.ec2.describe_subnets(SubnetIds=subnets)["Subnets"][0]["VpcId"]
        config["clusterSecurityGroupId"] = state.security_group
        config.setdefault("securityGroupIds", [])
        config.setdefault("endpointPublicAccess", True)
        config.setdefault("endpointPrivateAccess", False)
        config.setdefault("publicAccessCidrs", ["0.0.0.0/0"])
        if state.endpoint:
            cluster["endpoint"] = state.endpoint

    def _eks_UpdateClusterConfig(self, params: dict[str, Any]) -> dict[str, Any]:
        state = self._state(params["name"])
        update: dict[str, Any] = {"id": str(uuid.uuid4()), "status": "InProgress", "params": []}
        if "accessConfig" in params:
            wanted = params["accessConfig"]["authenticationMode"]
            if MODES.index(wanted) < MODES.index(state.mode):
                raise AwsError(
                    400,
                    "InvalidParameterException",
                    f"Unsupported authentication mode update from {state.mode} to {wanted}",
                )
            state.mode, update["type"] = wanted, "AccessConfigUpdate"
        if "resourcesVpcConfig" in params:
            record = eks_backends[ACCOUNT][REGION].clusters[params["name"]]
            record.resources_vpc_config = {**record.resources_vpc_config, **params["resourcesVpcConfig"]}
            update["type"] = "EndpointAccessUpdate"
        return {"update": update}

    def _create_access_entry(self, cluster: str, principal: str, groups: list[str]) -> dict[str, Any]:
        state = self._state(cluster)
        if state.mode == "CONFIG_MAP":
            raise AwsError(
                400,
                "InvalidRequestException",
                "The cluster's authentication mode must be set to one of [API, API_AND_CONFIG_MAP] to perform "
                "this operation.",
            )
        if principal in state.access_entries:
            raise AwsError(
                409, "ResourceInUseException", "The specified access entry resource is already in use on this cluster."
            )
        entry = {
            "clusterName": cluster,
            "principalArn": principal,
            "kubernetesGroups": list(groups),
            "type": "STANDARD",
            "username": principal,
            "accessEntryArn": f"arn:aws:eks:{REGION}:{ACCOUNT}:access-entry/{cluster}/{uuid.uuid4()}",
        }
        state.access_entries[principal] = entry
        return entry

    def _entry(self, params: dict[str, Any]) -> dict[str, Any]:
        state = self._state(params["clusterName"])
        if params["principalArn"] not in state.access_entries:
            raise AwsError(
                404,
                "ResourceNotFoundException",
                "The specified principalArn could not be found. You can view your available access entries with "
                "'list-access-entries'.",
            )
        return state.access_entries[params["principalArn"]]

    def _eks_CreateAccessEntry(self, params: dict[str, Any]) -> dict[str, Any]:
        entry = self._create_access_entry(
            params["clusterName"], params["principalArn"], params.get("kubernetesGroups") or []
        )
        return {"accessEntry": entry}

    def _eks_DescribeAccessEntry(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"accessEntry": self._entry(params)}

    def _eks_UpdateAccessEntry(self, params: dict[str, Any]) -> dict[str, Any]:
        entry = self._entry(params)
        entry["kubernetesGroups"] = list(params.get("kubernetesGroups") or [])
        return {"accessEntry": entry}

    def _eks_CreateAddon(self, params: dict[str, Any]) -> dict[str, Any]:
        state = self._state(params["clusterName"])
        addon = {
            "addonName": params["addonName"],
            "clusterName": params["clusterName"],
            "status": "ACTIVE",
            "addonVersion": "v1.3.8-eksbuild.2",
        }
        state.addons[params["addonName"]] = addon
        return {"addon": addon}

    def _eks_DescribeAddon(self, params: dict[str, Any]) -> dict[str, Any]:
        state = self._state(params["clusterName"])
        if params["addonName"] not in state.addons:
            raise AwsError(
                404,
                "ResourceNotFoundException",
                f"No addon: {params['addonName']} found in cluster: {params['clusterName']}",
            )
        return {"addon": state.addons[params["addonName"]]}

    def _associate(self, cluster: str, namespace: str, account: str, role: str) -> dict[str, Any]:
        state = self._state(cluster)
        ident = "a-" + uuid.uuid4().hex[:17]
        association = {
            "clusterName": cluster,
            "namespace": namespace,
            "serviceAccount": account,
            "roleArn": role,
            "associationId": ident,
            "associationArn": f"arn:aws:eks:{REGION}:{ACCOUNT}:podidentityassociation/{cluster}/{ident}",
        }
        state.associations[ident] = association
        return association

    def _eks_CreatePodIdentityAssociation(self, params: dict[str, Any]) -> dict[str, Any]:
        association = self._associate(
            params["clusterName"], params["namespace"], params["serviceAccount"], params["roleArn"]
        )
        return {"association": association}

    def _eks_ListPodIdentityAssociations(self, params: dict[str, Any]) -> dict[str, Any]:
        state = self._state(params["clusterName"])
        found = [
            {k: a[k] for k in ("clusterName", "namespace", "serviceAccount", "associationArn", "associationId")}
            for a in state.associations.values()
            if params.get("namespace") in (None, a["namespace"])
            and params.get("serviceAccount") in (None, a["serviceAccount"])
        ]
        return {"associations": found}

    def _eks_DescribePodIdentityAssociation(self, params: dict[str, Any]) -> dict[str, Any]:
        state = self._state(params["clusterName"])
        if params["associationId"] not in state.associations:
            raise AwsError(404, "ResourceNotFoundException", f"Association {params['associationId']} not found")
        return {"association": state.associations[params["associationId"]]}

    def _describe_stacks(self, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        name = context.get("standin_params", {}).get("StackName", "")
        if name not in self.stacks:
            return _answer(
                400, {"Error": {"Code": "ValidationError", "Message": f"Stack with id {name} does not exist"}}
            )
        stack = self.stacks[name]
        return _answer(
            200,
            {
                "Stacks": [
                    {
                        "StackName": name,
                        "StackStatus": "CREATE_COMPLETE",
                        "Parameters": [
                            {"ParameterKey": k, "ParameterValue": v} for k, v in stack["parameters"].items()
                        ],
                        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in stack["outputs"].items()],
                    }
                ]
            },
        )


def _answer(status: int, body: dict[str, Any]) -> tuple[AWSResponse, dict[str, Any]]:
    body.setdefault("ResponseMetadata", {"HTTPStatusCode": status, "RequestId": str(uuid.uuid4())})
    return AWSResponse("https://standin.invalid/", status, {}, None), body


@contextmanager
def account() -> Iterator[Account]:
    with Account() as acc:
        yield acc
