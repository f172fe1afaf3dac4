"""The local Kubernetes API (harness.kubeapi) set up as a deployment's cluster.

``start_kube_api()`` serves the PyTorchJob CRD and the ``ml-training``
namespace; ``local_kube_api()`` also points jobsync at it
(``JOBSYNC_CLUSTER_MODE=url``) with its runtime and client caches reset on the
way in and out. Importing this module does not import moto.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

import harness
from harness.kubeapi import KubeAPI
from jobsync import cluster, runtime

NAMESPACE = "ml-training"
PYTORCHJOBS = ("kubeflow.org", "v1", "pytorchjobs")
# The CRD the harness serves (harness.local loads the same file, but importing it pulls in moto).
PYTORCHJOB_CRD = Path(harness.__file__).resolve().parent / "crds" / "kubeflow.org_pytorchjobs.yaml"

_crds: dict[Path, dict[str, Any]] = {}


def load_crd(path: Path = PYTORCHJOB_CRD) -> dict[str, Any]:
    if path not in _crds:
        _crds[path] = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return _crds[path]


def start_kube_api(
    clock: Callable[[], float] | None = None, crds: Iterable[dict[str, Any]] | None = None, **options: Any
) -> KubeAPI:
    """A started KubeAPI serving ``crds`` (the PyTorchJob CRD unless told) with the namespace created."""
    server = (KubeAPI(**options) if clock is None else KubeAPI(clock=clock, **options)).start()
    for crd in [load_crd()] if crds is None else crds:
        server.register_crd(crd)
    server.create_namespace(NAMESPACE)
    return server


@contextlib.contextmanager
def local_kube_api(
    env: dict[str, str] | None = None, crds: Iterable[dict[str, Any]] | None = None
) -> Iterator[KubeAPI]:
    """``start_kube_api()`` with jobsync's environment pointing at it (plus ``env``), undone afterwards."""
    import pytest  # for its MonkeyPatch; only here, so the benchmark can start a server without it

    server = start_kube_api(crds=crds)
    try:
        with pytest.MonkeyPatch.context() as mp:
            for name, value in {"JOBSYNC_CLUSTER_MODE": "url", "JOBSYNC_KUBE_URL": server.url, **(env or {})}.items():
                mp.setenv(name, value)
            runtime.reset()
            cluster.reset_cache()
            try:
                yield server
            finally:
                cluster.reset_cache()
                runtime.reset()
    finally:
        server.stop()
