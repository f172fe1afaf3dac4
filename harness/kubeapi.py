"""An in-process Kubernetes API server over real HTTP, for tests, the local demo and the benchmark.

It speaks enough of the kube-apiserver's REST dialect for the real ``kubernetes``
Python client: CRUD on namespaced resources (core and custom), the ``/status``
subresource, merge/JSON patches, label and field selectors, chunked watches,
pod logs, Status error bodies, CRD schema validation (``fieldValidation``),
bearer tokens, TLS with a self-signed CA, and injectable faults.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import ipaddress
import json
import re
import secrets
import select
import socket
import ssl
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

try:  # The layer is on sys.path under pytest and in the demo; fall back to the wall clock elsewhere.
    from jobsync.clock import now as _default_clock
except ImportError:  # pragma: no cover
    _default_clock = time.time

Key = tuple[str, str, str, str]  # (group, plural, namespace or "", name)
Obj = dict[str, Any]

# How far a watch on virtual time moves the clock before looking for events again.
VIRTUAL_WATCH_STEP_SECONDS = 5.0
# Real seconds a watch on virtual time waits, after sending an event, for the client to hang up.
VIRTUAL_WATCH_REACT_SECONDS = 0.2

CORE_KINDS = {
    "pods": "Pod",
    "namespaces": "Namespace",
    "configmaps": "ConfigMap",
    "secrets": "Secret",
    "services": "Service",
    "events": "Event",
    "serviceaccounts": "ServiceAccount",
}
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def rfc3339(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------- errors


class ApiError(Exception):
    """A failure the server answers with a ``kind: Status`` body."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def body(self) -> Obj:
        return status_body(self.code, self.reason, self.message, self.details)


