"""Kueue, the JobSet controller and Kubeflow Trainer v2, as processes beside a running ControlPlane.

Opt-in per test module (``Controllers(cp).start("jobset", "trainer", "kueue")``): the base control plane
stays as it was, so the other tests keep their meaning. What each needs comes from its pinned module:
``e2e/cluster/build.sh`` builds the binaries and renders the CRDs, webhook configurations and (Trainer) the
ClusterTrainingRuntimes with kustomize from the module's own kustomizations into ``<bin>/manifests``. Here:

- every webhook's and conversion webhook's ``clientConfig.service`` becomes
  ``url: https://127.0.0.1:<port><path>`` with the control plane's CA as ``caBundle``; each controller serves
  its webhooks on 127.0.0.1 with the control plane's serving certificate (it covers 127.0.0.1), its own
  certificate management off;
- Kueue's webhooks for jobs and pods (upstream: every namespace but kube-system and kueue-system) see only
  namespaces labelled ``KUEUE_NAMESPACE_LABEL``, so that while Kueue is down a Job is still created
  anywhere else, and the "operator down" story stays the training-operator's alone;
- Kueue reads its metrics certificate from the fixed ``/etc/kueue/metrics/certs``: it runs in a private
  mount namespace (``e2e/sandbox.py``) where a folder of ours is mounted there, the host's /etc untouched.
  Its visibility server (an aggregated API on a port of its own) is off;
- Trainer reads its serving certificate from ``$TMPDIR/k8s-webhook-server/serving-certs``.

``stop()`` deletes the webhook configurations before it stops the processes: nothing left points at a
port no one serves.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import os
import re
import shutil
import sys
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e.controlplane import CLUSTER_DIR, REPO_DIR, ControlPlane, ControlPlaneError, default_bin_dir, free_port

#: Namespaces with this label (value "true") are the ones Kueue's job and pod webhooks see.
KUEUE_NAMESPACE_LABEL = "e2e.jobsync.io/kueue"
#: Where Kueue v0.19 loads its metrics certificate from when its internal certificate management is off.
KUEUE_METRICS_CERTS = "/etc/kueue/metrics/certs"
_WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


@dataclass(frozen=True)
class Spec:
    """One controller: its binary, the manifests build.sh rendered for it, and its pinned module."""

    name: str
    binary: str
    module_dir: str
    module: str

    @property
    def manifest(self) -> Path:
        return default_bin_dir() / "manifests" / f"{self.name}.yaml"


SPECS: dict[str, Spec] = {
    "jobset": Spec("jobset", "jobset-controller", "jobset", "sigs.k8s.io/jobset"),
    "trainer": Spec("trainer", "trainer-controller-manager", "trainer", "github.com/kubeflow/trainer/v2"),
    "kueue": Spec("kueue", "kueue", "kueue", "sigs.k8s.io/kueue"),
}
#: The order they start in: Trainer needs JobSet's CRD; Kueue's integrations need theirs.
ORDER = ("jobset", "trainer", "kueue")


def missing() -> list[str]:
    """The binaries and rendered manifests build.sh has not made yet."""
    bin_dir = default_bin_dir()
    absent = [s.binary for s in SPECS.values() if not os.access(bin_dir / s.binary, os.X_OK)]
    return absent + [f"manifests/{s.name}.yaml" for s in SPECS.values() if not s.manifest.is_file()]


def pinned_versions() -> dict[str, str]:
    """The version of each controller as its go.mod in e2e/cluster pins it."""
    out = {}
    for spec in SPECS.values():
        text = (CLUSTER_DIR / spec.module_dir / "go.mod").read_text()
        found = re.search(rf"^\s*{re.escape(spec.module)}\s+(v\S+)", text, re.MULTILINE)
        out[spec.name] = found.group(1) if found else "unknown"
    return out


def rendered(spec: Spec) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(spec.manifest.read_text()) if doc]


def point_at(doc: dict[str, Any], port: int, ca_bundle: str) -> dict[str, Any]:
    """A webhook configuration or CRD whose service references call https://127.0.0.1:<port> instead."""
    doc = copy.deepcopy(doc)
    configs: list[dict[str, Any]] = []
    if doc["kind"] in _WEBHOOK_KINDS:
        configs = [w["clientConfig"] for w in doc.get("webhooks", [])]
    elif doc["kind"] == "CustomResourceDefinition":
        webhook = ((doc["spec"].get("conversion") or {}).get("webhook")) or {}
        configs = [webhook["clientConfig"]] if "clientConfig" in webhook else []
    for config in configs:
        service = config.pop("service", None)
        if service is not None:
            config["url"] = f"https://127.0.0.1:{port}{service.get('path', '/')}"
        config["caBundle"] = ca_bundle
    return doc


