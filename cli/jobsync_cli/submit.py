"""``jobsync submit INPUT [--dry-run]``: start a run, or show the job Submit would create, creating nothing.

With ``--dry-run`` the execution input goes through Submit's own steps
(``jobsync.run.submit.plan``: the namespace, the deadline, the template
rendered with its parameters, the kind allowed, the Pod Security checks, the
name and labels) under the deployment's settings (its stack's parameters, or
``--namespace``/``--kinds``/...), and the manifest is printed as YAML, ready
for ``kubectl apply --dry-run=server -f -``: a comment block above it lists
the checks it passed and the grants the functions need for it (the chart's
Roles grant them, ``jobsync preflight`` checks them: ``jobsync_cli.preflight.grants``). The job's name ends
in a hash of the execution's ARN: with ``--name`` and the stack (or the state
machine) it is the very name a run of that name gets; otherwise an example.
Without ``--dry-run`` the run is started and its ARN printed (``run --no-follow``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import yaml

from jobsync.errors import JobsyncError
from jobsync_cli.aws import FollowError, execution_arn, is_run_jobs_input, read_input, stack_outputs
from jobsync_cli.follow import EXIT_BAD_INPUT, EXIT_SUCCEEDED

# The stack parameters Submit's settings come from (template.yaml's Globals), by the variable each sets.
STACK_SETTINGS = {
    "Namespace": "JOBSYNC_NAMESPACE",
    "AllowedKinds": "JOBSYNC_ALLOWED_KINDS",
    "DefaultTimeoutSeconds": "JOBSYNC_DEFAULT_TIMEOUT_SECONDS",
    "MaxTimeoutSeconds": "JOBSYNC_MAX_TIMEOUT_SECONDS",
    "TemplateBucket": "JOBSYNC_TEMPLATE_BUCKET",
    "TemplatePrefix": "JOBSYNC_TEMPLATE_PREFIX",
    "AllowPrivilegedPods": "JOBSYNC_ALLOW_PRIVILEGED_PODS",
    "CompletionMode": "JOBSYNC_COMPLETION_MODE",  # the grants: watch mode also watches the job
}
EXAMPLE_MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:jobsync-run-job"


def deployment(args: argparse.Namespace) -> Any:
    """The settings Submit would run with: the stack's parameters (--stack), else JOBSYNC_*; flags win."""
    from jobsync.settings import Settings

    env = dict(os.environ)
    if args.stack:
        parameters = stack_outputs(args.stack, args.region, part="Parameters")
        env.update({STACK_SETTINGS[k]: v for k, v in parameters.items() if k in STACK_SETTINGS})
    flags = {
        "JOBSYNC_NAMESPACE": args.namespace,
        "JOBSYNC_ALLOWED_KINDS": args.kinds,
        "JOBSYNC_ALLOW_PRIVILEGED_PODS": "true" if args.allow_privileged_pods else None,
    }
    env.update({key: value for key, value in flags.items() if value})
    try:
        return Settings.from_env(env)
    except ValueError as err:
        raise FollowError(str(err)) from None


def the_execution(args: argparse.Namespace) -> tuple[str, bool]:
    """The ARN the run would have, and whether it is the real one (a state machine and --name are known)."""
    from jobsync_cli.aws import RUN_JOB_OUTPUT

    machine = args.state_machine_arn
    if not machine and args.stack:
        machine = stack_outputs(args.stack, args.region).get(RUN_JOB_OUTPUT)
    arn = execution_arn(machine or EXAMPLE_MACHINE, args.name or "dry-run")
    return str(arn), bool(machine and args.name)


