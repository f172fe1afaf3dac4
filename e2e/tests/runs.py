"""Running the real state machine against the real control plane, and what a scenario test asserts on.

``jobsync_run`` is ``harness.local.LocalJobsync`` in kubeconfig mode: moto's interpreter runs
statemachine/run_job.asl.json on the wall clock, its Lambda tasks call functions/*/app.py in this process, and
those authenticate to the e2e API server as ``jobsync-lambda`` (group ``jobsync``), whose only permissions are
the Role the chart (charts/jobsync) installs for the deployment, with the real helm (``install_chart``). The
waits are the template's bounds lowered through the environment (``FAST``), not the code changed.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from e2e import controllers, helm
from e2e.controlplane import (
    EXIT_CODE_ANNOTATION,
    JOB_NAMESPACE,
    JOBSYNC_GROUP,
    OUTCOME_ANNOTATION,
    RUN_DURATION_ANNOTATION,
    ControlPlane,
)
from e2e.tests.jobs import REPO, wait_for
from harness.local import EVENT_BUS, LocalJobsync, RunResult
from jobsync.evaluation.kinds import KindSpec
from jobsync.run.manifests import EXECUTION_LABEL, execution_label, job_name
from jobsync.settings import parse_allowed_kinds
from jobsync_cli.preflight import grants
from lambda_runtime import relay
from lambda_runtime.daemon import Daemon
from lambda_runtime.remote import containerised

#: The template's wait bounds and graces, lowered so that a scenario takes seconds on the wall clock.
FAST: dict[str, str] = {
    "JOBSYNC_MIN_WAIT_SECONDS": "1",
    "JOBSYNC_PENDING_MAX_WAIT_SECONDS": "2",
    "JOBSYNC_RUNNING_MAX_WAIT_SECONDS": "3",
    "JOBSYNC_DIAGNOSE_AFTER_SECONDS": "1",
    "JOBSYNC_STUCK_GRACE_SECONDS": "4",
    # Long enough for the real operator on a loaded 2-core machine (it reconciled a new job 5 s late once).
    "JOBSYNC_OPERATOR_TIMEOUT_SECONDS": "20",
    "JOBSYNC_NOT_FOUND_GRACE_SECONDS": "2",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_METRICS_DISABLED": "true",
}

RUN_INPUT = REPO / "events" / "run-job-input.json"
NOTIFIER = "jobsync-notifier"
SMALL = {"requests": {"cpu": "100m", "memory": "128Mi"}}


def pod_annotations(outcome: str = "succeed", run_duration: str = "1s", exit_code: int | None = None) -> dict[str, str]:
    """What kwok makes of a pod (see e2e/kwok/stages.yaml)."""
    annotations = {OUTCOME_ANNOTATION: outcome, RUN_DURATION_ANNOTATION: run_duration}
    if exit_code is not None:
        annotations[EXIT_CODE_ANNOTATION] = str(exit_code)
    return annotations


def with_pods(
    job: dict[str, Any],
    annotations: Mapping[str, str],
    restart_policy: str | None = None,
    replicas: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """``job`` with kwok's annotations, small requests and (optionally) a restart policy on every pod template.

    ``replicas`` gives one replica type (``Worker``) annotations of its own.
    """
    job = copy.deepcopy(job)
    spec = job["spec"]
    templates: list[tuple[dict[str, Any], Mapping[str, str]]] = []
    for key, specs in spec.items():
        if not key.endswith("ReplicaSpecs"):
            continue
        for replica_type, replica in specs.items():
            if restart_policy:
                replica["restartPolicy"] = restart_policy
            templates.append((replica["template"], (replicas or {}).get(replica_type, annotations)))
    if not templates and "template" in spec:  # batch/v1 Job
        templates.append((spec["template"], annotations))
    for template, chosen in templates:
        template.setdefault("metadata", {}).setdefault("annotations", {}).update(chosen)
        for container in template["spec"].get("containers", []):
            container["resources"] = copy.deepcopy(SMALL)
            container.pop("imagePullPolicy", None)
    return job


def run_input(job: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """events/run-job-input.json with its job (or ``job``) and its fields replaced by ``fields``."""
    execution_input = json.loads(RUN_INPUT.read_text())
    if job is not None:
        execution_input["job"] = job
    # A small deadline: the policy spreads the polls of a long one over its budget (21600 s / 2400 polls = 9 s).
    execution_input["timeoutSeconds"] = 120
    execution_input.update(fields)
    return execution_input


def pytorch_input(
    annotations: Mapping[str, str] | None = None,
    restart_policy: str | None = "Never",
    worker: Mapping[str, str] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """The demo's PyTorchJob (Master + Worker), its pods doing what ``annotations`` (``worker``) say."""
    job = json.loads(RUN_INPUT.read_text())["job"]
    replicas = {"Worker": worker} if worker else None
    return run_input(with_pods(job, annotations or pod_annotations(), restart_policy, replicas), **fields)


