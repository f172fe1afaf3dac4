"""Can the functions reach the cluster's API and the AWS APIs they call, from where the stack runs them?

Outside a VPC they reach a public endpoint open to every address. In a VPC (SubnetIds) they reach the
cluster's private endpoint through its security group, and each AWS API they call through a NAT gateway
or a VPC endpoint: eks and states (interface), dynamodb and, with templates, s3 (gateway). sts needs
none: the cluster token is presigned without a call.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from jobsync_cli.preflight.report import Check, fix, ok
from jobsync_cli.preflight.stack import StackConfig

EVERYWHERE = "0.0.0.0/0"
#: The services the functions call from their subnets, and how a VPC endpoint reaches each.
SERVICES = (("eks", "Interface"), ("states", "Interface"), ("dynamodb", "Gateway"), ("s3", "Gateway"))


def services(stack: StackConfig) -> list[tuple[str, str]]:
    """What this stack's functions call: s3 only when they read templates."""
    return [(name, kind) for name, kind in SERVICES if name != "s3" or stack.get("TemplateBucket")]


def endpoint_access(stack: StackConfig, cluster: dict[str, Any], ec2: Any) -> Check:
    """The cluster's endpoint settings against where the stack runs the functions."""
    config = cluster.get("resourcesVpcConfig") or {}
    public = config.get("endpointPublicAccess", True)
    private = config.get("endpointPrivateAccess", False)
    cidrs = config.get("publicAccessCidrs") or [EVERYWHERE]
    name = "endpoint access"
    if not stack.subnets:
        if public and EVERYWHERE in cidrs:
            return ok(name, "public endpoint open to every address: the functions reach it from outside a VPC")
        why = "private only" if not public else f"public only to {', '.join(cidrs)}"
        return fix(
            name, f"the endpoint is {why}, and the functions run outside a VPC", in_cluster_vpc(stack, cluster, ec2)
        )
    vpc = config.get("vpcId", "")
    elsewhere = sorted({s["SubnetId"] for s in _subnets(ec2, stack.subnets) if s["VpcId"] != vpc})
    if elsewhere:
        return fix(
            name,
            f"subnets {', '.join(elsewhere)} are not in the cluster's VPC {vpc}",
            in_cluster_vpc(stack, cluster, ec2),
        )
    if private:
        return ok(name, f"private endpoint, reached from the stack's subnets in {vpc}")
    nat = _nat_routes(ec2, stack.subnets, vpc)
    if nat and EVERYWHERE in cidrs:
        return ok(name, f"public endpoint, reached through {', '.join(sorted(set(nat.values())))}")
    update = (
        f"aws eks update-cluster-config --name {stack.cluster} --region {stack.region} "
        "--resources-vpc-config endpointPrivateAccess=true"
    )
    return fix(name, "public endpoint only, and the stack's subnets have no route to it", update)


def in_cluster_vpc(stack: StackConfig, cluster: dict[str, Any], ec2: Any) -> str:
    """The ``sam deploy`` that runs the functions in the cluster's subnets, as members of its security group
    (which admits its own members), with VPC endpoints where the subnets have no NAT gateway."""
    config = cluster.get("resourcesVpcConfig") or {}
    subnets = config.get("subnetIds") or []
    changes = {"SubnetIds": ",".join(subnets), "SecurityGroupIds": config.get("clusterSecurityGroupId", "")}
    vpc = config.get("vpcId", "")
    if subnets and not _nat_routes(ec2, subnets, vpc):
        tables = sorted(set(_route_tables(ec2, subnets, vpc).values()))
        changes |= {"CreateVpcEndpoints": "true", "VpcId": vpc, "RouteTableIds": ",".join(tables)}
    return stack.overrides(**changes)


def cluster_security_group(stack: StackConfig, cluster: dict[str, Any], ec2: Any) -> Check:
    """The cluster's security group admits HTTPS from the functions' (private endpoint)."""
    config = cluster.get("resourcesVpcConfig") or {}
    groups = [g for g in [config.get("clusterSecurityGroupId"), *(config.get("securityGroupIds") or [])] if g]
    name = "cluster security group"
    found = ec2.describe_security_groups(GroupIds=groups)["SecurityGroups"] if groups else []
    cidrs = [s["CidrBlock"] for s in _subnets(ec2, stack.subnets)]
    for group in found:
        if admits_https(group, stack.security_groups, cidrs):
            return ok(name, f"{group['GroupId']} admits HTTPS from the functions")
    target = config.get("clusterSecurityGroupId") or (groups[0] if groups else "<the cluster's security group>")
    source = stack.security_groups[0] if stack.security_groups else "<SecurityGroupIds>"
    command = (
        f"aws ec2 authorize-security-group-ingress --group-id {target} --protocol tcp --port 443 "
        f"--source-group {source} --region {stack.region}"
    )
    return fix(name, f"no rule of {', '.join(groups) or 'the cluster'} admits HTTPS from {source}", command)


def admits_https(group: dict[str, Any], sources: list[str], cidrs: list[str]) -> bool:
    """Whether one of ``group``'s ingress rules lets TCP 443 in from one of ``sources`` or all of ``cidrs``."""
    for rule in group.get("IpPermissions") or []:
        protocol = rule.get("IpProtocol")
        port_ok = protocol == "-1" or (protocol == "tcp" and rule.get("FromPort", 0) <= 443 <= rule.get("ToPort", 0))
        if not port_ok:
            continue
        if {pair.get("GroupId") for pair in rule.get("UserIdGroupPairs") or []} & set(sources):
            return True
        ranges = [ipaddress.ip_network(r["CidrIp"]) for r in rule.get("IpRanges") or []]
        if cidrs and all(any(ipaddress.ip_network(c).subnet_of(r) for r in ranges) for c in cidrs):  # type: ignore[arg-type]
            return True
    return False