def status_body(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
    body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


# --------------------------------------------------------------------------- routing


@dataclass(frozen=True)
class Route:
    """A parsed resource path."""

    group: str
    version: str
    plural: str
    namespace: str | None  # None: cluster-scoped, or a list across all namespaces
    name: str | None = None
    subresource: str | None = None

    @property
    def key(self) -> Key:
        return (self.group, self.plural, self.namespace or "", self.name or "")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``pytorchjobs.kubeflow.org`` / ``pods``, as Status messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def rbac_resource(self) -> str:
        return f"{self.plural}/{self.subresource}" if self.subresource else self.plural


def parse_path(path: str) -> Route | None:
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return None
    if rest[0] == "namespaces" and group == "" and len(rest) <= 3 and (len(rest) < 3 or rest[2] in {"status"}):
        # The namespace object itself: /api/v1/namespaces[/{name}[/status]]
        return Route(group, version, "namespaces", None, *[*rest[1:], None, None][:2])
    if rest[0] == "namespaces" and len(rest) >= 3:
        ns, plural, tail = rest[1], rest[2], rest[3:]
        if len(tail) > 2:
            return None
        return Route(group, version, plural, ns, *[*tail, None, None][:2])
    if len(rest) == 1:
        return Route(group, version, rest[0], None)  # list/watch across namespaces
    return None


def route_from_key(key: Iterable[str]) -> Route:
    """(group, version, plural, namespace, name) to a Route; "" or None for the core group/cluster scope."""
    group, version, plural, namespace, name = key
    return Route(group or "", version, plural, namespace or None, name)


# --------------------------------------------------------------------------- selectors


class Selector:
    """A label selector: ``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``, ``a in (x,y)``, ``a notin (x,y)``."""

    _SET = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
    _EQ = re.compile(r"^\s*([^\s!=]+)\s*(==|=|!=)\s*([^\s]*)\s*$")
    _EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")

    def __init__(self, text: str | None) -> None:
        self.terms: list[Callable[[dict[str, str]], bool]] = []
        for term in _split_terms(text or ""):
            self.terms.append(self._parse(term))

    def _parse(self, term: str) -> Callable[[dict[str, str]], bool]:
        if m := self._SET.match(term):
            key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",") if v.strip()}
            if op == "in":
                return lambda labels: labels.get(key) in values
            return lambda labels: labels.get(key) not in values
        if m := self._EQ.match(term):
            key, op, value = m.groups()
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
        if m := self._EXISTS.match(term):
            neg, key = m.groups()
            return (lambda labels: key not in labels) if neg else (lambda labels: key in labels)
        raise ApiError(400, "BadRequest", f"unable to parse requirement: {term!r}")

    def matches(self, labels: dict[str, str] | None) -> bool:
        return all(term(labels or {}) for term in self.terms)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside ``( )``."""
    terms, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    terms.append(cur)
    return [t for t in terms if t.strip()]


class FieldSelector:
    """``metadata.name=x``, ``metadata.namespace!=y``, ``status.phase=Running``: dotted paths, = / == / !=."""

    def __init__(self, text: str | None) -> None:
        self.terms: list[tuple[list[str], bool, str]] = []
        for term in _split_terms(text or ""):
            m = re.match(r"^\s*([\w.]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
            if not m:
                raise ApiError(400, "BadRequest", f"invalid selector: '{text}'; can't understand '{term}'")
            self.terms.append((m.group(1).split("."), m.group(2) != "!=", m.group(3)))

    def matches(self, obj: Obj) -> bool:
        for path, equal, value in self.terms:
            cur: Any = obj
            for part in path:
                cur = cur.get(part) if isinstance(cur, dict) else None
            if ((cur if cur is not None else "") == value) != equal:
                return False
        return True


# --------------------------------------------------------------------------- patches


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch (strategic merge patch is treated the same way)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


def json_patch(target: Obj, ops: list[Obj]) -> Obj:
    """RFC 6902 add/remove/replace/test: what clients send as ``application/json-patch+json``."""
    doc = copy.deepcopy(target)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent: Any = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent.setdefault(p, {})
        last = parts[-1] if parts else ""
        kind = op["op"]
        try:
            if kind in ("add", "replace"):
                if isinstance(parent, list):
                    idx = len(parent) if last == "-" else int(last)
                    if kind == "add":
                        parent.insert(idx, op["value"])
                    else:
                        parent[idx] = op["value"]
                else:
                    if kind == "replace" and last not in parent:
                        raise KeyError(last)
                    parent[last] = op["value"]
            elif kind == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif kind == "test":
                current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
                if current != op.get("value"):
                    raise ApiError(422, "Invalid", "the server rejected our request due to an error in our request")
            else:
                raise ApiError(415, "UnsupportedMediaType", f"unsupported JSON patch op {kind!r}")
        except (KeyError, IndexError, ValueError) as exc:
            raise ApiError(
                422, "Invalid", f"jsonpatch {kind} operation does not apply: doc is missing path: {op['path']}"
            ) from exc
    return doc


# --------------------------------------------------------------------------- CRD schema validation


@dataclass
class SchemaReport:
    unknown: list[str] = field(default_factory=list)
    causes: list[Obj] = field(default_factory=list)

    def invalid(self, path: str, reason: str, body: str) -> None:
        self.causes.append({"reason": reason, "message": body, "field": path})


_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object", list: "array"}


def _json_type(value: Any) -> str:
    return "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)


def _type_ok(expected: str, value: Any) -> bool:
    if expected == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return _json_type(value) == expected


def prune_and_validate(schema: Obj, value: Any, path: str, report: SchemaReport) -> Any:
    """Return ``value`` with unknown fields pruned, recording unknown fields and invalid values.

    A small structural-schema validator: type, properties, required, items,
    additionalProperties, enum, x-kubernetes-preserve-unknown-fields and
    x-kubernetes-int-or-string -- what the training-operator CRDs use.
    """
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or _type_ok("integer", value)):
            report.invalid(path, "FieldValueTypeInvalid", _type_msg(path, value, "integer or string"))
        return value
    expected = schema.get("type")
    if expected and not _type_ok(expected, value):
        report.invalid(path, "FieldValueTypeInvalid", _type_msg(path, value, expected))
        return value
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(json.dumps(v) for v in schema["enum"])
        report.invalid(
            path, "FieldValueNotSupported", f"Unsupported value: {json.dumps(value)}: supported values: {supported}"
        )
    if isinstance(value, dict):
        return _check_object(schema, value, path, report)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune_and_validate(schema["items"], item, f"{path}[{i}]", report) for i, item in enumerate(value)]
    return value


def _check_object(schema: Obj, value: Obj, path: str, report: SchemaReport) -> Obj:
    props: Obj = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    out: Obj = {}
    for key, item in value.items():
        child = f"{path}.{key}" if path else key
        sub = props.get(key)
        if sub is None and isinstance(additional, dict):
            sub = additional
        if item is None and not (sub or {}).get("nullable"):
            continue  # the apiserver drops nulls in non-nullable fields before validating
        if sub is not None:
            out[key] = prune_and_validate(sub, item, child, report)
        elif preserve or additional is True or (not props and expected_free(schema)):
            out[key] = item
        else:
            report.unknown.append(child)
    for req in schema.get("required") or []:
        if req not in value or value[req] is None:
            report.invalid(f"{path}.{req}" if path else req, "FieldValueRequired", "Required value")
    return out


def expected_free(schema: Obj) -> bool:
    """``type: object`` with no properties and no additionalProperties keeps its content (e.g. metadata)."""
    return "properties" not in schema and "additionalProperties" not in schema and schema.get("type") == "object"


def _type_msg(path: str, value: Any, expected: str) -> str:
    got = _json_type(value)
    return f'Invalid value: "{got}": {path} in body must be of type {expected}: "{got}"'


@dataclass
class CRD:
    group: str
    plural: str
    kind: str
    list_kind: str
    namespaced: bool
    schemas: dict[str, Obj]  # served version -> openAPIV3Schema


# --------------------------------------------------------------------------- faults and the request log


@dataclass
class Fault:
    """Something to do instead of (or before) answering a request."""

    kind: str  # "status" | "drop" | "delay" | "stall_after"
    code: int = 0
    reason: str = ""
    message: str = ""
    retry_after: float | None = None
    seconds: float = 0.0

    @classmethod
    def status(cls, code: int, reason: str, message: str, retry_after: float | None = None) -> Fault:
        return cls("status", code=code, reason=reason, message=message, retry_after=retry_after)

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection without a response (the client sees RemoteDisconnected/ProtocolError)."""
        return cls("drop")

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        """Sleep, then answer normally: for read-timeout tests."""
        return cls("delay", seconds=seconds)

    @classmethod
    def stall_after(cls, seconds: float) -> Fault:
        """Do the request, then sleep before answering: the change is made, the client may never hear of it."""
        return cls("stall_after", seconds=seconds)

    # The common ones, with the messages a real EKS control plane sends.
    @classmethod
    def internal_error(cls, message: str = "Internal error occurred: etcdserver: request timed out") -> Fault:
        return cls.status(500, "InternalError", message)

    @classmethod
    def unavailable(cls, message: str = "the server is currently unable to handle the request") -> Fault:
        return cls.status(503, "ServiceUnavailable", message)

    @classmethod
    def too_many_requests(cls, retry_after: float = 1) -> Fault:
        return cls.status(429, "TooManyRequests", "Too many requests, please try again later.", retry_after)

    @classmethod
    def unauthorized(cls) -> Fault:
        return cls.status(401, "Unauthorized", "Unauthorized")

    @classmethod
    def forbidden(
        cls,
        name: str = "x",
        verb: str = "get",
        resource: str = "pytorchjobs",
        group: str = "kubeflow.org",
        namespace: str = "ml-training",
        user: str = "arn:aws:sts::123456789012:assumed-role/jobsync/fn",
    ) -> Fault:
        qualified = f"{resource}.{group}" if group else resource
        message = (
            f'{qualified} "{name}" is forbidden: User "{user}" cannot {verb} resource "{resource}" '
            f'in API group "{group}" in the namespace "{namespace}"'
        )
        return cls.status(403, "Forbidden", message)