def need_controllers() -> None:
    """Skip (fail, under JOBSYNC_E2E_REQUIRED) when Kueue, JobSet or Trainer's binaries or manifests are missing."""
    absent = controllers.missing()
    if absent and os.environ.get("JOBSYNC_E2E_REQUIRED"):
        pytest.fail(f"JOBSYNC_E2E_REQUIRED is set but these are missing: {', '.join(absent)}")
    if absent:
        pytest.skip(f"missing {', '.join(absent)}: run make e2e-build")


# ---------------------------------------------------------------- the deployment's cluster side: the chart

#: The notifier image the chart's Deployment names: kwok plays its pod, the notifier itself runs as a process.
NOTIFIER_IMAGE = "registry.e2e.invalid/jobsync-notifier"


def chart_values(kinds: str = "PyTorchJob", mode: str = "poll") -> dict[str, Any]:
    """The chart's values for a stack with these AllowedKinds and CompletionMode, as docs/deployment.md sets them."""
    values: dict[str, Any] = {"allowedKinds": kinds, "completionMode": mode, "kubernetesGroup": JOBSYNC_GROUP}
    if mode == "callback":
        # kwok plays the Deployment's pod: running until it is deleted, as a notifier runs.
        notifier = {"image": {"repository": NOTIFIER_IMAGE}, "podAnnotations": {OUTCOME_ANNOTATION: "run-forever"}}
        values |= {"eventBusName": EVENT_BUS, "region": "us-east-1", "notifier": notifier}
    return values


def install_chart(
    cp: ControlPlane, kinds: str = "PyTorchJob", mode: str = "poll", namespace: str = JOB_NAMESPACE
) -> Any:
    """``helm upgrade --install jobsync charts/jobsync`` as the admin, as a platform team installs it; returns
    the functions' Role as the API server now holds it, once the authorizer counts every rule of it."""
    helm.install(cp.write_kubeconfig("admin"), chart_values(kinds, mode), namespace)
    role = installed(cp, "roles", "jobsync", namespace)
    for verb, group, resource in sorted(grants.of_role(role)):
        # RBAC reaches the authorizer through an informer.
        wait_for(f"jobsync may {verb} {resource}", functools.partial(can, cp, verb, group, resource, namespace), 10)
    return role


def installed(cp: ControlPlane, plural: str, name: str, namespace: str = JOB_NAMESPACE) -> Any:
    """An object the chart installed, as the API server holds it (rbac roles, apps deployments, ...)."""
    group = {"roles": "rbac.authorization.k8s.io/v1", "rolebindings": "rbac.authorization.k8s.io/v1"}.get(plural)
    base = f"/apis/{group}" if group else "/apis/apps/v1" if plural == "deployments" else "/api/v1"
    resp = cp.request("GET", f"{base}/namespaces/{namespace}/{plural}/{name}")
    assert resp.status == 200, (plural, name, resp.body)
    return resp.body


def apply_role(
    cp: ControlPlane,
    kinds: str = "PyTorchJob",
    watch: bool = False,
    without: tuple[str, str] | None = None,
    namespace: str = JOB_NAMESPACE,
) -> dict[str, Any]:
    """The chart installed for ``kinds`` in poll (or watch) mode; waits until its Role counts.

    ``without=(resource, verb)`` then takes one verb out of the installed Role, as someone editing it by hand
    would (the RBAC-denial test); the next install puts it back.
    """
    role = dict(install_chart(cp, kinds, "watch" if watch else "poll", namespace))
    if not without:
        return role
    denied: list[tuple[str, str, str]] = []
    rules = []
    for rule in role["rules"]:
        if without[0] in rule["resources"] and without[1] in rule["verbs"]:
            rule = {**rule, "verbs": [v for v in rule["verbs"] if v != without[1]]}
            denied.append((without[1], rule["apiGroups"][0], without[0]))
        rules.append(rule)
    edited = {"apiVersion": role["apiVersion"], "kind": "Role", "metadata": {"name": "jobsync", "namespace": namespace}}
    cp.apply([{**edited, "rules": rules}])
    for verb, group, resource in denied:
        wait_for(f"jobsync may not {verb} {resource}", lambda a=(verb, group, resource, namespace): not can(cp, *a), 10)
    return {**role, "rules": rules}


