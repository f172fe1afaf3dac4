"""The AWS side: the cluster, how it authenticates the functions' role, and callback mode's pieces.

Authentication modes (EKS ``accessConfig.authenticationMode``): ``API`` reads access entries only,
``CONFIG_MAP`` the aws-auth ConfigMap only, ``API_AND_CONFIG_MAP`` both. The stack's access entry
(CreateAccessEntry, the default) needs one of the first two; a ``CONFIG_MAP`` cluster either switches
(one way: CONFIG_MAP -> API_AND_CONFIG_MAP -> API, never back) or maps the role in aws-auth
(CreateAccessEntry=false; the cluster-side check reads aws-auth).
"""

from __future__ import annotations

from typing import Any

from jobsync_cli.preflight.report import Check, fix, ok, skip
from jobsync_cli.preflight.stack import StackConfig

NOTIFIER = "jobsync-notifier"
POD_IDENTITY_AGENT = "eks-pod-identity-agent"


def error_code(err: Exception) -> str:
    response = getattr(err, "response", None)
    return str(((response or {}).get("Error") or {}).get("Code", "")) if isinstance(response, dict) else ""


def cluster(stack: StackConfig, eks: Any) -> tuple[Check, dict[str, Any] | None]:
    """DescribeCluster: the cluster exists and is active."""
    from botocore.exceptions import ClientError

    name = "cluster"
    if not stack.cluster:
        return fix(name, "the stack has no ClusterName", stack.overrides(ClusterName="<your cluster>")), None
    try:
        found: dict[str, Any] = eks.describe_cluster(name=stack.cluster)["cluster"]
    except ClientError as err:
        if error_code(err) != "ResourceNotFoundException":
            raise
        names = eks.list_clusters().get("clusters") or []
        listed = f" (clusters in {stack.region}: {', '.join(names)})" if names else f" (none in {stack.region})"
        return fix(name, f"no cluster {stack.cluster}{listed}", stack.overrides(ClusterName="<one of them>")), None
    status = found.get("status", "")
    if status != "ACTIVE":
        return fix(name, f"{stack.cluster} is {status}", f"aws eks wait cluster-active --name {stack.cluster}"), found
    return ok(name, f"{stack.cluster} is ACTIVE, Kubernetes {found.get('version', '?')}"), found