def narrow_to_labelled_namespaces(doc: dict[str, Any]) -> dict[str, Any]:
    """Kueue's job and pod webhooks (those with a namespaceSelector) only for namespaces labelled for Kueue."""
    doc = copy.deepcopy(doc)
    for webhook in doc.get("webhooks", []):
        if "namespaceSelector" in webhook:
            webhook["namespaceSelector"] = {"matchLabels": {KUEUE_NAMESPACE_LABEL: "true"}}
    return doc


class Controllers:
    """Kueue, JobSet and Trainer v2 on a running ControlPlane; ``kueue_gates`` are Kueue feature gates to set."""

    def __init__(self, cp: ControlPlane, kueue_gates: Mapping[str, bool] | None = None) -> None:
        self.cp = cp
        self.kueue_gates = dict(kueue_gates or {})
        self.ports: dict[str, dict[str, int]] = {}
        self.running: list[str] = []
        self._webhooks: list[tuple[str, str]] = []
        self._dir = cp.workdir / "controllers"
        self._ca_bundle = base64.b64encode(cp.ca_file.read_bytes()).decode()

    # ---------------------------------------------------------------- what tests use

    def start(self, *names: str) -> Controllers:
        """Install each one's CRDs, start it, then its webhooks, in dependency order; waits until it serves."""
        absent = missing()
        if absent:
            raise ControlPlaneError(f"missing in {default_bin_dir()}: {', '.join(absent)}; run make e2e-build")
        for name in (n for n in ORDER if n in (names or ORDER)):
            self._install(SPECS[name])
        return self

    def stop(self) -> None:
        """Delete their webhook configurations, then stop them, newest first."""
        for kind, name in reversed(self._webhooks):
            plural = (
                "mutatingwebhookconfigurations" if kind.startswith("Mutating") else "validatingwebhookconfigurations"
            )
            self.cp.request("DELETE", f"/apis/admissionregistration.k8s.io/v1/{plural}/{name}")
        self._webhooks.clear()
        for name in reversed(self.running):
            self.cp.stop_component(name)
        self.running.clear()

    def restart_kueue(self, gates: Mapping[str, bool]) -> None:
        """Run Kueue again with other feature gates (its webhooks stay, on the same port)."""
        self.cp.stop_component("kueue")
        self.kueue_gates = dict(gates)
        self._run(SPECS["kueue"])

    def versions(self) -> dict[str, str]:
        return pinned_versions()

    @property
    def kueue_feature_gates(self) -> dict[str, bool]:
        """The gates Kueue runs with: its visibility server (an aggregated API on a port of its own) off."""
        return {"VisibilityOnDemand": False, **self.kueue_gates}

    def __enter__(self) -> Controllers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- installing one

    def _install(self, spec: Spec) -> None:
        docs = rendered(spec)
        self.ports[spec.name] = {"webhook": free_port(), "metrics": free_port(), "health": free_port()}
        port = self.ports[spec.name]["webhook"]
        crds = [point_at(d, port, self._ca_bundle) for d in docs if d["kind"] == "CustomResourceDefinition"]
        self.cp.apply(crds)
        self._wait_established([d["metadata"]["name"] for d in crds])
        self._run(spec)
        self.running.append(spec.name)
        for doc in (d for d in docs if d["kind"] in _WEBHOOK_KINDS):
            doc = point_at(doc, port, self._ca_bundle)
            if spec.name == "kueue":
                doc = narrow_to_labelled_namespaces(doc)
            self.cp.apply([doc])
            self._webhooks.append((doc["kind"], doc["metadata"]["name"]))
        if spec.name == "trainer":
            self.cp.apply(d for d in docs if d["kind"] == "ClusterTrainingRuntime")

    def _run(self, spec: Spec) -> None:
        folder = self._dir / spec.name
        certs = folder / "k8s-webhook-server" / "serving-certs"
        certs.mkdir(parents=True, exist_ok=True)
        cert, key = self.cp.serving_files
        for source, target in ((cert, "tls.crt"), (key, "tls.key")):
            shutil.copyfile(source, certs / target)
            (certs / target).chmod(0o600)
        config = folder / "config.yaml"
        config.write_text(yaml.safe_dump(self._config(spec, certs), sort_keys=False))
        kubeconfig = self.cp.write_kubeconfig("admin", path=folder / "kubeconfig")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KUBECONFIG": str(kubeconfig), "TMPDIR": str(folder)}
        argv = [str(default_bin_dir() / spec.binary), f"--config={config}"]
        if spec.name == "kueue":
            argv = [*self._private_mounts(folder, certs), *argv]
            env["PYTHONPATH"] = str(REPO_DIR)
            argv += ["--zap-log-level=2"]
        self.cp.launch(spec.name, argv, env)
        health = self.ports[spec.name]["health"]
        self.cp.wait_until(f"{spec.name} /readyz", lambda: _ok(f"http://127.0.0.1:{health}/readyz"), proc=spec.name)

    def _private_mounts(self, folder: Path, certs: Path) -> list[str]:
        unshare = ["unshare", "--mount", "--fork", "--kill-child"]
        if os.geteuid() != 0:
            unshare[1:1] = ["--user", "--map-root-user"]
        bind = f"--bind={certs}:{KUEUE_METRICS_CERTS}"
        return [*unshare, sys.executable, "-m", "e2e.sandbox", bind, f"--scratch={folder / 'overlay'}", "--"]

    def _config(self, spec: Spec, certs: Path) -> dict[str, Any]:
        ports = self.ports[spec.name]
        webhook = {"port": ports["webhook"], "host": "127.0.0.1"}
        metrics = {"bindAddress": f"127.0.0.1:{ports['metrics']}"}
        health = {"healthProbeBindAddress": f"127.0.0.1:{ports['health']}"}
        if spec.name == "jobset":
            return {
                "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
                "kind": "Configuration",
                "leaderElection": {"leaderElect": False},
                "health": health,
                "metrics": metrics,
                "webhook": {**webhook, "certDir": str(certs)},
                "internalCertManagement": {"enable": False},
            }
        if spec.name == "trainer":
            return {
                "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
                "kind": "Configuration",
                "leaderElection": {"leaderElect": False},
                "health": health,
                "metrics": metrics,
                "webhook": webhook,
                "certManagement": {"enable": False},
            }
        return {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "health": health,
            "metrics": metrics,
            "webhook": {**webhook, "certDir": str(certs)},
            "internalCertManagement": {"enable": False},
            "featureGates": self.kueue_feature_gates,
            "integrations": {
                "frameworks": [
                    "batch/job",
                    "kubeflow.org/pytorchjob",
                    "jobset.x-k8s.io/jobset",
                    "trainer.kubeflow.org/trainjob",
                ]
            },
        }

    def _wait_established(self, names: list[str]) -> None:
        def established() -> bool:
            for name in names:
                resp = self.cp.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                conditions = (resp.body.get("status") or {}).get("conditions") or []
                if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    return False
            return True

        self.cp.wait_until(f"{len(names)} CRDs Established", established)


def _ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as resp:
        return bool(resp.status == 200)


@contextlib.contextmanager
def running(cp: ControlPlane, *names: str, kueue_gates: Mapping[str, bool] | None = None) -> Iterator[Controllers]:
    """Start ``names`` (all by default) on ``cp``; stop them and delete their webhooks afterwards."""
    controllers = Controllers(cp, kueue_gates).start(*names)
    try:
        yield controllers
    finally:
        controllers.stop()