def routes_to_aws(stack: StackConfig, cluster: dict[str, Any], ec2: Any) -> list[Check]:
    """A route from the stack's subnets to each AWS API the functions call: a NAT gateway, or a VPC endpoint."""
    vpc = (cluster.get("resourcesVpcConfig") or {}).get("vpcId", "")
    nat = _nat_routes(ec2, stack.subnets, vpc)
    if len(nat) == len(stack.subnets):
        return [ok("route to AWS APIs", f"every subnet routes through {', '.join(sorted(set(nat.values())))}")]
    tables = _route_tables(ec2, stack.subnets, vpc)
    endpoints = ec2.describe_vpc_endpoints(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["VpcEndpoints"]
    by_service = {e["ServiceName"]: e for e in endpoints if e.get("State", "").lower() == "available"}
    checks = []
    for service, kind in services(stack):
        name = f"route to {service}"
        endpoint = by_service.get(f"com.amazonaws.{stack.region}.{service}")
        problem = _endpoint_problem(ec2, endpoint, kind, stack, sorted(set(tables.values())))
        if problem is None:
            checks.append(ok(name, f"{kind.lower()} endpoint {endpoint['VpcEndpointId']}"))  # type: ignore[index]
        else:
            checks.append(fix(name, problem[0], problem[1] or _create_endpoints(stack, vpc, tables, service, kind)))
    return checks


def _endpoint_problem(
    ec2: Any, endpoint: dict[str, Any] | None, kind: str, stack: StackConfig, tables: list[str]
) -> tuple[str, str] | None:
    """What is wrong with the endpoint (and a command when it is one of its own), or None."""
    if endpoint is None:
        return (f"no NAT gateway and no {kind.lower()} endpoint", "")
    ident = endpoint["VpcEndpointId"]
    if kind == "Gateway":
        missing = [t for t in tables if t not in (endpoint.get("RouteTableIds") or [])]
        if missing:
            command = f"aws ec2 modify-vpc-endpoint --vpc-endpoint-id {ident} --add-route-table-ids {' '.join(missing)}"
            return (f"{ident} is not on route tables {', '.join(missing)}", f"{command} --region {stack.region}")
        return None
    if not endpoint.get("PrivateDnsEnabled"):
        command = f"aws ec2 modify-vpc-endpoint --vpc-endpoint-id {ident} --private-dns-enabled --region {stack.region}"
        return (f"{ident} has no private DNS name: the functions would still call the public one", command)
    group_ids = [g["GroupId"] for g in endpoint.get("Groups") or []]
    groups = ec2.describe_security_groups(GroupIds=group_ids)["SecurityGroups"] if group_ids else []
    cidrs = [s["CidrBlock"] for s in _subnets(ec2, stack.subnets)]
    if not any(admits_https(g, stack.security_groups, cidrs) for g in groups):
        source = stack.security_groups[0] if stack.security_groups else "<SecurityGroupIds>"
        target = group_ids[0] if group_ids else "<the endpoint's security group>"
        command = (
            f"aws ec2 authorize-security-group-ingress --group-id {target} --protocol tcp --port 443 "
            f"--source-group {source} --region {stack.region}"
        )
        return (f"{ident}'s security groups do not admit HTTPS from {source}", command)
    return None


def _create_endpoints(stack: StackConfig, vpc: str, tables: dict[str, str], service: str, kind: str) -> str:
    """The stack's own endpoints when it does not make them yet; else this one endpoint by hand."""
    if stack.get("CreateVpcEndpoints") != "true":
        return stack.overrides(
            CreateVpcEndpoints="true", VpcId=vpc, RouteTableIds=",".join(sorted(set(tables.values())))
        )
    if not stack.deployed:
        return stack.redeploy()
    where = (
        f"--route-table-ids {' '.join(sorted(set(tables.values())))}"
        if kind == "Gateway"
        else f"--subnet-ids {' '.join(stack.subnets)} --security-group-ids {' '.join(stack.security_groups)} "
        "--private-dns-enabled"
    )
    return (
        f"aws ec2 create-vpc-endpoint --vpc-id {vpc} --vpc-endpoint-type {kind} "
        f"--service-name com.amazonaws.{stack.region}.{service} {where} --region {stack.region}"
    )


def _subnets(ec2: Any, ids: list[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ec2.describe_subnets(SubnetIds=ids)["Subnets"] if ids else []
    return found


def _route_tables(ec2: Any, subnets: list[str], vpc: str) -> dict[str, str]:
    """subnet -> its route table: the one associated with it, else the VPC's main one."""
    tables = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["RouteTables"]
    main = next((t["RouteTableId"] for t in tables for a in t.get("Associations") or [] if a.get("Main")), "")
    explicit = {
        a["SubnetId"]: t["RouteTableId"] for t in tables for a in t.get("Associations") or [] if a.get("SubnetId")
    }
    return {subnet: explicit.get(subnet, main) for subnet in subnets}


def _nat_routes(ec2: Any, subnets: list[str], vpc: str) -> dict[str, str]:
    """subnet -> the NAT gateway its default route goes to, for the subnets that have one."""
    tables = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["RouteTables"]
    nat_of = {
        t["RouteTableId"]: route["NatGatewayId"]
        for t in tables
        for route in t.get("Routes") or []
        if route.get("DestinationCidrBlock") == EVERYWHERE and route.get("NatGatewayId")
    }
    by_subnet = _route_tables(ec2, subnets, vpc)
    return {subnet: nat_of[table] for subnet, table in by_subnet.items() if table in nat_of}