def authentication_mode(found: dict[str, Any]) -> str:
    return str((found.get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP")


def authentication(stack: StackConfig, found: dict[str, Any]) -> Check:
    mode = authentication_mode(found)
    name = f"authentication mode {mode}"
    if mode in ("API", "API_AND_CONFIG_MAP"):
        return ok(name, "access entries are read")
    if not stack.creates_access_entry:
        return ok(name, "the stack makes no access entry (CreateAccessEntry=false): aws-auth maps the role")
    switch = (
        f"aws eks update-cluster-config --name {stack.cluster} --region {stack.region} "
        "--access-config authenticationMode=API_AND_CONFIG_MAP"
    )
    return fix(
        name,
        "the stack's access entry needs API or API_AND_CONFIG_MAP (a one-way switch; or deploy with "
        "CreateAccessEntry=false and map the role in aws-auth)",
        switch,
    )


def access_entry(stack: StackConfig, found: dict[str, Any], eks: Any) -> Check | None:
    """The access entry that maps the functions' role to KubernetesGroup (not on a CONFIG_MAP cluster)."""
    from botocore.exceptions import ClientError

    if authentication_mode(found) == "CONFIG_MAP":
        return None
    name = "access entry"
    role = stack.role_arn
    if not role:
        return fix(name, "the stack is not deployed: it creates the functions' role (and the entry)", stack.redeploy())
    try:
        entry = eks.describe_access_entry(clusterName=stack.cluster, principalArn=role)["accessEntry"]
    except ClientError as err:
        if error_code(err) != "ResourceNotFoundException":
            raise
        if stack.creates_access_entry:
            return fix(name, f"none for {role}", stack.redeploy())
        create = (
            f"aws eks create-access-entry --cluster-name {stack.cluster} --principal-arn {role} "
            f"--kubernetes-groups {stack.group} --region {stack.region}"
        )
        return fix(name, f"none for {role}", create)
    groups = entry.get("kubernetesGroups") or []
    if stack.group not in groups:
        update = (
            f"aws eks update-access-entry --cluster-name {stack.cluster} --principal-arn {role} "
            f"--kubernetes-groups {' '.join([*groups, stack.group])} --region {stack.region}"
        )
        return fix(name, f"{role} is mapped to {groups or 'no group'}, not {stack.group}", update)
    return ok(name, f"{role} -> group {stack.group}")


def callback(stack: StackConfig, eks: Any, events: Any) -> list[Check]:
    """Callback mode's AWS side: the notifier's identity (Pod Identity agent and association), the bus and rule."""
    checks: list[Check] = []
    if stack.get("CreateNotifierIdentity") == "true":
        checks.append(_pod_identity_agent(stack, eks))
        checks.append(_association(stack, eks))
    checks.append(_bus_and_rule(stack, events))
    return checks


def _pod_identity_agent(stack: StackConfig, eks: Any) -> Check:
    from botocore.exceptions import ClientError

    name = f"add-on {POD_IDENTITY_AGENT}"
    create = (
        f"aws eks create-addon --cluster-name {stack.cluster} --addon-name {POD_IDENTITY_AGENT} --region {stack.region}"
    )
    try:
        addon = eks.describe_addon(clusterName=stack.cluster, addonName=POD_IDENTITY_AGENT)["addon"]
    except ClientError as err:
        if error_code(err) != "ResourceNotFoundException":
            raise
        return fix(name, "not installed: the notifier would get no AWS credentials", create)
    status = addon.get("status", "")
    if status != "ACTIVE":
        return fix(
            name,
            f"{status}",
            f"aws eks describe-addon --cluster-name {stack.cluster} --addon-name {POD_IDENTITY_AGENT}",
        )
    return ok(name, f"ACTIVE ({addon.get('addonVersion', '?')})")


def _association(stack: StackConfig, eks: Any) -> Check:
    name = "pod identity association"
    role = stack.outputs.get("NotifierRoleArn")
    if not role:
        return fix(name, "the stack is not deployed with CreateNotifierIdentity=true yet", stack.redeploy())
    listed = (
        eks.list_pod_identity_associations(
            clusterName=stack.cluster, namespace=stack.namespace, serviceAccount=NOTIFIER
        ).get("associations")
        or []
    )
    for summary in listed:
        association = eks.describe_pod_identity_association(
            clusterName=stack.cluster, associationId=summary["associationId"]
        )["association"]
        if association.get("roleArn") == role:
            return ok(name, f"{stack.namespace}/{NOTIFIER} -> {role}")
    return fix(name, f"none gives {stack.namespace}/{NOTIFIER} the role {role}", stack.redeploy())


def _bus_and_rule(stack: StackConfig, events: Any) -> Check:
    from botocore.exceptions import ClientError

    name = "event bus"
    bus = stack.outputs.get("EventBusName")
    if not bus:
        return fix(
            name, "the stack is not deployed: it creates the bus and the rule that resumes executions", stack.redeploy()
        )
    try:
        events.describe_event_bus(Name=bus)
    except ClientError as err:
        if error_code(err) != "ResourceNotFoundException":
            raise
        return fix(name, f"no bus {bus}", stack.redeploy())
    resume = f":function:{stack.name}-resume"
    for rule in events.list_rules(EventBusName=bus).get("Rules") or []:
        targets = events.list_targets_by_rule(Rule=rule["Name"], EventBusName=bus).get("Targets") or []
        if any(t["Arn"].endswith(resume) for t in targets):
            if rule.get("State") != "ENABLED":
                enable = f"aws events enable-rule --name {rule['Name']} --event-bus-name {bus} --region {stack.region}"
                return fix(name, f"rule {rule['Name']} is {rule.get('State')}", enable)
            return ok(name, f"{bus}, rule {rule['Name']} -> {stack.name}-resume")
    return fix(name, f"no rule on {bus} invokes {stack.name}-resume", stack.redeploy())


def not_checked(reason: str, *names: str) -> list[Check]:
    return [skip(name, reason) for name in names]
