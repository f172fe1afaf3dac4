"""The object store: objects by key, resourceVersions, generations, owner cascades and the watch event log."""

from __future__ import annotations

import copy
import datetime as dt
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from harness.kubeapi.crds import CRD
from harness.kubeapi.paging import Chunks
from harness.kubeapi.routes import Key, Obj, Route, parse_path, route_from_key

CORE_KINDS = {
    "pods": "Pod",
    "namespaces": "Namespace",
    "configmaps": "ConfigMap",
    "secrets": "Secret",
    "services": "Service",
    "events": "Event",
    "serviceaccounts": "ServiceAccount",
}


def rfc3339(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class WatchEvent:
    rv: int
    type: str
    key: Key
    obj: Obj


class Store:
    """Objects by (group, plural, namespace, name), with what the apiserver keeps for each.

    Every write bumps the one resourceVersion counter and appends a :class:`WatchEvent`
    for the watches. The test-facing methods take ``lock``; the ``_`` ones expect it held.
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.lock = threading.RLock()  # guards the store; the operator simulator holds it across a job's update
        self._changed = threading.Condition(self.lock)
        self._store: dict[Key, Obj] = {}
        self._logs: dict[tuple[str, str, str], str] = {}
        self._crds: dict[tuple[str, str], CRD] = {}
        self._kinds: dict[tuple[str, str], str] = {}
        self._events: deque[WatchEvent] = deque(maxlen=2000)
        self._rv = 0
        self._chunks = Chunks()

    # ----------------------------------------------------------------- test-facing store API

    def create_namespace(self, name: str) -> Obj:
        with self.lock:
            existing = self._store.get(("", "namespaces", "", name))
            if existing:
                return copy.deepcopy(existing)
            obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "spec": {}}
            obj["status"] = {"phase": "Active"}
            return self._create(Route("", "v1", "namespaces", None), obj)

    def put(self, path_or_key: str | tuple[str, ...], obj: Obj, created: float | None = None) -> Obj:
        """Create or replace an object directly, status included (creates the namespace if needed).

        ``created``: the creation time of an object created now, when a simulated controller made it at
        an earlier moment of the clock (a Workload made as its job was).
        """
        route = self._route(path_or_key, obj)
        with self.lock:
            if route.namespace:
                self.create_namespace(route.namespace)
            if route.key in self._store:
                return self._write(route, copy.deepcopy(obj), keep_status=False)
            return self._create(route, copy.deepcopy(obj), created)

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

    def crd(self, group: str, plural: str) -> CRD:
        """The registered CRD that serves ``group``/``plural`` (KeyError when none does)."""
        with self.lock:
            return self._crds[(group, plural)]

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

    def _create(self, route: Route, obj: Obj, created: float | None = None) -> Obj:
        meta = obj.setdefault("metadata", {})
        if route.namespace:
            meta["namespace"] = route.namespace
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = rfc3339(self.clock() if created is None else created)
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
        meta["generation"] = generation + 1 if spec_part(new) != spec_part(old) else generation
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


def spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}
