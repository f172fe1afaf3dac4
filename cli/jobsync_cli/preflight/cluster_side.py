"""The cluster side, from the deployer's kubeconfig: the namespace, the CRDs, the RBAC as the functions and
the notifier will hold it (a SubjectAccessReview per grant the code needs), aws-auth for CONFIG_MAP
clusters, and the notifier running in callback mode."""

from __future__ import annotations

import shlex
from typing import Any

import yaml

from jobsync.settings import parse_allowed_kinds
from jobsync_cli.preflight import grants
from jobsync_cli.preflight.report import Check, fix, ok
from jobsync_cli.preflight.stack import StackConfig

NOTIFIER = "jobsync-notifier"
AWS_AUTH_USERNAME = "jobsync-lambda"
#: How to serve each API group jobsync knows (batch/v1 is always served).
KUSTOMIZE = 'kubectl apply --server-side -k "{}"'
OPERATORS = {
    "kubeflow.org": KUSTOMIZE.format(
        "github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.9.0"
    ),
    "trainer.kubeflow.org": KUSTOMIZE.format(
        "https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=v2.1.0"
    ),
    "sagemaker.services.k8s.aws": (
        "helm install --create-namespace -n ack-system ack-sagemaker-controller "
        "oci://public.ecr.aws/aws-controllers-k8s/sagemaker-chart --set aws.region={region}"
    ),
    "sagemaker.aws.amazon.com": (
        "kubectl apply -f https://raw.githubusercontent.com/aws/amazon-sagemaker-operator-for-k8s/master/"
        "release/rolebased/installer.yaml"
    ),
}


def chart_command(stack: StackConfig) -> str:
    """The ``helm upgrade --install`` of charts/jobsync for this stack (docs/deployment.md)."""
    sets = [
        f"--set-string allowedKinds={shlex.quote(stack.kinds.replace(',', chr(92) + ','))}",
        f"--set completionMode={stack.mode}",
        f"--set-string kubernetesGroup={shlex.quote(stack.group)}",
    ]
    if stack.mode == "callback":
        bus = stack.outputs.get("EventBusName") or "<EventBusName>"
        repository = stack.outputs.get("NotifierRepositoryUri") or "<your notifier image repository>"
        sets += [
            f"--set eventBusName={bus}",
            f"--set region={stack.region}",
            f"--set notifier.image.repository={repository}",
        ]
    return f"helm upgrade --install jobsync charts/jobsync -n {stack.namespace} " + " ".join(sets)


def reach(api: Any, stack: StackConfig, endpoint: str | None) -> Check:
    """The kubeconfig reaches an API server, and it is the stack's cluster's."""
    from kubernetes import client

    name = "kubeconfig"
    update = f"aws eks update-kubeconfig --name {stack.cluster} --region {stack.region}"
    server = api.configuration.host
    if endpoint and server.rstrip("/") != endpoint.rstrip("/"):
        return fix(name, f"it points at {server}, not {stack.cluster}'s endpoint {endpoint}", update)
    version = client.VersionApi(api).get_code()
    return ok(name, f"{server} answers, Kubernetes {version.git_version}")


def namespace(api: Any, stack: StackConfig) -> Check:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        client.CoreV1Api(api).read_namespace(stack.namespace)
    except ApiException as err:
        if err.status != 404:
            raise
        return fix(f"namespace {stack.namespace}", "does not exist", f"kubectl create namespace {stack.namespace}")
    return ok(f"namespace {stack.namespace}", "exists")


def crds(api: Any, stack: StackConfig) -> list[Check]:
    """One check per allowed kind: the API server serves its resource."""
    checks = []
    for spec in parse_allowed_kinds(stack.kinds):
        if not spec.plural:
            continue
        name = f"{spec.kind} ({spec.plural}.{spec.group or 'core'}/{spec.version})"
        path = f"/apis/{spec.api_version}" if spec.group else f"/api/{spec.version}"
        served = {r["name"] for r in _get(api, path, missing={"resources": []}).get("resources") or []}
        if spec.plural in served:
            checks.append(ok(name, "served"))
        else:
            install = OPERATORS.get(spec.group, f"install the controller that serves {spec.group}").format(
                region=stack.region
            )
            checks.append(fix(name, "not served: its operator or CRD is missing", install))
    return checks


def functions_rbac(api: Any, stack: StackConfig) -> Check:
    """Every grant the functions need, as their group holds it (SubjectAccessReview)."""
    needed = grants.functions(parse_allowed_kinds(stack.kinds), stack.mode)
    denied = [g for g in needed if not _allowed(api, stack, g, user=AWS_AUTH_USERNAME, groups=[stack.group])]
    name = f"RBAC of group {stack.group}"
    if denied:
        return fix(name, f"may not {', '.join(map(str, denied))}", chart_command(stack))
    return ok(name, f"all {len(needed)} grants the functions need ({stack.mode} mode)")