@dataclass
class _Injection:
    fault: Fault
    method: str | None
    path_contains: str | None
    times: int


@dataclass
class RequestRecord:
    method: str
    path: str
    query: dict[str, str]
    status: int | None  # None when the connection was dropped
    verb: str | None  # Kubernetes RBAC verb
    api_group: str | None
    resource: str | None  # plural, or plural/subresource
    namespace: str | None
    name: str | None
    body: Any = None


def rbac_verb(method: str, route: Route, watch: bool) -> str:
    if method == "GET":
        if watch:
            return "watch"
        return "get" if route.name else "list"
    if method == "DELETE":
        return "delete" if route.name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


# --------------------------------------------------------------------------- TLS


def _self_signed(tmp: Path) -> tuple[bytes, Path, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1/localhost signed by it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)
    validity = (now - dt.timedelta(minutes=5), now + dt.timedelta(days=1))

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(name("kubeapi-emulator-ca"))
        .issuer_name(name("kubeapi-emulator-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity[0])
        .not_valid_after(validity[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("kube-apiserver"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(validity[0])
        .not_valid_after(validity[1])
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "server.crt", tmp / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return ca_cert.public_bytes(serialization.Encoding.PEM), cert_path, key_path


# --------------------------------------------------------------------------- the server


@dataclass
class WatchEvent:
    rv: int
    type: str
    key: Key
    obj: Obj


class KubeAPI:
    """The emulated API server: an object store plus the HTTP front end."""

    def __init__(self, clock: Callable[[], float] = _default_clock, tls: bool = False) -> None:
        self.clock = clock
        self.tls = tls
        self.accepted_tokens: Callable[[str], bool] | set[str] | None = None
        self.strict_resources = False
        self.watch_real_cap_seconds: float | None = None
        # Set by a harness on virtual time: advances that clock by N seconds
        # while a watch waits for events, so watches end on virtual time.
        self.virtual_watch: Callable[[float], None] | None = None
        self.requests: list[RequestRecord] = []
        self.ca_pem: bytes | None = None
        self.lock = threading.RLock()  # guards the store; the operator simulator holds it across a job's update
        self._changed = threading.Condition(self.lock)
        self._store: dict[Key, Obj] = {}
        self._logs: dict[tuple[str, str, str], str] = {}
        self._crds: dict[tuple[str, str], CRD] = {}
        self._kinds: dict[tuple[str, str], str] = {}
        self._events: deque[WatchEvent] = deque(maxlen=2000)
        self._rv = 0
        self._faults: list[_Injection] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._stopping = False

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> KubeAPI:
        ssl_context = None
        if self.tls:
            self._tmp = tempfile.TemporaryDirectory(prefix="kubeapi-")
            self.ca_pem, cert, key = _self_signed(Path(self._tmp.name))
            ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ssl_context.load_cert_chain(cert, key)
        self._stopping = False
        self._server = _Server(("127.0.0.1", 0), _Handler, self, ssl_context)
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

    # ----------------------------------------------------------------- test-facing store API

    def register_crd(self, crd: Obj) -> None:
        """Serve a CustomResourceDefinition (the parsed YAML): its kind and its schema for validation."""
        spec = crd["spec"]
        schemas = {
            v["name"]: (v.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
            for v in spec["versions"]
            if v.get("served", True)
        }
        names = spec["names"]
        info = CRD(
            spec["group"],
            names["plural"],
            names["kind"],
            names.get("listKind", names["kind"] + "List"),
            spec.get("scope", "Namespaced") == "Namespaced",
            schemas,
        )
        with self.lock:
            self._crds[(info.group, info.plural)] = info

    def create_namespace(self, name: str) -> Obj:
        with self.lock:
            existing = self._store.get(("", "namespaces", "", name))
            if existing:
                return copy.deepcopy(existing)
            obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "spec": {}}
            obj["status"] = {"phase": "Active"}
            return self._create(Route("", "v1", "namespaces", None), obj)

    def put(self, path_or_key: str | tuple[str, ...], obj: Obj) -> Obj:
        """Create or replace an object directly, status included (creates the namespace if needed)."""
        route = self._route(path_or_key, obj)
        with self.lock:
            if route.namespace:
                self.create_namespace(route.namespace)
            if route.key in self._store:
                return self._write(route, copy.deepcopy(obj), keep_status=False)
            return self._create(route, copy.deepcopy(obj))

    def get(self, path_or_key: str | tuple[str, ...]) -> Obj | None:
        route = self._route(path_or_key)
        with self.lock:
            obj = self._store.get(route.key)
            return copy.deepcopy(obj) if obj else None

    def delete(self, path_or_key: str | tuple[str, ...], propagation: str = "Background") -> Obj | None:
        route = self._route(path_or_key)
        with self.lock:
            if route.key not in self._store:
                return None
            return self._delete(route, propagation)

    def update_status(self, path_or_key: str | tuple[str, ...], status: Obj, uid: str | None = None) -> Obj | None:
        """Replace ``.status`` of an existing object; a no-op (None) when it is gone or its uid differs."""
        route = self._route(path_or_key)
        with self.lock:
            current = self._store.get(route.key)
            if current is None or (uid and current["metadata"].get("uid") != uid):
                return None
            new = copy.deepcopy(current)
            new["status"] = copy.deepcopy(status)
            return self._write(route, new, keep_status=False)

    def objects(self, group: str, version: str, plural: str, namespace: str | None = None) -> list[Obj]:
        """Every stored object of a resource, in one namespace or (None) all of them, sorted by name."""
        with self.lock:
            items = [
                copy.deepcopy(o)
                for (g, p, ns, _), o in self._store.items()
                if g == group and p == plural and (namespace is None or ns == namespace)
            ]
        return sorted(items, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))

    def set_pod_log(self, namespace: str, pod: str, container: str, text: str) -> None:
        with self.lock:
            self._logs[(namespace, pod, container)] = text

    def inject(self, fault: Fault, method: str | None = None, path_contains: str | None = None, times: int = 1) -> None:
        """Queue a fault for the next ``times`` requests matching method and path substring."""
        with self.lock:
            self._faults.append(_Injection(fault, method.upper() if method else None, path_contains, times))

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

    @property
    def resource_version(self) -> int:
        return self._rv

    # ----------------------------------------------------------------- store internals (lock held)

    def _route(self, path_or_key: str | tuple[str, ...], obj: Obj | None = None) -> Route:
        if isinstance(path_or_key, str):
            route = parse_path(path_or_key)
            if route is None:
                raise ValueError(f"not a resource path: {path_or_key}")
            if route.name is None and obj is not None:
                route = Route(route.group, route.version, route.plural, route.namespace, obj["metadata"]["name"])
            return route
        return route_from_key(path_or_key)

    def kind_of(self, route: Route) -> str | None:
        crd = self._crds.get((route.group, route.plural))
        if crd:
            return crd.kind
        if not route.group:
            return CORE_KINDS.get(route.plural)
        return self._kinds.get((route.group, route.plural))

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _record(self, kind: str, route: Route, obj: Obj) -> None:
        self._events.append(WatchEvent(int(obj["metadata"]["resourceVersion"]), kind, route.key, copy.deepcopy(obj)))
        self._changed.notify_all()

    def _create(self, route: Route, obj: Obj) -> Obj:
        meta = obj.setdefault("metadata", {})
        if route.namespace:
            meta["namespace"] = route.namespace
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = rfc3339(self.clock())
        meta["resourceVersion"] = self._next_rv()
        meta["generation"] = 1
        if obj.get("kind") and route.group:
            self._kinds.setdefault((route.group, route.plural), obj["kind"])
        key = (route.group, route.plural, route.namespace or "", meta["name"])
        self._store[key] = obj
        self._record("ADDED", Route(route.group, route.version, route.plural, route.namespace, meta["name"]), obj)
        return copy.deepcopy(obj)

    def _write(self, route: Route, new: Obj, keep_status: bool) -> Obj:
        """Replace a stored object, keeping what clients cannot change."""
        old = self._store[route.key]
        meta = new.setdefault("metadata", {})
        for k in ("uid", "creationTimestamp", "name", "namespace"):
            if k in old["metadata"]:
                meta[k] = old["metadata"][k]
        if keep_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        generation = old["metadata"].get("generation", 1)
        meta["generation"] = generation + 1 if _spec_part(new) != _spec_part(old) else generation
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        if new == old:
            return copy.deepcopy(old)  # a no-op write does not bump resourceVersion, as on a real server
        meta["resourceVersion"] = self._next_rv()
        self._store[route.key] = new
        self._record("MODIFIED", route, new)
        return copy.deepcopy(new)

    def _delete(self, route: Route, propagation: str) -> Obj:
        obj = self._store.pop(route.key)
        deleted = copy.deepcopy(obj)
        deleted["metadata"]["resourceVersion"] = self._next_rv()
        self._record("DELETED", route, deleted)
        if route.plural == "namespaces" and not route.group:
            for key in [k for k in self._store if k[2] == route.name]:
                self._delete(Route(key[0], "v1", key[1], key[2], key[3]), "Background")
        elif propagation in ("Background", "Foreground"):
            uid = obj["metadata"].get("uid")
            owned = [
                k
                for k, o in self._store.items()
                if any(ref.get("uid") == uid for ref in o.get("metadata", {}).get("ownerReferences") or [])
            ]
            for key in owned:
                if key in self._store:
                    self._delete(Route(key[0], "v1", key[1], key[2] or None, key[3]), propagation)
        if route.plural == "pods" and not route.group:
            for log_key in [k for k in self._logs if k[:2] == (route.namespace, route.name)]:
                del self._logs[log_key]
        return deleted

    # ----------------------------------------------------------------- validation

    def _validate(self, route: Route, obj: Obj, mode: str, name: str) -> list[str]:
        """Check ``obj`` against its CRD schema in place; return the warnings to send."""
        self._check_name(route, name, self.kind_of(route) or obj.get("kind") or route.plural)
        crd = self._crds.get((route.group, route.plural))
        if crd is None or route.plural == "namespaces":
            return []
        schema = crd.schemas.get(route.version)
        if schema is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        report = SchemaReport()
        meta = obj.get("metadata")
        body = {k: v for k, v in obj.items() if k != "metadata"}
        pruned = prune_and_validate({**schema, "properties": {**schema.get("properties", {})}}, body, "", report)
        # metadata is ObjectMeta: the server validates it itself, the CRD schema never prunes it
        report.unknown = [u for u in report.unknown if not u.startswith("metadata")]
        if report.unknown and mode == "Strict":
            fields = ", ".join(f'unknown field "{u}"' for u in report.unknown)
            raise ApiError(
                400,
                "BadRequest",
                f'{crd.kind} in version "{route.version}" cannot be handled as a {crd.kind}: '
                f"strict decoding error: {fields}",
            )
        if report.causes:
            raise self._invalid(route, crd.kind, name, report.causes)
        obj.clear()
        obj.update(pruned)
        if meta is not None:
            obj["metadata"] = meta
        if mode == "Warn":
            return [f'unknown field "{u}"' for u in report.unknown]
        return []

    def _check_name(self, route: Route, name: str, kind: str) -> None:
        pattern, msg = (
            (DNS1123_LABEL, LABEL_MSG) if route.plural == "namespaces" else (DNS1123_SUBDOMAIN, SUBDOMAIN_MSG)
        )
        limit = 63 if route.plural == "namespaces" else 253
        if not name:
            cause = {"reason": "FieldValueRequired", "message": "Required value: name or generateName is required"}
            raise self._invalid(route, kind, name, [{**cause, "field": "metadata.name"}])
        if not pattern.match(name) or len(name) > limit:
            body = f"Invalid value: {json.dumps(name)}: {msg}"
            if len(name) > limit:
                body = f"Invalid value: {json.dumps(name)}: must be no more than {limit} characters"
            cause = {"reason": "FieldValueInvalid", "message": body, "field": "metadata.name"}
            raise self._invalid(route, kind, name, [cause])

    @staticmethod
    def _invalid(route: Route, kind: str, name: str, causes: list[Obj]) -> ApiError:
        errors = [f"{c['field']}: {c['message']}" for c in causes]
        text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        qualified = f"{kind}.{route.group}" if route.group else kind
        details = {"name": name, "group": route.group, "kind": kind, "causes": causes}
        return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {text}', details)

    # ----------------------------------------------------------------- REST verbs (called by the handler)

    def _not_found(self, route: Route, name: str | None = None) -> ApiError:
        name = name or route.name or ""
        details = {"name": name, "group": route.group, "kind": route.plural}
        return ApiError(404, "NotFound", f'{route.qualified} "{name}" not found', details)

    def _check_served(self, route: Route) -> None:
        if route.group and self.strict_resources and (route.group, route.plural) not in self._crds:
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        if route.subresource not in (None, "status", "log"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        if route.subresource == "log" and (route.group or route.plural != "pods"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        if route.namespace and ("", "namespaces", "", route.namespace) not in self._store:
            raise ApiError(
                404,
                "NotFound",
                f'namespaces "{route.namespace}" not found',
                {"name": route.namespace, "kind": "namespaces"},
            )

    def handle_create(self, route: Route, body: Obj, mode: str) -> tuple[Obj, list[str]]:
        with self.lock:
            self._check_served(route)
            if route.name:
                raise ApiError(
                    405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
                )
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "the object provided is unrecognized (must be of type object)")
            meta = body.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                alphabet = "bcdfghjklmnpqrstvwxz2456789"
                meta["name"] = meta["generateName"] + "".join(secrets.choice(alphabet) for _ in range(5))
            name = meta.get("name") or ""
            warnings = self._validate(route, body, mode, name)
            if route.namespace and meta.get("namespace") and meta["namespace"] != route.namespace:
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            full = Route(route.group, route.version, route.plural, route.namespace, name)
            if full.key in self._store:
                details = {"name": name, "group": route.group, "kind": route.plural}
                raise ApiError(409, "AlreadyExists", f'{route.qualified} "{name}" already exists', details)
            if route.group:
                body.pop("status", None)  # the status subresource ignores .status on create
            return self._create(full, body), warnings

    def handle_get(self, route: Route) -> Obj:
        with self.lock:
            self._check_served(route)
            obj = self._store.get(route.key)
            if obj is None:
                raise self._not_found(route)
            return copy.deepcopy(obj)

    def handle_list(self, route: Route, query: dict[str, str]) -> Obj:
        labels, fields = Selector(query.get("labelSelector")), FieldSelector(query.get("fieldSelector"))
        with self.lock:
            self._check_served(route)
            items = [
                copy.deepcopy(o)
                for o in self._scope(route)
                if labels.matches(o["metadata"].get("labels")) and fields.matches(o)
            ]
            kind = self.kind_of(route)
            list_kind = kind + "List" if kind else "List"
            crd = self._crds.get((route.group, route.plural))
            if crd:
                list_kind = crd.list_kind
            rv = str(self._rv)
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return {"kind": list_kind, "apiVersion": route.api_version, "metadata": {"resourceVersion": rv}, "items": items}

    def _scope(self, route: Route) -> list[Obj]:
        return [
            o
            for (g, p, ns, _), o in self._store.items()
            if g == route.group and p == route.plural and (route.namespace is None or ns == route.namespace)
        ]

    def handle_update(self, route: Route, body: Obj, mode: str, patch_type: str | None) -> tuple[Obj, list[str]]:
        with self.lock:
            self._check_served(route)
            current = self._store.get(route.key)
            if current is None:
                raise self._not_found(route)
            if patch_type is None:
                new = body
                if not isinstance(new, dict):
                    raise ApiError(400, "BadRequest", "the object provided is unrecognized (must be of type object)")
                sent_rv = (new.get("metadata") or {}).get("resourceVersion")
                if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
                    raise ApiError(
                        409,
                        "Conflict",
                        f'Operation cannot be fulfilled on {route.qualified} "{route.name}": the object has been '
                        "modified; please apply your changes to the latest version and try again",
                        {"name": route.name, "group": route.group, "kind": route.plural},
                    )
                name = (new.get("metadata") or {}).get("name")
                if name and name != route.name:
                    raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
            elif patch_type == "json":
                if not isinstance(body, list):
                    raise ApiError(400, "BadRequest", "json patch must be a list of operations")
                new = json_patch(current, body)
            else:
                new = merge_patch(current, body)
            new = copy.deepcopy(new)
            new.setdefault("metadata", {})["name"] = route.name
            warnings = self._validate(route, new, mode, route.name or "")
            if route.subresource == "status":
                # The status subresource only ever changes .status.
                status = new.get("status")
                new = copy.deepcopy(current)
                if status is None:
                    new.pop("status", None)
                else:
                    new["status"] = status
                return self._write(route, new, keep_status=False), warnings
            return self._write(route, new, keep_status=True), warnings

    def handle_delete(self, route: Route, query: dict[str, str], body: Any) -> Obj:
        propagation = query.get("propagationPolicy")
        if isinstance(body, dict) and body.get("propagationPolicy"):
            propagation = body["propagationPolicy"]
        if isinstance(body, dict) and body.get("orphanDependents") is True:
            propagation = "Orphan"
        with self.lock:
            self._check_served(route)
            if route.key not in self._store:
                raise self._not_found(route)
            preconditions = (body.get("preconditions") or {}) if isinstance(body, dict) else {}
            stored_uid = self._store[route.key]["metadata"].get("uid")
            if preconditions.get("uid") and preconditions["uid"] != stored_uid:
                raise ApiError(
                    409,
                    "Conflict",
                    f"Precondition failed: UID in precondition: {preconditions['uid']}, "
                    f"UID in object meta: {stored_uid}",
                    {"name": route.name, "group": route.group, "kind": route.plural},
                )
            return self._delete(route, propagation or "Background")

    def handle_log(self, route: Route, query: dict[str, str]) -> str:
        with self.lock:
            self._check_served(route)
            pod = self._store.get((route.group, "pods", route.namespace or "", route.name or ""))
            if pod is None:
                raise self._not_found(Route("", "v1", "pods", route.namespace, route.name))
            containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
            container = query.get("container") or (containers[0] if len(containers) == 1 else None)
            if container is None:
                if not containers:
                    container = ""
                else:
                    raise ApiError(
                        400,
                        "BadRequest",
                        f"a container name must be specified for pod {route.name}, choose one of: {containers}",
                    )
            elif containers and container not in containers:
                raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {route.name}")
            suffix = ":previous" if _truthy(query.get("previous")) else ""
            text = self._logs.get((route.namespace or "", route.name or "", container + suffix))
            if text is None:
                text = self._logs.get((route.namespace or "", route.name or "", container), "")
        if query.get("tailLines"):
            lines = text.splitlines(keepends=True)
            n = int(query["tailLines"])
            text = "".join(lines[-n:]) if n > 0 else ""
        if query.get("limitBytes"):
            text = text.encode()[: int(query["limitBytes"])].decode(errors="ignore")
        return text

    # ----------------------------------------------------------------- watch

    def watch_events(self, route: Route, query: dict[str, str]) -> Iterable[Obj | None]:
        """Yield watch events (None = heartbeat, so the handler can notice a stop) until the timeout."""
        labels, fields = Selector(query.get("labelSelector")), FieldSelector(query.get("fieldSelector"))
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        if self.watch_real_cap_seconds is not None:
            timeout = min(timeout, self.watch_real_cap_seconds) if timeout is not None else self.watch_real_cap_seconds
        deadline = time.monotonic() + timeout if timeout is not None else None
        if self.virtual_watch is not None:
            # On virtual time the watch lasts timeoutSeconds of the virtual clock.
            virtual_deadline = self.clock() + (timeout if timeout is not None else 1800.0)
            deadline = None

        def wanted(key: Key, obj: Obj) -> bool:
            in_scope = key[0] == route.group and key[1] == route.plural
            in_ns = route.namespace is None or key[2] == route.namespace
            return in_scope and in_ns and labels.matches(obj["metadata"].get("labels")) and fields.matches(obj)

        rv_text = query.get("resourceVersion")
        pending: list[Obj] = []
        with self.lock:
            self._check_served(route)
            if rv_text and rv_text != "0":
                cursor = int(rv_text)
                oldest = self._events[0].rv if self._events else self._rv + 1
                if cursor < oldest - 1 and cursor < self._rv:
                    expired = status_body(410, "Expired", f"too old resource version: {cursor} ({oldest - 1})")
                    yield {"type": "ERROR", "object": expired}
                    return
            else:
                cursor = self._rv
                for key, obj in sorted(self._store.items(), key=lambda kv: int(kv[1]["metadata"]["resourceVersion"])):
                    if wanted(key, obj):
                        pending.append({"type": "ADDED", "object": copy.deepcopy(obj)})
        yield None  # checks passed: the handler may send the 200 now
        yield from pending
        while True:
            with self._changed:
                events = [e for e in self._events if e.rv > cursor]
                if not events and not self._stopping and self.virtual_watch is None:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return
                    self._changed.wait(timeout=min(remaining, 1.0) if remaining is not None else 1.0)
                    events = [e for e in self._events if e.rv > cursor]
                if self._stopping:
                    return
            if not events and self.virtual_watch is not None:
                # Virtual time: move the clock on (the operator simulator acts on it) instead of sleeping.
                remaining = virtual_deadline - self.clock()
                if remaining <= 0:
                    return
                self.virtual_watch(min(remaining, VIRTUAL_WATCH_STEP_SECONDS))
                yield None
                continue
            for event in events:
                cursor = event.rv
                if wanted(event.key, event.obj):
                    yield {"type": event.type, "object": copy.deepcopy(event.obj)}
            if not events:
                yield None
            if deadline is not None and time.monotonic() >= deadline:
                return

    # ----------------------------------------------------------------- faults, auth, log

    def take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for inj in self._faults:
                if (inj.method is None or inj.method == method) and (
                    inj.path_contains is None or inj.path_contains in path
                ):
                    inj.times -= 1
                    if inj.times <= 0:
                        self._faults.remove(inj)
                    return inj.fault
        return None

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


def _truthy(value: str | None) -> bool:
    """Go's strconv.ParseBool, which the apiserver uses for query flags (the client sends ``True``)."""
    return value in ("1", "t", "T", "true", "TRUE", "True")


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


# --------------------------------------------------------------------------- HTTP plumbing


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(
        self, addr: tuple[str, int], handler: type[BaseHTTPRequestHandler], api: KubeAPI, ctx: ssl.SSLContext | None
    ) -> None:
        self.api = api
        self.ssl_context = ctx
        super().__init__(addr, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up mid-answer (timeouts, dropped watches) are normal here, not worth a traceback.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    def finish_request(self, request: Any, client_address: Any) -> None:
        # The TLS handshake happens here, in the connection's own thread, so a slow client cannot stall accept().
        if self.ssl_context is None:
            super().finish_request(request, client_address)
            return
        try:
            tls_sock = self.ssl_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            super().finish_request(tls_sock, client_address)
        finally:
            with contextlib.suppress(OSError):
                tls_sock.close()


class _Handler(BaseHTTPRequestHandler):
    _record: RequestRecord
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes: avoid the 40 ms delayed-ACK stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean; api.requests is the log

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    # ----------------------------------------------------------------- dispatch

    def _serve(self, method: str) -> None:
        api = self.server.api
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        raw = self._read_body()
        route = parse_path(split.path)
        watch = method == "GET" and _truthy(query.get("watch")) and route is not None and not route.name
        self._record = record = RequestRecord(
            method,
            split.path,
            query,
            None,
            rbac_verb(method, route, watch) if route else None,
            route.group if route else None,
            route.rbac_resource if route else None,
            route.namespace if route else None,
            route.name if route else None,
        )
        try:
            record.body = json.loads(raw) if raw else None
        except ValueError:
            record.body = raw.decode(errors="replace")
        api.log_request(record)

        fault = api.take_fault(method, self.path)
        if fault and fault.kind == "drop":
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self._stall = fault.seconds if fault and fault.kind == "stall_after" else 0.0
        if fault and fault.kind == "delay":
            time.sleep(fault.seconds)
        elif fault and fault.kind != "stall_after":
            headers = {"Retry-After": str(int(fault.retry_after))} if fault.retry_after is not None else {}
            self._send_json(fault.code, status_body(fault.code, fault.reason, fault.message), headers)
            return

        if not api.authorized(self.headers.get("Authorization")):
            self._send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
            return
        try:
            self._dispatch(method, split.path, route, query, raw, watch)
        except ApiError as err:
            self._send_json(err.code, err.body())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _dispatch(
        self, method: str, path: str, route: Route | None, query: dict[str, str], raw: bytes, watch: bool
    ) -> int:
        api = self.server.api
        if route is None:
            return self._non_resource(method, path)
        mode = query.get("fieldValidation", "")
        body = self._json(raw) if raw else None
        if watch:
            return self._stream_watch(route, query)
        if method == "GET" and route.subresource == "log":
            text = api.handle_log(route, query)
            self._send(200, text.encode(), "text/plain")
            return 200
        if method == "GET":
            result = api.handle_get(route) if route.name else api.handle_list(route, query)
            return self._send_json(200, result)
        if method == "POST":
            obj, warnings = api.handle_create(route, body or {}, mode)
            return self._send_json(201, obj, warnings=warnings)
        if method in ("PUT", "PATCH") and route.name:
            patch_type = None
            if method == "PATCH":
                ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                patch_type = {
                    "application/merge-patch+json": "merge",
                    "application/strategic-merge-patch+json": "merge",
                    "application/json-patch+json": "json",
                }.get(ctype)
                if patch_type is None:
                    raise ApiError(
                        415,
                        "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types include: "
                        "application/json-patch+json, application/merge-patch+json",
                    )
            obj, warnings = api.handle_update(route, body, mode, patch_type)
            return self._send_json(200, obj, warnings=warnings)
        if method == "DELETE" and route.name:
            return self._send_json(200, api.handle_delete(route, query, body))
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def _non_resource(self, method: str, path: str) -> int:
        if method == "GET" and path in ("/healthz", "/readyz", "/livez"):
            self._send(200, b"ok", "text/plain")
            return 200
        if method == "GET" and path == "/version":
            return self._send_json(200, {"major": "1", "minor": "30", "gitVersion": "v1.30.0-kubeapi-emulator"})
        raise ApiError(404, "NotFound", "the server could not find the requested resource", {})

    # ----------------------------------------------------------------- I/O helpers

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    @staticmethod
    def _json(raw: bytes) -> Any:
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ApiError(400, "BadRequest", f"the object provided is unrecognized: {exc}") from exc

    def _send(self, code: int, payload: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self._record.status = code  # before any byte goes out: the client may read the log right after
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(
        self, code: int, body: Any, headers: dict[str, str] | None = None, warnings: list[str] | None = None
    ) -> int:
        self._record.status = code  # before any byte goes out: the client may read the log right after
        if getattr(self, "_stall", 0.0):
            time.sleep(self._stall)  # Fault.stall_after: the request is done, its answer is late
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        payload = json.dumps(body).encode()
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        for warning in warnings or []:
            self.send_header("Warning", f"299 - {json.dumps(warning)}")
        self.end_headers()
        self.wfile.write(payload)
        return code

    def _stream_watch(self, route: Route, query: dict[str, str]) -> int:
        events = iter(self.server.api.watch_events(route, query))
        first = next(events, None)  # raises ApiError (e.g. missing namespace) before the 200 goes out
        self._record.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if first is not None:
                self._chunk(json.dumps(first).encode() + b"\n")
            virtual = self.server.api.virtual_watch is not None
            for event in events:
                # Nothing goes out on idle ticks: the Python client turns a blank line into a None event.
                if event is not None:
                    self._chunk(json.dumps(event).encode() + b"\n")
                # On virtual time the watch moves the clock itself: it must stop as soon as the
                # client has hung up, or the clock runs on past the moment the client reacted.
                # After an event, give the client a moment (real time) to react and hang up.
                if virtual and self._client_left(VIRTUAL_WATCH_REACT_SECONDS if event is not None else 0):
                    break
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        return 200

    def _client_left(self, wait: float) -> bool:
        """Whether the client closed the connection (readable with nothing to read), waiting up to ``wait`` s."""
        readable, _, _ = select.select([self.connection], [], [], wait)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (ValueError, OSError):  # TLS sockets cannot peek: readable there means closing
            return True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
