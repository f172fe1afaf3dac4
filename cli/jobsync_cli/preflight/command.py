"""``jobsync preflight``: the checks in order, printed as they complete; exit 0 when all are ok, 1 when one
needs a fix, 2 when the stack's configuration cannot be read.

    jobsync preflight --stack jobsync [--region R] [--kubeconfig PATH] [--context NAME]
                      [--parameter-overrides "K=V ..."]     (before sam deploy: as sam deploy would send them)
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from jobsync_cli.preflight import aws_side, cluster_side, network
from jobsync_cli.preflight.report import Check, exit_code, fix, skip
from jobsync_cli.preflight.stack import StackConfig, StackError, from_cloudformation, from_files

EXIT_BAD_INPUT = 2


def add_command(commands: Any) -> None:
    parser = commands.add_parser(
        "preflight",
        help="check an account and cluster for a stack: one line per check, ok or the command that fixes it",
        description="Check the AWS account and the cluster for a jobsync stack, before and after sam deploy: one "
        "line per check, ok or the exact command that fixes it. Exit 0 when all are ok, 1 when one needs a fix, "
        "2 when the stack's configuration cannot be read.",
    )
    parser.add_argument("--stack", default=None, help="the stack's name (default: samconfig.toml's, else jobsync)")
    parser.add_argument("--region", default=None, help="its region (default: the AWS CLI's)")
    parser.add_argument(
        "--kubeconfig", default=None, help="the deployer's kubeconfig (default: $KUBECONFIG, ~/.kube/config)"
    )
    parser.add_argument("--context", default=None, help="its context (default: the current one)")
    parser.add_argument("--template", default="template.yaml", help="before sam deploy: the template's defaults")
    parser.add_argument("--config-file", default="samconfig.toml", help="before sam deploy: its parameter_overrides")
    parser.add_argument("--config-env", default="default", help="the samconfig.toml environment")
    parser.add_argument(
        "--parameter-overrides", default="", help='before sam deploy: "Key=Value ..." as sam deploy takes them'
    )
    parser.add_argument("--aws-only", action="store_true", help="skip the cluster-side checks")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        stack = load_stack(args)
    except StackError as err:
        print(f"jobsync preflight: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (BotoCoreError, ClientError) as err:
        print(f"jobsync preflight: cannot read the stack: {' '.join(str(err).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    where = "deployed" if stack.deployed else "not deployed yet: parameters as sam deploy would send them"
    print(f"stack {stack.name} in {stack.region} ({where}), cluster {stack.cluster or '?'}, {stack.mode} mode")
    done = []
    for check in checks(stack, args.kubeconfig, args.context, aws_only=args.aws_only):
        print(check.line(), flush=True)
        done.append(check)
    return exit_code(done)


def load_stack(args: argparse.Namespace) -> StackConfig:
    from jobsync import aws

    samconfig = Path(args.config_file)
    name = args.stack or _samconfig_stack_name(samconfig, args.config_env) or "jobsync"
    region = args.region or aws.boto3().session.Session().region_name
    if not region:
        raise StackError("no region: give --region, or set AWS_REGION")
    deployed = from_cloudformation(aws.client("cloudformation", region_name=region), name, region)
    if deployed is not None:
        if args.parameter_overrides:
            raise StackError(
                f"stack {name} is deployed: its parameters are CloudFormation's, not --parameter-overrides"
            )
        return deployed
    return from_files(name, region, Path(args.template), samconfig, args.config_env, args.parameter_overrides)


def checks(stack: StackConfig, kubeconfig: str | None, context: str | None, aws_only: bool = False) -> Iterator[Check]:
    """Every check for ``stack``, in order: the AWS side, then the cluster side from the kubeconfig."""
    from jobsync import aws

    eks = aws.client("eks", region_name=stack.region)
    ec2 = aws.client("ec2", region_name=stack.region)
    first, cluster = _guarded("cluster", lambda: aws_side.cluster(stack, eks))
    yield first
    if cluster is not None:
        yield aws_side.authentication(stack, cluster)
        entry, _ = _guarded("access entry", lambda: (aws_side.access_entry(stack, cluster, eks), None))
        if entry is not None:
            yield entry
        yield _guarded("endpoint access", lambda: (network.endpoint_access(stack, cluster, ec2), None))[0]
        if stack.subnets:
            if (cluster.get("resourcesVpcConfig") or {}).get("endpointPrivateAccess"):
                yield _guarded(
                    "cluster security group", lambda: (network.cluster_security_group(stack, cluster, ec2), None)
                )[0]
            routes, _ = _guarded("route to AWS APIs", lambda: (network.routes_to_aws(stack, cluster, ec2), None))
            yield from routes if isinstance(routes, list) else [routes]
        if stack.mode == "callback":
            events = aws.client("events", region_name=stack.region)
            found, _ = _guarded("callback mode", lambda: (aws_side.callback(stack, eks, events), None))
            yield from found if isinstance(found, list) else [found]
    if aws_only:
        return
    yield from _cluster_side(stack, cluster, kubeconfig, context)


def _cluster_side(
    stack: StackConfig, cluster: dict[str, Any] | None, kubeconfig: str | None, context: str | None
) -> Iterator[Check]:
    from jobsync.cluster.connection import get_api_client
    from jobsync.settings import ClusterSettings

    update = f"aws eks update-kubeconfig --name {stack.cluster} --region {stack.region}"
    path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    try:
        env = {
            "JOBSYNC_CLUSTER_MODE": "kubeconfig",
            "KUBECONFIG": path,
            **({"JOBSYNC_KUBE_CONTEXT": context} if context else {}),
        }
        api = get_api_client(ClusterSettings.from_env(env))
    except Exception as err:  # a missing file, an unknown context, a broken kubeconfig: one line, no traceback
        yield fix("kubeconfig", f"{path}: {_one_line(err)}", update)
        return
    reached = _guarded("kubeconfig", lambda: (cluster_side.reach(api, stack, (cluster or {}).get("endpoint")), None))[0]
    yield reached
    if reached.status != "ok":
        rest = ("namespace", "CRDs", "RBAC")
        yield from (skip(name, "needs the stack's cluster in the kubeconfig") for name in rest)
        return
    yield _guarded("namespace", lambda: (cluster_side.namespace(api, stack), None))[0]
    crds, _ = _guarded("CRDs", lambda: (cluster_side.crds(api, stack), None))
    yield from crds if isinstance(crds, list) else [crds]
    yield _guarded("RBAC", lambda: (cluster_side.functions_rbac(api, stack), None))[0]
    mode = aws_side.authentication_mode(cluster) if cluster else ""
    if not stack.creates_access_entry and mode in ("CONFIG_MAP", "API_AND_CONFIG_MAP"):
        yield _guarded("aws-auth", lambda: (cluster_side.aws_auth(api, stack), None))[0]
    if stack.mode == "callback":
        yield _guarded("notifier RBAC", lambda: (cluster_side.notifier_rbac(api, stack), None))[0]
        pod_identity = stack.get("CreateNotifierIdentity") == "true"
        found, _ = _guarded("notifier", lambda: (cluster_side.notifier(api, stack, pod_identity), None))
        yield from found if isinstance(found, list) else [found]


def _guarded(name: str, produce: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
    """``produce()``, or one line for an AWS or Kubernetes error it raised (denied, throttled, unreachable)."""
    from botocore.exceptions import BotoCoreError, ClientError
    from kubernetes.client.exceptions import ApiException

    try:
        return produce()
    except ClientError as err:
        code = aws_side.error_code(err)
        operation = getattr(err, "operation_name", "the call")
        if code in {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"}:
            return fix(name, f"{operation} is denied to the deployer", f"grant the deployer's role {operation}"), None
        return skip(name, f"{operation} failed: {code}"), None
    except BotoCoreError as err:
        return skip(name, _one_line(err)), None
    except ApiException as err:
        if err.status == 403:
            return fix(
                name, "the kubeconfig's user may not ask", "use a cluster admin's kubeconfig (--kubeconfig)"
            ), None
        return skip(name, f"the API server answered {err.status} {err.reason}"), None
    except Exception as err:  # the API server unreachable, a timeout: say so, go on with the next check
        return skip(name, _one_line(err)), None


def _samconfig_stack_name(path: Path, env: str) -> str | None:
    import tomllib

    try:
        config = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return None
    name = ((config.get(env) or {}).get("global") or {}).get("parameters", {}).get("stack_name")
    return str(name) if name else None


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__