def can(cp: ControlPlane, verb: str, group: str, resource: str, namespace: str = JOB_NAMESPACE) -> bool:
    """What the API server's authorizer answers for jobsync-lambda (a SelfSubjectAccessReview as that user)."""
    sub = ""
    if "/" in resource:
        resource, sub = resource.split("/", 1)
    attributes = {"namespace": namespace, "verb": verb, "group": group, "resource": resource, "subresource": sub}
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    resp = cp.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review, user="jobsync")
    return bool(resp.status == 201 and resp.body["status"].get("allowed"))


# ---------------------------------------------------------------- running


@contextlib.contextmanager
def jobsync_run(
    cp: ControlPlane,
    env: Mapping[str, str] | None = None,
    kinds: str = "PyTorchJob",
    notifier: bool = False,
    notifier_env: Mapping[str, str] | None = None,
    template_dirs: tuple[Path, ...] = (),
    containers: Daemon | None = None,
) -> Iterator[LocalJobsync]:
    """LocalJobsync against the e2e API server as jobsync-lambda, with the fast bounds.

    ``template_dirs``: folders whose *.yaml the template bucket serves too (``jobTemplate`` inputs).

    With ``containers`` (a Docker daemon with the Lambda image, and ``sam build``'s output) the state machine's
    tasks invoke the functions of the build through ``sam local start-lambda`` instead of importing them: the
    containers reach the API server as jobsync-lambda through ``KubeProxy`` (url mode) and moto through a relay,
    on the bridge's gateway (lambda_runtime/). SAM CLI's log is ``logs/sam-local.log`` in the control plane's folder.

    With ``notifier`` (callback mode) the notifier runs as a process, as its service account
    (``notifier_kubeconfig``), logging to ``logs/notifier.log`` in the control plane's folder.
    """
    kubeconfig = str(cp.write_kubeconfig("jobsync"))
    full_env = {**FAST, "JOBSYNC_NAMESPACE": JOB_NAMESPACE, "JOBSYNC_ALLOWED_KINDS": kinds, **(env or {})}
    identity, deployed = notifier_kubeconfig(cp, kinds) if notifier else (None, {})
    # The notifier process gets the installed Deployment's settings; only where the cluster is, and its
    # health port, are the run's own.
    from_chart = {k: v for k, v in deployed.items() if k not in {"JOBSYNC_CLUSTER_MODE", "JOBSYNC_HEALTH_PORT"}}
    with LocalJobsync(
        env=full_env,
        kubeconfig=kubeconfig,
        # In containers the notifier starts once they serve: its first events already invoke Resume.
        notifier=notifier and containers is None,
        notifier_kubeconfig=str(identity) if identity else None,
        notifier_log=cp.logs_dir / "notifier.log",
        notifier_env={**from_chart, **(notifier_env or {})},
        template_dirs=template_dirs,
    ) as local:
        if containers is None:
            yield local
            return
        gateway = relay.gateway(containers)
        proxy = relay.KubeProxy(gateway, cp.server, str(cp.ca_file), cp.jobsync_token)
        try:
            with containerised(local, containers, gateway, proxy.url, log=cp.logs_dir / "sam-local.log"):
                if notifier and local.env.get("JOBSYNC_COMPLETION_MODE") == "callback":
                    local.start_notifier()
                yield local
        finally:
            proxy.close()


