"""The real helm (built from e2e/cluster/helm, pinned) on charts/jobsync: render it, install it, remove it.

The chart is the one renderer of jobsync's cluster objects. The e2e tier installs it on its control plane
as a platform team would (``helm upgrade --install``), the fast tier and CI render it (``helm template``)
to compare what it grants with what the code calls. Values are passed as a file, never as ``--set``
strings, so a value is never parsed twice.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from e2e.controlplane import REPO_DIR, default_bin_dir

CHART = REPO_DIR / "charts" / "jobsync"
RELEASE = "jobsync"
#: The Kubernetes version `helm template` renders for when no cluster is asked (the e2e tier's).
KUBE_VERSION = "v1.34.4"


class HelmError(RuntimeError):
    """helm exited non-zero; the message is its standard error."""


def binary() -> Path:
    return default_bin_dir() / "helm"


def available() -> bool:
    return os.access(binary(), os.X_OK)


def run(*args: str, values: Mapping[str, Any] | None = None, timeout: float = 120) -> str:
    """``helm ARGS [-f values.yaml]``: its standard output, or HelmError with its standard error."""
    with tempfile.TemporaryDirectory(prefix="jobsync-helm-") as tmp:
        command = [str(binary()), *args]
        if values is not None:
            values_file = Path(tmp) / "values.yaml"
            values_file.write_text(yaml.safe_dump(dict(values)))
            command += ["-f", str(values_file)]
        # helm keeps its cache and config under HOME: a folder of its own, so runs never share one.
        env = {**os.environ, "HELM_CACHE_HOME": tmp, "HELM_CONFIG_HOME": tmp, "HELM_DATA_HOME": tmp}
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    if done.returncode != 0:
        raise HelmError(f"helm {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def template(
    values: Mapping[str, Any] | None = None, namespace: str = "ml-training", release: str = RELEASE
) -> list[dict[str, Any]]:
    """The objects ``helm template`` renders for ``values``, in order."""
    out = run("template", release, str(CHART), "-n", namespace, "--kube-version", KUBE_VERSION, values=values or {})
    return [doc for doc in yaml.safe_load_all(out) if doc]


def install(
    kubeconfig: Path,
    values: Mapping[str, Any] | None = None,
    namespace: str = "ml-training",
    release: str = RELEASE,
    wait: bool = False,
) -> str:
    """``helm upgrade --install`` on the cluster of ``kubeconfig`` (a release's first install or its upgrade)."""
    args = ["upgrade", "--install", release, str(CHART), "-n", namespace, "--kubeconfig", str(kubeconfig)]
    if wait:
        args += ["--wait", "--timeout", "120s"]
    return run(*args, values=values or {}, timeout=180)


def uninstall(kubeconfig: Path, namespace: str = "ml-training", release: str = RELEASE) -> str:
    return run("uninstall", release, "-n", namespace, "--kubeconfig", str(kubeconfig), "--wait", "--ignore-not-found")