def render(args: argparse.Namespace) -> str:
    """The YAML the dry run prints: the checks in comments, then the manifest."""
    from jobsync.run.inputs import SubmitRequest, parse
    from jobsync.run.submit import plan

    document = json.loads(read_input(args.input))
    if is_run_jobs_input(document):
        raise FollowError("a RunJobs input (jobs): dry-run one job's input at a time")
    settings = deployment(args)
    arn, exact = the_execution(args)
    request = parse(SubmitRequest, {**document, "execution": arn})
    planned = plan(request, settings, lambda uri: _fetch(uri, args.region))
    size = len(json.dumps(planned.manifest))
    allowed = ", ".join(f"{s.api_version}/{s.kind}" for s in settings.allowed_kinds)
    name_note = "this execution's name" if exact else "an example: a run's name ends in a hash of its own ARN"
    checks = [
        f"kind {planned.spec.api_version}/{planned.spec.kind} is allowed (allowed: {allowed})",
        f"namespace {settings.namespace} is the deployment's",
        f"timeoutSeconds {planned.timeout} is at most MaxTimeoutSeconds {settings.max_timeout_seconds}",
        f"the manifest is {size:,} bytes, at most {settings.max_manifest_bytes:,}",
        "no ownerReferences, no finalizers: jobsync owns the job's lifecycle",
        "Pod Security Baseline: nothing privileged"
        if not settings.allow_privileged_pods
        else "Pod Security: not checked (AllowPrivilegedPods is true)",
    ]
    if planned.template:
        names = ", ".join(sorted(request.parameters)) or "none"
        checks.append(
            f"template {planned.template} rendered (parameters: {names}), under the allowed bucket and prefix"
        )
    from jobsync_cli.preflight import grants

    needed = grants.functions([planned.spec], settings.completion_mode)
    lines = [
        "# jobsync submit --dry-run: the job Submit would create; nothing was created.",
        f"# execution: {arn}",
        f"#   the job's name ({planned.obj['metadata']['name']}) is {name_note}",
        "# checks passed:",
        *(f"#   {check}" for check in checks),
        "# the API server validates the rest against the kind's schema when Submit creates it (Strict):",
        "#   jobsync submit ... --dry-run | kubectl apply --dry-run=server -f -",
        f"# the RBAC the functions need in {settings.namespace} (the chart grants it; jobsync preflight checks it):",
        *(f"#   {grant}: {grant.used_by}" for grant in needed),
    ]
    return "\n".join(lines) + "\n" + yaml.safe_dump(planned.obj, sort_keys=False)


def _fetch(uri: str, region: str | None) -> str:
    from jobsync.aws.s3 import fetch_template
    from jobsync_cli.aws import aws_error, client

    try:
        return fetch_template(client("s3", region), uri)
    except JobsyncError:
        raise
    except Exception as err:
        raise aws_error(err, f"cannot read {uri}") from None


def cmd_submit(args: argparse.Namespace) -> int:
    if not args.dry_run:
        if not (args.stack or args.state_machine_arn):
            print("jobsync submit: give --stack NAME or --state-machine-arn ARN (or --dry-run)", file=sys.stderr)
            return EXIT_BAD_INPUT
        from jobsync_cli.follow import cmd_run

        args.no_follow, args.poll_interval = True, 5.0
        return cmd_run(args)
    try:
        text = render(args)
    except FollowError as err:
        print(f"jobsync submit: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except JobsyncError as err:
        print(f"jobsync submit: {' '.join(str(err).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(text, end="")
    return EXIT_SUCCEEDED


def add_command(commands: Any) -> None:
    from jobsync_cli.follow import _HelpFormatter

    parser = commands.add_parser(
        "submit",
        help="start a run and print its ARN; --dry-run: the manifest Submit would create, creating nothing",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("input", metavar="INPUT.json", help="the execution input, a JSON object (- for stdin)")
    parser.add_argument("--dry-run", action="store_true", help="print the job Submit would create; create nothing")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--stack", metavar="NAME", help="the jobsync stack: its state machine, and its settings")
    where.add_argument("--state-machine-arn", metavar="ARN", help="the state machine, instead of --stack")
    parser.add_argument("--name", default=None, help="the execution's name (with it, --dry-run gives the job's name)")
    parser.add_argument("--namespace", default=None, help="(--dry-run) the deployment's Namespace")
    parser.add_argument("--kinds", default=None, help="(--dry-run) the deployment's AllowedKinds")
    parser.add_argument(
        "--allow-privileged-pods", action="store_true", help="(--dry-run) the deployment allows privileged pods"
    )
    parser.add_argument("--region", default=None, help="the AWS region")
    parser.set_defaults(func=cmd_submit)