def notifier_kubeconfig(cp: ControlPlane, kinds: str = "PyTorchJob") -> tuple[Path, dict[str, str]]:
    """The chart installed in callback mode; a kubeconfig for its notifier's ServiceAccount, and the environment
    its Deployment gives the notifier (as the API server holds it).

    What the Deployment's pod would have: a token of ``jobsync-notifier`` (TokenRequest, as the kubelet asks
    for a projected token), allowed what the chart's notifier Role allows and nothing else. Waits until the
    authorizer counts that Role.
    """
    install_chart(cp, kinds, "callback")
    account = f"/api/v1/namespaces/{JOB_NAMESPACE}/serviceaccounts/{NOTIFIER}/token"
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    resp = cp.request("POST", account, request)
    assert resp.status == 201, resp.body
    user = f"system:serviceaccount:{JOB_NAMESPACE}:{NOTIFIER}"
    for spec in parse_allowed_kinds(kinds):
        for verb in ("list", "watch"):
            wait_for(f"the notifier may {verb} {spec.plural}", functools.partial(allowed, cp, user, verb, spec), 10)
    path = cp.write_kubeconfig("jobsync", path=cp.workdir / "notifier.kubeconfig")
    config = yaml.safe_load(path.read_text())
    config["users"] = [{"name": NOTIFIER, "user": {"token": resp.body["status"]["token"]}}]
    config["contexts"][0]["context"]["user"] = NOTIFIER
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    deployment = installed(cp, "deployments", NOTIFIER)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item["value"] for item in container["env"]}
    return path, env


def allowed(cp: ControlPlane, user: str, verb: str, spec: KindSpec) -> bool:
    """What the API server's authorizer answers for ``user`` (a SubjectAccessReview, asked as the admin)."""
    attributes = {"namespace": JOB_NAMESPACE, "verb": verb, "group": spec.group, "resource": spec.plural}
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": ["system:serviceaccounts"], "resourceAttributes": attributes},
    }
    resp = cp.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool(resp.status == 201 and resp.body["status"].get("allowed"))


def execution_arn(local: LocalJobsync, name: str) -> str:
    return local._state_machine_arn.replace(":stateMachine:", ":execution:") + ":" + name


# The manifest name of the demo's job: submit names the job after it (manifests.job_name).
DEMO_JOB = json.loads(RUN_INPUT.read_text())["job"]["metadata"]["name"]


def job_of(local: LocalJobsync, name: str, manifest_name: str = DEMO_JOB) -> str:
    """The name of the job the execution ``name`` creates from a manifest named ``manifest_name``."""
    return job_name(execution_arn(local, name), manifest_name)


def run(local: LocalJobsync, execution_input: dict[str, Any], name: str, timeout_s: float = 120) -> RunResult:
    began = time.monotonic()
    result = local.run(execution_input, name=name, timeout_s=timeout_s)
    result.output = result.output if result.output is not None else {}
    print(f"{name}: {result.status} {result.error} in {time.monotonic() - began:.1f}s, {len(result.polls)} polls")
    return result


# ---------------------------------------------------------------- what is left in the cluster


def custom_path(plural: str, name: str = "", group: str = "kubeflow.org", version: str = "v1") -> str:
    base = f"/apis/{group}/{version}/namespaces/{JOB_NAMESPACE}/{plural}"
    return f"{base}/{name}" if name else base


def get_job(cp: ControlPlane, plural: str, name: str, group: str = "kubeflow.org", version: str = "v1") -> Any:
    """The job as the admin reads it, or None when the API server has no such object."""
    resp = cp.request("GET", custom_path(plural, name, group, version))
    if resp.status == 404:
        return None
    assert resp.status == 200, resp.body
    return resp.body


def pods_of(admin_api: client.ApiClient, execution: str) -> list[Any]:
    """The pods whose labels or owner name the job (the operator labels by job name; batch by job-name)."""
    core = client.CoreV1Api(admin_api)
    pods = core.list_namespaced_pod(JOB_NAMESPACE).items
    return [p for p in pods if any(ref.name == execution for ref in p.metadata.owner_references or [])]


def wait_gone(
    cp: ControlPlane,
    admin_api: client.ApiClient,
    plural: str,
    name: str,
    group: str = "kubeflow.org",
    version: str = "v1",
    timeout: float = 30,
) -> None:
    """The job is gone and the garbage collector has removed its pods."""
    wait_for(f"{plural}/{name} deleted", lambda: get_job(cp, plural, name, group, version) is None, timeout)
    wait_for(f"the pods of {name} collected", lambda: not pods_of(admin_api, name), timeout)


def labelled(execution: str, local: LocalJobsync) -> str:
    return f"{EXECUTION_LABEL}={execution_label(execution_arn(local, execution))}"


def condition_types(job: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c.get("reason", "")) for c in (job.get("status") or {}).get("conditions") or []]


def read(path: Path) -> str:
    return path.read_text()


CRD_NAME = "pytorchjobs.kubeflow.org"