def notifier_rbac(api: Any, stack: StackConfig) -> Check:
    needed = grants.notifier(parse_allowed_kinds(stack.kinds))
    user = f"system:serviceaccount:{stack.namespace}:{NOTIFIER}"
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{stack.namespace}"]
    denied = [g for g in needed if not _allowed(api, stack, g, user=user, groups=groups)]
    name = f"RBAC of {NOTIFIER}"
    if denied:
        return fix(name, f"may not {', '.join(map(str, denied))}", chart_command(stack))
    return ok(name, f"all {len(needed)} grants the notifier needs")


def aws_auth(api: Any, stack: StackConfig) -> Check:
    """The aws-auth entry that maps the functions' role to KubernetesGroup (CONFIG_MAP clusters)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    role = stack.role_arn or "<ClusterAccessRoleArn>"
    entry = {"rolearn": role, "username": AWS_AUTH_USERNAME, "groups": [stack.group]}
    rendered = yaml.safe_dump([entry], default_flow_style=True, sort_keys=False, width=1000).strip()
    add = (
        f"eksctl create iamidentitymapping --cluster {stack.cluster} --region {stack.region} --arn {role} "
        f"--group {stack.group} --username {AWS_AUTH_USERNAME}  # or add to aws-auth's mapRoles: {rendered}"
    )
    name = "aws-auth"
    if not stack.role_arn:
        return fix(name, "the stack is not deployed: its role is not known yet", stack.redeploy() + "; then " + add)
    try:
        config_map = client.CoreV1Api(api).read_namespaced_config_map("aws-auth", "kube-system")
    except ApiException as err:
        if err.status != 404:
            raise
        return fix(name, "kube-system/aws-auth does not exist", add)
    try:
        mapped = yaml.safe_load((config_map.data or {}).get("mapRoles") or "[]") or []
    except yaml.YAMLError:
        return fix(name, "its mapRoles is not YAML", add)
    for item in mapped if isinstance(mapped, list) else []:
        if isinstance(item, dict) and item.get("rolearn") == role:
            if stack.group in (item.get("groups") or []):
                return ok(name, f"{role} -> group {stack.group}")
            return fix(name, f"{role} is mapped to {item.get('groups')}, not {stack.group}", add)
    return fix(name, f"mapRoles has no entry for {role}", add)


def notifier(api: Any, stack: StackConfig, pod_identity: bool) -> list[Check]:
    """Callback mode: the notifier's Deployment is available, publishes to the stack's bus, and has an AWS identity."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    name = "notifier"
    try:
        deployment = client.AppsV1Api(api).read_namespaced_deployment(NOTIFIER, stack.namespace)
    except ApiException as err:
        if err.status != 404:
            raise
        return [fix(name, f"no Deployment {stack.namespace}/{NOTIFIER}", chart_command(stack))]
    available = (deployment.status.available_replicas or 0) if deployment.status else 0
    env = {e.name: e.value for c in deployment.spec.template.spec.containers for e in c.env or []}
    bus = stack.outputs.get("EventBusName")
    checks = []
    if bus and env.get("JOBSYNC_EVENT_BUS_NAME") != bus:
        checks.append(
            fix(
                name, f"publishes to {env.get('JOBSYNC_EVENT_BUS_NAME')!r}, not the stack's {bus}", chart_command(stack)
            )
        )
    elif not available:
        where = f"-n {stack.namespace}"
        logs = f"kubectl {where} describe deployment {NOTIFIER}; kubectl {where} logs deployment/{NOTIFIER}"
        checks.append(fix(name, "no replica is available (an image the nodes cannot pull or run?)", logs))
    else:
        checks.append(ok(name, f"{available} replica available, publishing to {env.get('JOBSYNC_EVENT_BUS_NAME')}"))
    if not pod_identity:
        account = client.CoreV1Api(api).read_namespaced_service_account(NOTIFIER, stack.namespace)
        arn = ((account.metadata.annotations or {}) if account.metadata else {}).get("eks.amazonaws.com/role-arn")
        if arn:
            checks.append(ok("notifier identity", f"IRSA role {arn}"))
        else:
            checks.append(
                fix(
                    "notifier identity",
                    "no Pod Identity (CreateNotifierIdentity=false) and no IRSA annotation",
                    stack.overrides(CreateNotifierIdentity="true"),
                )
            )
    return checks


def _allowed(api: Any, stack: StackConfig, grant: grants.Grant, user: str, groups: list[str]) -> bool:
    from kubernetes import client

    resource, _, sub = grant.resource.partition("/")
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=user,
            groups=groups,
            resource_attributes=client.V1ResourceAttributes(
                namespace=stack.namespace,
                verb=grant.verb,
                group=grant.group,
                resource=resource,
                subresource=sub or None,
            ),
        )
    )
    answer = client.AuthorizationV1Api(api).create_subject_access_review(review)
    return bool(answer.status and answer.status.allowed)


def _get(api: Any, path: str, missing: dict[str, Any]) -> dict[str, Any]:
    """A raw GET; ``missing`` for a 404 (an API group nobody serves)."""
    from kubernetes.client.exceptions import ApiException

    try:
        data, _, _ = api.call_api(
            path, "GET", response_type="object", auth_settings=["BearerToken"], _return_http_data_only=False
        )
    except ApiException as err:
        if err.status == 404:
            return missing
        raise
    return data if isinstance(data, dict) else missing
