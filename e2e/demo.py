"""`make demo CLUSTER=local-real`: the demo against the e2e tier's real control plane instead of the simulator.

    python -m e2e.demo [--scenario success|failure|restarting|image-pull-backoff|timeout|operator-down]
                       [--input events/run-job-input.json] [--namespace ml-training] [--kinds PyTorchJob]

Starts the control plane (e2e/controlplane.py), installs the chart (charts/jobsync) with the real helm for the
namespace and kinds, writes the jobsync-lambda kubeconfig, turns the scenario into kwok annotations on the input's pod
templates, and runs ``python -m harness.demo --kubeconfig`` on the wall clock with small waits. It prints the
same lines as ``make demo``. The demo's input is the PyTorchJob of events/run-job-input.json; with another
``--kinds`` give an ``--input`` of that kind.

Where a Docker daemon with the Lambda image and a ``sam build`` answers (``make demo CLUSTER=local-real``
prepares them when it can), the state machine invokes the functions of the build through ``sam local
start-lambda`` (lambda_runtime/); otherwise, or with ``--lambdas in-process``, the handlers run in-process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from e2e.controlplane import ControlPlane, missing_binaries
from e2e.tests.runs import FAST, install_chart, pod_annotations, with_pods
from harness import demo

#: What kwok makes of each demo scenario's pods, and what the input asks (restarting: see below).
SCENARIOS: dict[str, dict[str, Any]] = {
    "success": {"pods": pod_annotations(run_duration="3s")},
    "failure": {"pods": pod_annotations("fail", run_duration="3s", exit_code=1)},
    "restarting": {"pods": pod_annotations("fail", run_duration="2s", exit_code=137), "restart": "ExitCode"},
    "image-pull-backoff": {"pods": pod_annotations("image-pull-backoff")},
    "timeout": {"pods": pod_annotations("run-forever"), "input": {"timeoutSeconds": 10}},
    "operator-down": {"pods": pod_annotations(), "operator": False},
}


def _heal_after_restart(cp: ControlPlane, namespace: str, done: threading.Event) -> None:
    """restarting: once the operator has restarted a pod (exit 137 is retryable), let the next ones succeed."""
    path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs"
    while not done.wait(0.5):
        for job in (cp.request("GET", path).body or {}).get("items", []):
            conditions = (job.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Restarting" and c["status"] == "True" for c in conditions):
                annotations = {"metadata": {"annotations": pod_annotations()}}
                patch = {"spec": {"pytorchReplicaSpecs": {r: {"template": annotations} for r in ("Master", "Worker")}}}
                cp.request(
                    "PATCH",
                    f"{path}/{job['metadata']['name']}",
                    patch,
                    content_type="application/merge-patch+json",
                )
                return


def _in_containers(cp: ControlPlane) -> Any:
    """The run's functions served by sam local start-lambda, if a daemon with the image answers; else None."""
    from lambda_runtime import relay
    from lambda_runtime.remote import containerised, ready

    daemon, missing = ready()
    if daemon is None:
        print(f"the functions run in-process: {missing}", file=sys.stderr)
        return None
    print(f"the functions run in the Lambda runtime: sam local start-lambda on {daemon.host}", file=sys.stderr)

    @contextlib.contextmanager
    def around(local: Any) -> Iterator[None]:
        gateway = relay.gateway(daemon)
        proxy = relay.KubeProxy(gateway, cp.server, str(cp.ca_file), cp.jobsync_token)
        try:
            with containerised(local, daemon, gateway, proxy.url, log=cp.logs_dir / "sam-local.log"):
                yield
        finally:
            proxy.close()

    return around


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="success")
    parser.add_argument("--input", default="events/run-job-input.json")
    parser.add_argument("--namespace", default="ml-training")
    parser.add_argument("--kinds", default="PyTorchJob")
    parser.add_argument(
        "--lambdas",
        choices=["containers", "in-process"],
        default="containers",
        help="where the functions run (containers: sam local start-lambda, when Docker and the image are there)",
    )
    parser.add_argument("--verdict-file", default=None, help="write the verdict here as one line (make demo)")
    args = parser.parse_args(argv)
    missing = missing_binaries()
    if missing:
        print(f"e2e binaries missing ({', '.join(missing)}): run make e2e-build", file=sys.stderr)
        return 2
    scenario = SCENARIOS[args.scenario]
    execution_input = json.loads(Path(args.input).read_text())
    execution_input["job"] = with_pods(execution_input["job"], scenario["pods"], scenario.get("restart", "Never"))
    execution_input["timeoutSeconds"] = 120
    execution_input.update(scenario.get("input", {}))

    with ControlPlane() as cp, tempfile.TemporaryDirectory(prefix="jobsync-demo-") as tmp:
        print(f"control plane up in {cp.startup_seconds}s: {cp.versions_line()}", file=sys.stderr)
        if args.namespace != "ml-training":
            cp.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": args.namespace}}])
        install_chart(cp, args.kinds, namespace=args.namespace)
        kubeconfig = cp.write_kubeconfig("jobsync")
        input_file = Path(tmp) / "input.json"
        input_file.write_text(json.dumps(execution_input))
        os.environ.update({**FAST, "JOBSYNC_NAMESPACE": args.namespace, "JOBSYNC_ALLOWED_KINDS": args.kinds})
        done = threading.Event()
        if args.scenario == "restarting":
            threading.Thread(target=_heal_after_restart, args=(cp, args.namespace, done), daemon=True).start()
        if scenario.get("operator") is False:
            cp.stop_operator()
        try:
            argv_demo = ["--scenario", args.scenario, "--input", str(input_file), "--kubeconfig", str(kubeconfig)]
            argv_demo += ["--kinds", args.kinds]  # what the chart installed allows
            argv_demo += ["--verdict-file", args.verdict_file] if args.verdict_file else []
            return demo.main(argv_demo, around=_in_containers(cp) if args.lambdas == "containers" else None)
        finally:
            done.set()


if __name__ == "__main__":
    sys.exit(main())
