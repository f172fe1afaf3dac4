"""KubeAPI: the emulated API server, put together from the store, the REST verbs, logs, watches and faults."""

from __future__ import annotations

import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.kubeapi.crds import crd_from_manifest
from harness.kubeapi.faults import Fault, Injection, take
from harness.kubeapi.pods import PodLogs
from harness.kubeapi.requestlog import RequestRecord
from harness.kubeapi.routes import Obj, Route
from harness.kubeapi.server import Handler, Server
from harness.kubeapi.tls import self_signed
from harness.kubeapi.watch import Watches

try:  # The layer is on sys.path under pytest and in the demo; fall back to the wall clock elsewhere.
    from jobsync.clock import now as _default_clock
except ImportError:  # pragma: no cover
    _default_clock = time.time


class KubeAPI(PodLogs, Watches):
    """The emulated API server: the object store, its REST verbs, logs and watches, plus the HTTP front end.

    The pieces are mixins over one :class:`~harness.kubeapi.store.Store`: ``rest`` (create, get,
    list, update/patch, delete), ``pods`` (logs), ``watch``; this class adds the lifecycle, CRD
    registration, faults, bearer tokens and the request log that ``server`` calls.
    """

    def __init__(self, clock: Callable[[], float] = _default_clock, tls: bool = False) -> None:
        super().__init__(clock)
        self.tls = tls
        self.accepted_tokens: Callable[[str], bool] | set[str] | None = None
        self.strict_resources = False
        self.mutators: list[Callable[[Route, Obj], None]] = []
        self.watch_real_cap_seconds: float | None = None
        # Set by a harness on virtual time: advances that clock by N seconds
        # while a watch waits for events, so watches end on virtual time.
        self.virtual_watch: Callable[[float], None] | None = None
        self.requests: list[RequestRecord] = []
        self.ca_pem: bytes | None = None
        self._faults: list[Injection] = []
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._stopping = False

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> KubeAPI:
        ssl_context = None
        if self.tls:
            self._tmp = tempfile.TemporaryDirectory(prefix="kubeapi-")
            self.ca_pem, cert, key = self_signed(Path(self._tmp.name))
            ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ssl_context.load_cert_chain(cert, key)
        self._stopping = False
        self._server = Server(("127.0.0.1", 0), Handler, self, ssl_context)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="kubeapi", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()  # ends open watches
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._tmp:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> KubeAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server, "KubeAPI is not started"
        port = self._server.server_address[1]
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{port}"

    # ----------------------------------------------------------------- CRDs, faults and the request log

    def register_crd(self, crd: Obj) -> None:
        """Serve a CustomResourceDefinition (the parsed YAML): its kind and its schema for validation."""
        info = crd_from_manifest(crd)
        with self.lock:
            self._crds[(info.group, info.plural)] = info

    def inject(self, fault: Fault, method: str | None = None, path_contains: str | None = None, times: int = 1) -> None:
        """Queue a fault for the next ``times`` requests matching method and path substring."""
        with self.lock:
            self._faults.append(Injection(fault, method.upper() if method else None, path_contains, times))

    def clear_faults(self) -> None:
        with self.lock:
            self._faults.clear()

    def clear_requests(self) -> None:
        with self.lock:
            self.requests.clear()

    def verbs_used(self) -> set[tuple[str, str, str]]:
        """(verb, apiGroup, resource) of every request so far: the Role jobsync needs."""
        with self.lock:
            return {(r.verb, r.api_group or "", r.resource) for r in self.requests if r.verb and r.resource}

    # ----------------------------------------------------------------- called by the HTTP handler

    def take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            return take(self._faults, method, path)

    def authorized(self, header: str | None) -> bool:
        tokens = self.accepted_tokens
        if tokens is None:
            return True
        if not header or not header.startswith("Bearer "):
            return False
        token = header[len("Bearer ") :].strip()
        return bool(tokens(token)) if callable(tokens) else token in tokens

    def log_request(self, record: RequestRecord) -> None:
        with self.lock:
            self.requests.append(record)
