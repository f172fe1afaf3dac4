"""A real, throwaway Kubernetes control plane on loopback, for the end-to-end tier.

:class:`ControlPlane` starts, in a temporary folder and on free 127.0.0.1 ports, the real binaries that
``e2e/cluster/build.sh`` builds: etcd, kube-apiserver (TLS, static tokens, RBAC), kube-controller-manager
(garbage collector, job controller, ...), kube-scheduler, kwok playing the kubelet of a few fake nodes, and
the Kubeflow training-operator. Nothing is simulated above the kubelet: admission, validation against the
real CRD schemas, watch semantics, compaction and 410 Gone are the real API server's.

``python -m e2e.controlplane up`` starts one for a human and prints its kubeconfigs (``make cluster``).
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import contextlib
import functools
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e import pki
from e2e.sandbox import die_with_parent, splice

E2E_DIR = Path(__file__).resolve().parent
REPO_DIR = E2E_DIR.parent
CRD_DIR = E2E_DIR / "crds"
KWOK_STAGES = E2E_DIR / "kwok" / "stages.yaml"
CLUSTER_DIR = E2E_DIR / "cluster"

#: Annotations on a pod (or a replica's pod template) that choose what kwok makes of it; see kwok/stages.yaml.
OUTCOME_ANNOTATION = "e2e.jobsync.io/outcome"
RUN_DURATION_ANNOTATION = "e2e.jobsync.io/run-duration"
EXIT_CODE_ANNOTATION = "e2e.jobsync.io/exit-code"

ADMIN_USER = "e2e-admin"
JOBSYNC_USER = "jobsync-lambda"
JOBSYNC_GROUP = "jobsync"
OPERATOR_NAMESPACE = "kubeflow"
JOB_NAMESPACE = "ml-training"
SERVICE_CIDR = "10.0.0.0/24"
POD_CIDR = "10.244.0.0/16"
#: The one resource the API server keeps no watch cache for (see compact_etcd).
UNCACHED_RESOURCE = "podtemplates"
#: The controllers the training-operator starts, one per kind (their names in its "Starting workers" lines).
OPERATOR_CONTROLLERS = ("pytorchjob", "tfjob", "mpijob", "xgboostjob", "paddlejob", "jaxjob")

#: The binaries build.sh writes, and the module (in e2e/cluster/<folder>/go.mod) each one is pinned by.
COMPONENTS: dict[str, tuple[str, str]] = {
    "etcd": ("etcd", "go.etcd.io/etcd/server/v3"),
    "kube-apiserver": ("kubernetes", "k8s.io/kubernetes"),
    "kube-controller-manager": ("kubernetes", "k8s.io/kubernetes"),
    "kube-scheduler": ("kubernetes", "k8s.io/kubernetes"),
    "kwok": ("kwok", "sigs.k8s.io/kwok"),
    "training-operator": ("training-operator", "github.com/kubeflow/training-operator"),
    # Not a component of the control plane: what installs the chart on it (e2e/helm.py).
    "helm": ("helm", "helm.sh/helm/v3"),
}


class ControlPlaneError(RuntimeError):
    """A component did not start, or the cluster did not answer as it should."""


def default_bin_dir() -> Path:
    """Where build.sh puts the binaries: ``$JOBSYNC_E2E_BIN``, else ``~/.cache/jobsync-e2e/bin``."""
    return Path(os.environ.get("JOBSYNC_E2E_BIN") or Path.home() / ".cache" / "jobsync-e2e" / "bin")


def missing_binaries(bin_dir: Path | None = None) -> list[str]:
    """The component binaries that are not (yet) in ``bin_dir``."""
    folder = bin_dir or default_bin_dir()
    return [name for name in COMPONENTS if not os.access(folder / name, os.X_OK)]


def pinned_versions() -> dict[str, str]:
    """The version of each component as its go.mod in e2e/cluster pins it."""
    versions: dict[str, str] = {}
    for name, (folder, module) in COMPONENTS.items():
        text = (CLUSTER_DIR / folder / "go.mod").read_text()
        found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", text, re.MULTILINE)
        versions[name] = found.group(1) if found else "unknown"
    return versions


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class FakeNode:
    """A node kwok plays the kubelet for; ``gpus`` > 0 adds ``nvidia.com/gpu`` capacity."""

    name: str
    cpu: str = "8"
    memory: str = "32Gi"
    gpus: int = 0
    instance_type: str = "m5.2xlarge"

    def manifest(self) -> dict[str, Any]:
        capacity = {"cpu": self.cpu, "memory": self.memory, "pods": "110", "ephemeral-storage": "100Gi"}
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "node.kubernetes.io/instance-type": self.instance_type,
            "type": "kwok",
        }
        if self.gpus:
            capacity["nvidia.com/gpu"] = str(self.gpus)
            labels["nvidia.com/gpu.present"] = "true"
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": labels, "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "status": {"capacity": capacity, "allocatable": dict(capacity)},
        }


DEFAULT_NODES: tuple[FakeNode, ...] = (
    FakeNode("kwok-cpu-0"),
    FakeNode("kwok-cpu-1"),
    FakeNode("kwok-gpu-0", cpu="32", memory="244Gi", gpus=4, instance_type="p3.8xlarge"),
)


#: The thread every component is forked from; it lives as long as this process (see _Process.start).
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="e2e-spawner")


@dataclass
class _Process:
    name: str
    argv: list[str]
    log: Path
    env: dict[str, str] | None = None
    popen: subprocess.Popen[bytes] | None = None

    def start(self, cwd: Path) -> None:
        with self.log.open("ab") as out:
            out.write(f"\n==== {time.strftime('%H:%M:%S')} start: {' '.join(self.argv)}\n".encode())
            out.flush()
            # A session of its own, so that stop() can end the whole group (unshare, its children) at once.
            # Forked from the one long-lived spawner thread: the parent-death signal fires when the *thread*
            # that forked the child ends, so a component (re)started from a short-lived thread (a test's
            # background helper) would be killed with that thread.
            popen = functools.partial(
                subprocess.Popen,
                self.argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
            self.popen = _SPAWNER.submit(popen).result()

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        if self.popen is None:
            return
        popen, self.popen = self.popen, None
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, sig)
            try:
                popen.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # The group may outlive its leader (a child that ignored SIGTERM): make sure nothing is left.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGKILL)


class _UnixForwarder:
    """Serves a Unix socket whose every connection is forwarded to 127.0.0.1:<port> (the API server)."""

    def __init__(self, path: Path, port: int) -> None:
        self.path = path
        self.port = port
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen(64)
        self._closed = False
        threading.Thread(target=self._serve, name="e2e-unix-forwarder", daemon=True).start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                conn.close()
                continue
            splice(conn, upstream)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()


@dataclass
class ApiResponse:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class ControlPlane:
    """etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and training-operator on loopback.

    Use as a context manager (``with ControlPlane() as cp: ...``), or call :meth:`start` and :meth:`stop`.
    Every component logs to ``<workdir>/logs/<name>.log``; :meth:`log_tails` returns their last lines.
    """

    def __init__(
        self,
        bin_dir: Path | None = None,
        workdir: Path | None = None,
        nodes: Iterable[FakeNode] = DEFAULT_NODES,
        keep_workdir: bool = False,
        timeout: float = 60.0,
    ) -> None:
        # Absolute, since every component runs with the work folder as its current directory.
        self.bin_dir = (bin_dir or default_bin_dir()).resolve()
        self._own_workdir = workdir is None
        self.workdir = (workdir or Path(tempfile.mkdtemp(prefix="jobsync-e2e-"))).resolve()
        self.nodes = tuple(nodes)
        self.keep_workdir = keep_workdir
        self.timeout = timeout
        self.logs_dir = self.workdir / "logs"
        self.pod_log_file = self.workdir / "pod.log"
        self.admin_token = secrets.token_urlsafe(32)
        self.jobsync_token = secrets.token_urlsafe(32)
        self.startup_seconds: float | None = None
        self._procs: dict[str, _Process] = {}
        self._forwarder: _UnixForwarder | None = None
        self._ssl: ssl.SSLContext | None = None
        self._resources: dict[str, list[dict[str, Any]]] = {}
        self._ports: dict[str, int] = {}
        self._pki: pki.Pki | None = None
        self._server_version: dict[str, Any] = {}
        self._etcd_version: dict[str, Any] = {}

    # ---------------------------------------------------------------- what tests use

    @property
    def server(self) -> str:
        """The API server's URL, ``https://127.0.0.1:<port>``."""
        return f"https://127.0.0.1:{self._ports['apiserver']}"

    @property
    def ca_file(self) -> Path:
        """The CA that signed the API server's serving certificate."""
        assert self._pki is not None, "start() first"
        return self._pki.ca_cert

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self._ports['etcd']}"

    def token(self, user: str) -> str:
        """The bearer token of ``"admin"`` or ``"jobsync"``."""
        return {"admin": self.admin_token, "jobsync": self.jobsync_token}[user]

    def write_kubeconfig(self, user: str = "admin", path: Path | None = None, server: str | None = None) -> Path:
        """Write a kubeconfig for ``"admin"`` (system:masters) or ``"jobsync"`` (group jobsync); return its path."""
        target = path or self.workdir / f"{user}.kubeconfig"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": server or self.server,
                        "certificate-authority-data": base64.b64encode(self.ca_file.read_bytes()).decode(),
                    },
                }
            ],
            "users": [{"name": user, "user": {"token": self.token(user)}}],
            "contexts": [{"name": f"e2e-{user}", "context": {"cluster": "e2e", "user": user}}],
            "current-context": f"e2e-{user}",
        }
        target.write_text(yaml.safe_dump(config, sort_keys=False))
        target.chmod(0o600)
        return target

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        user: str = "admin",
        content_type: str = "application/json",
        timeout: float = 10.0,
    ) -> ApiResponse:
        """One call to the API server as ``user``; the body is JSON (or text, when it is not JSON)."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token(user)}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self._ssl_context(), timeout=timeout) as resp:
                return ApiResponse(resp.status, _decode(resp.read()), dict(resp.headers))
        except urllib.error.HTTPError as err:
            return ApiResponse(err.code, _decode(err.read()), dict(err.headers))

    def apply(self, manifests: str | Path | Iterable[dict[str, Any]], user: str = "admin") -> list[dict[str, Any]]:
        """Server-side apply YAML text, a YAML file or objects; namespaced objects default to ``default``."""
        if isinstance(manifests, Path):
            docs: Iterable[Any] = yaml.safe_load_all(manifests.read_text())
        elif isinstance(manifests, str):
            docs = yaml.safe_load_all(manifests)
        else:
            docs = manifests
        applied = []
        for doc in docs:
            if not doc:
                continue
            path = self._object_path(doc)
            resp = self.request(
                "PATCH",
                f"{path}?fieldManager=jobsync-e2e&force=true",
                doc,
                user=user,
                content_type="application/apply-patch+yaml",
            )
            if resp.status >= 300:
                raise ControlPlaneError(f"apply {doc.get('kind')} {path}: {resp.status} {resp.body}")
            applied.append(resp.body)
        return applied

    def compact_etcd(self, revision: int | None = None) -> int:
        """Compact etcd (physically) at ``revision``, default its current one, and return that revision.

        A watch that etcd serves from an older resourceVersion then answers 410 Gone. The API server serves
        most watches from its watch cache, which still holds recent events after a compaction; only
        ``UNCACHED_RESOURCE`` (podtemplates) goes to etcd, or any resource after :meth:`restart_apiserver`.
        """
        if revision is None:
            current = self._etcd_call("/v3/kv/range", {"key": base64.b64encode(b"\0").decode()})
            revision = int(current["header"]["revision"])
        self._etcd_call("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def set_pod_log(self, text: str, stream: str = "stdout") -> None:
        """What ``pods/log`` answers for every pod from now on (kwok reads the file at each request).

        The file is in the CRI log format the kubelet reads (``<RFC3339Nano> <stream> F <line>``); the API
        server hands out the lines alone, as on a real node.
        """
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
        lines = "".join(f"{stamp} {stream} F {line}\n" for line in text.splitlines())
        partial = self.pod_log_file.with_suffix(".partial")
        partial.write_text(lines)
        partial.replace(self.pod_log_file)

    def restart_apiserver(self) -> None:
        """Restart kube-apiserver: its watch caches start again at etcd's current revision."""
        proc = self._procs["kube-apiserver"]
        proc.stop()
        proc.start(self.workdir)
        self._wait(
            "kube-apiserver /readyz",
            lambda: self.request("GET", "/readyz", timeout=2).status == 200,
            proc="kube-apiserver",
        )

    def stop_operator(self) -> None:
        """Stop the training-operator (the "operator down" scenario); jobs then get no status."""
        self._procs["training-operator"].stop()

    def start_operator(self) -> None:
        """(Re)start the training-operator and wait until its PyTorchJob controller works."""
        self._start_operator()

    def operator_running(self) -> bool:
        proc = self._procs.get("training-operator")
        return proc is not None and proc.running()

    def versions(self) -> dict[str, str]:
        """What each component is: the API server's and etcd's own answers, the pinned modules for the rest."""
        pinned = pinned_versions()
        return {
            "kube-apiserver": str(self._server_version.get("gitVersion", "?")),
            "etcd": "v" + str(self._etcd_version.get("etcdserver", "?")),
            "kube-controller-manager": pinned["kube-controller-manager"],
            "kube-scheduler": pinned["kube-scheduler"],
            "kwok": pinned["kwok"],
            "training-operator": pinned["training-operator"],
        }

    def versions_line(self) -> str:
        v = self.versions()
        return ", ".join(f"{name} {version}" for name, version in v.items())

    def log_tails(self, lines: int = 40) -> str:
        """The last ``lines`` lines of every component's log, for a failure report."""
        parts = []
        for log in sorted(self.logs_dir.glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"----- {log.name} (last {len(tail)} lines) -----\n" + "\n".join(tail))
        return "\n".join(parts)

    # ---------------------------------------------------------------- for more controllers (e2e/controllers.py)

    @property
    def serving_files(self) -> tuple[Path, Path]:
        """The serving certificate and key (they cover 127.0.0.1), for a controller's webhook server."""
        assert self._pki is not None, "start() first"
        return self._pki.serving_cert, self._pki.serving_key

    def launch(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        """Run one more component, stopped with the others; its log is ``logs/<name>.log``."""
        self._launch(name, argv, env)

    def stop_component(self, name: str) -> None:
        proc = self._procs.get(name)
        if proc is not None:
            proc.stop()

    def wait_until(
        self, what: str, check: Callable[[], bool], proc: str | None = None, timeout: float | None = None
    ) -> None:
        """Poll ``check`` until it is true; fails naming ``what`` (and ``proc``, if that component exits)."""
        self._wait(what, check, proc, timeout)

    # ---------------------------------------------------------------- start and stop

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ControlPlane:
        missing = missing_binaries(self.bin_dir)
        if missing:
            raise ControlPlaneError(f"missing binaries in {self.bin_dir}: {', '.join(missing)}; run make e2e-build")
        began = time.monotonic()
        try:
            self._start_all()
        except BaseException:
            tails = self.log_tails()
            self.stop()
            sys.stderr.write(tails + "\n")
            raise
        self.startup_seconds = round(time.monotonic() - began, 1)
        return self

    def stop(self) -> None:
        """Stop every component, newest first; remove the work folder unless asked to keep it."""
        for name in reversed(list(self._procs)):
            self._procs[name].stop()
        if self._forwarder is not None:
            self._forwarder.close()
            self._forwarder = None
        if self._own_workdir and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _start_all(self) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok"):
            self._ports[name] = free_port()
        self._pki = pki.make_pki(
            self.workdir / "pki",
            dns_names=["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
            ips=["127.0.0.1", "10.0.0.1"],
        )
        tokens = self.workdir / "tokens.csv"
        tokens.write_text(
            f'{self.admin_token},{ADMIN_USER},uid-admin,"system:masters"\n'
            f'{self.jobsync_token},{JOBSYNC_USER},uid-jobsync,"{JOBSYNC_GROUP}"\n'
        )
        tokens.chmod(0o600)

        self._start_etcd()
        self._start_apiserver(tokens)
        admin_kubeconfig = self.write_kubeconfig("admin")
        self.write_kubeconfig("jobsync")
        self._start_controller_manager(admin_kubeconfig)
        self._start_scheduler(admin_kubeconfig)

        for crd in sorted(CRD_DIR.glob("*.yaml")):
            self.apply(crd)
        for namespace in (OPERATOR_NAMESPACE, JOB_NAMESPACE):
            self.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}])
        self._create_nodes()
        self._start_kwok(admin_kubeconfig)
        self._wait_for_crds()
        self._wait(f"serviceaccount {JOB_NAMESPACE}/default", self._has_default_service_account)
        self._start_operator()
        self._wait("nodes Ready", self._nodes_ready)
        self._wait_healthz("kube-controller-manager", self._ports["controller-manager"])
        self._wait_healthz("kube-scheduler", self._ports["scheduler"])

    def _bin(self, name: str) -> str:
        return str(self.bin_dir / name)

    def _launch(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> _Process:
        proc = _Process(name, argv, self.logs_dir / f"{name}.log", env)
        self._procs[name] = proc
        proc.start(self.workdir)
        return proc

    def _start_etcd(self) -> None:
        client = f"http://127.0.0.1:{self._ports['etcd']}"
        peer = f"http://127.0.0.1:{self._ports['etcd-peer']}"
        self._launch(
            "etcd",
            [
                self._bin("etcd"),
                "--name=e2e",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=e2e={peer}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )

        def healthy() -> bool:
            with urllib.request.urlopen(client + "/health", timeout=2) as resp:
                return json.load(resp).get("health") == "true"

        self._wait("etcd /health", healthy, proc="etcd")
        with urllib.request.urlopen(client + "/version", timeout=2) as resp:
            self._etcd_version = json.load(resp)

    def _start_apiserver(self, tokens: Path) -> None:
        assert self._pki is not None
        p = self._pki
        self._launch(
            "kube-apiserver",
            [
                self._bin("kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{self._ports['etcd']}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self._ports['apiserver']}",
                f"--tls-cert-file={p.serving_cert}",
                f"--tls-private-key-file={p.serving_key}",
                f"--client-ca-file={p.ca_cert}",
                f"--token-auth-file={tokens}",
                "--authorization-mode=Node,RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={p.sa_public_key}",
                f"--service-account-signing-key-file={p.sa_private_key}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                # The "kubernetes" Service would get 127.0.0.1 as its endpoint, which Endpoints reject.
                "--endpoint-reconciler-type=none",
                # Every resource has a watch cache, as on EKS, except podtemplates: a watch of those is served by
                # etcd itself, so that a compaction alone turns an old resourceVersion into 410 Gone.
                f"--watch-cache-sizes={UNCACHED_RESOURCE}#0",
                "--profiling=false",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
            ],
        )

        def ready() -> bool:
            return self.request("GET", "/readyz", timeout=2).status == 200

        self._wait("kube-apiserver /readyz", ready, proc="kube-apiserver")
        self._server_version = self.request("GET", "/version").body

    def _start_controller_manager(self, kubeconfig: Path) -> None:
        assert self._pki is not None
        p = self._pki
        self._launch(
            "kube-controller-manager",
            [
                self._bin("kube-controller-manager"),
                f"--kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self._ports['controller-manager']}",
                f"--tls-cert-file={p.serving_cert}",
                f"--tls-private-key-file={p.serving_key}",
                "--leader-elect=false",
                "--controllers=*",
                f"--root-ca-file={p.ca_cert}",
                f"--service-account-private-key-file={p.sa_private_key}",
                f"--cluster-signing-cert-file={p.ca_cert}",
                f"--cluster-signing-key-file={p.ca_key}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--profiling=false",
            ],
        )

    def _start_scheduler(self, kubeconfig: Path) -> None:
        assert self._pki is not None
        p = self._pki
        self._launch(
            "kube-scheduler",
            [
                self._bin("kube-scheduler"),
                f"--kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self._ports['scheduler']}",
                f"--tls-cert-file={p.serving_cert}",
                f"--tls-private-key-file={p.serving_key}",
                "--leader-elect=false",
                "--profiling=false",
            ],
        )

    def _create_nodes(self) -> None:
        for node in self.nodes:
            manifest = node.manifest()
            resp = self.request("POST", "/api/v1/nodes", manifest)
            if resp.status not in (201, 409):
                raise ControlPlaneError(f"create node {node.name}: {resp.status} {resp.body}")
            # Status is a subresource: what a create carries of it is not kept everywhere; set it outright.
            resp = self.request(
                "PATCH",
                f"/api/v1/nodes/{node.name}/status",
                {"status": manifest["status"]},
                content_type="application/merge-patch+json",
            )
            if resp.status != 200:
                raise ControlPlaneError(f"node {node.name} status: {resp.status} {resp.body}")

    def _start_kwok(self, kubeconfig: Path) -> None:
        assert self._pki is not None
        port = self._ports["kwok"]
        self.set_pod_log("(no log: the e2e test did not call ControlPlane.set_pod_log)")
        # The repo's Stages plus one rule that serves every pod's log from pod_log_file.
        logs_rule = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterLogs",
            "metadata": {"name": "e2e-pod-log"},
            "spec": {"logs": [{"logsFile": str(self.pod_log_file), "follow": False}]},
        }
        kwok_config = self.workdir / "kwok.yaml"
        kwok_config.write_text(KWOK_STAGES.read_text() + "\n---\n" + yaml.safe_dump(logs_rule, sort_keys=False))
        self._launch(
            "kwok",
            [
                self._bin("kwok"),
                f"--kubeconfig={kubeconfig}",
                f"--config={kwok_config}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                # Heartbeats by node Lease, as a kubelet sends them (40 s, renewed well within): without them
                # kwok posts node status about once a minute, past the node lifecycle controller's grace, which
                # then marks every pod on the node not ready (a Deployment's replicas unavailable).
                "--node-lease-duration-seconds=40",
                f"--cidr={POD_CIDR}",
                "--node-ip=127.0.0.1",
                f"--node-port={port}",
                f"--server-address=127.0.0.1:{port}",
                f"--tls-cert-file={self._pki.serving_cert}",
                f"--tls-private-key-file={self._pki.serving_key}",
            ],
        )

    def _start_operator(self) -> None:
        """Run training-operator in its own network namespace (its webhook server binds every interface)."""
        old = self._procs.get("training-operator")
        if old is not None and old.running():
            return
        if self._forwarder is None:
            self._forwarder = _UnixForwarder(self.workdir / "apiserver.sock", self._ports["apiserver"])
        self._ensure_webhook_secret()
        inner_port = 6443
        kubeconfig = self.write_kubeconfig(
            "admin", path=self.workdir / "operator.kubeconfig", server=f"https://127.0.0.1:{inner_port}"
        )
        webhook_dir = self.workdir / "operator-webhook"
        (webhook_dir / "serving-certs").mkdir(parents=True, exist_ok=True)
        unshare = ["unshare", "--net", "--mount", "--fork", "--kill-child"]
        if os.geteuid() != 0:
            unshare[1:1] = ["--user", "--map-root-user"]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(REPO_DIR),
            "KUBECONFIG": str(kubeconfig),
            "MY_POD_NAMESPACE": OPERATOR_NAMESPACE,
        }
        log = self.logs_dir / "training-operator.log"
        offset = log.stat().st_size if log.exists() else 0
        self._launch(
            "training-operator",
            [
                *unshare,
                sys.executable,
                "-m",
                "e2e.sandbox",
                f"--unix={self._forwarder.path}",
                f"--port={inner_port}",
                f"--certs={webhook_dir}",
                "--",
                self._bin("training-operator"),
                # No --enable-scheme: every kind (TFJob, PyTorchJob, XGBoostJob, MPIJob, PaddleJob, JAXJob).
                "--metrics-bind-address=127.0.0.1:8080",
                "--health-probe-bind-address=127.0.0.1:8081",
                "--webhook-server-port=9443",
                "--leader-elect=false",
            ],
            env=env,
        )
        certs_written = False

        def working() -> bool:
            nonlocal certs_written
            if not certs_written:
                # What the kubelet would do: mount the Secret the operator's cert rotator fills.
                certs_written = self._mount_webhook_secret(webhook_dir / "serving-certs")
                return False
            text = log.read_bytes()[offset:].decode(errors="replace")
            started = [line for line in text.splitlines() if "Starting workers" in line]
            return all(any(kind in line for line in started) for kind in OPERATOR_CONTROLLERS)

        self._wait("training-operator controllers", working, proc="training-operator")

    def _ensure_webhook_secret(self) -> None:
        path = f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/secrets"
        resp = self.request(
            "POST",
            path,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "training-operator-webhook-cert", "namespace": OPERATOR_NAMESPACE},
            },
        )
        if resp.status not in (201, 409):
            raise ControlPlaneError(f"webhook secret: {resp.status} {resp.body}")

    def _mount_webhook_secret(self, folder: Path) -> bool:
        resp = self.request("GET", f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/secrets/training-operator-webhook-cert")
        data = (resp.body or {}).get("data") or {}
        if resp.status != 200 or "tls.crt" not in data or "tls.key" not in data:
            return False
        for key, value in data.items():
            target = folder / key
            target.write_bytes(base64.b64decode(value))
            target.chmod(0o600)
        return True

    # ---------------------------------------------------------------- waiting and plumbing

    def _wait(
        self, what: str, check: Callable[[], bool], proc: str | None = None, timeout: float | None = None
    ) -> None:
        deadline = time.monotonic() + (timeout or self.timeout)
        last: BaseException | None = None
        while time.monotonic() < deadline:
            if proc is not None and not self._procs[proc].running():
                raise ControlPlaneError(f"{proc} exited while waiting for {what}; see {self._procs[proc].log}")
            try:
                if check():
                    return
            except (OSError, ValueError, KeyError, AttributeError, TypeError) as err:
                last = err
            time.sleep(0.2)
        raise ControlPlaneError(f"timed out after {timeout or self.timeout:.0f}s waiting for {what} (last: {last})")

    def _wait_healthz(self, name: str, port: int) -> None:
        def healthy() -> bool:
            url = f"https://127.0.0.1:{port}/healthz"
            with urllib.request.urlopen(url, context=self._ssl_context(), timeout=2) as resp:
                return resp.status == 200

        self._wait(f"{name} /healthz", healthy, proc=name)

    def _wait_for_crds(self) -> None:
        names = [yaml.safe_load(crd.read_text())["metadata"]["name"] for crd in sorted(CRD_DIR.glob("*.yaml"))]

        def established() -> bool:
            for name in names:
                resp = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                conditions = (resp.body.get("status") or {}).get("conditions") or []
                if not any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    return False
            return True

        self._wait("CRDs Established", established)

    def _has_default_service_account(self) -> bool:
        return self.request("GET", f"/api/v1/namespaces/{JOB_NAMESPACE}/serviceaccounts/default").status == 200

    def _nodes_ready(self) -> bool:
        items = self.request("GET", "/api/v1/nodes").body.get("items", [])
        ready = {
            n["metadata"]["name"]
            for n in items
            if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))
        }
        return all(node.name in ready for node in self.nodes)

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context(cafile=str(self.ca_file))
        return self._ssl

    def _etcd_call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(self.etcd_url + path, data=json.dumps(body).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return dict(json.load(resp))

    def _object_path(self, obj: dict[str, Any]) -> str:
        api_version, kind = obj["apiVersion"], obj["kind"]
        resource = self._resource_for(api_version, kind)
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        name = obj["metadata"]["name"]
        if resource["namespaced"]:
            namespace = obj["metadata"].get("namespace") or "default"
            return f"{prefix}/namespaces/{namespace}/{resource['name']}/{name}"
        return f"{prefix}/{resource['name']}/{name}"

    def _resource_for(self, api_version: str, kind: str) -> dict[str, Any]:
        for refresh in (False, True):
            if refresh or api_version not in self._resources:
                path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
                resp = self.request("GET", path)
                self._resources[api_version] = resp.body.get("resources", []) if resp.status == 200 else []
            for resource in self._resources[api_version]:
                if resource["kind"] == kind and "/" not in resource["name"]:
                    return resource
        raise ControlPlaneError(f"the API server serves no {kind} in {api_version}")


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")


@contextlib.contextmanager
def running(**kwargs: Any) -> Iterator[ControlPlane]:
    """``with running() as cp:``, stopping it even when the body raises."""
    plane = ControlPlane(**kwargs)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


def _up(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir) if args.workdir else None
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
    plane = ControlPlane(workdir=workdir, keep_workdir=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    plane.start()
    try:
        print(f"control plane up in {plane.startup_seconds}s: {plane.server}")
        for name, version in plane.versions().items():
            print(f"  {name:<24} {version}")
        print(f"admin (system:masters): export KUBECONFIG={plane.workdir / 'admin.kubeconfig'}")
        print(f"jobsync-lambda (group jobsync): {plane.workdir / 'jobsync.kubeconfig'}")
        print(f"logs: {plane.logs_dir}")
        print("Ctrl-C stops it.", flush=True)
        while not stop.wait(1.0):
            dead = [name for name, proc in plane._procs.items() if not proc.running()]
            if dead:
                print(f"stopped by itself: {', '.join(dead)}; see {plane.logs_dir}", file=sys.stderr)
                return 1
        return 0
    finally:
        plane.stop()
        print(f"stopped; work folder kept: {plane.workdir}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.controlplane", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a control plane and keep it up until Ctrl-C")
    up.add_argument("--workdir", help="folder for its files (default: a new temporary folder)")
    sub.add_parser("versions", help="print the pinned version of each component")
    args = parser.parse_args(argv)
    if args.command == "versions":
        for name, version in pinned_versions().items():
            print(f"{name:<24} {version}")
        return 0
    missing = missing_binaries()
    if missing:
        print(f"missing in {default_bin_dir()}: {', '.join(missing)}; run make e2e-build", file=sys.stderr)
        return 2
    return _up(args)


if __name__ == "__main__":
    sys.exit(main())
