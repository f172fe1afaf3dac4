"""The REST verbs the HTTP handler calls: create, get, list, update/patch, delete, with their checks."""

from __future__ import annotations

import copy
import secrets
from collections.abc import Callable
from typing import Any

from harness.kubeapi.crds import validate_schema
from harness.kubeapi.errors import ApiError, PageNotFound, invalid
from harness.kubeapi.names import check_name, label_causes
from harness.kubeapi.paging import Chunks
from harness.kubeapi.patch import json_patch, merge_patch
from harness.kubeapi.routes import Obj, Route
from harness.kubeapi.selectors import FieldSelector, Selector
from harness.kubeapi.store import Store


class RestVerbs(Store):
    """What each request does to the store, with the apiserver's checks and its Status errors."""

    strict_resources: bool  # 404 for a group/plural no registered CRD serves, as a real server does
    _chunks: Chunks  # the snapshots of LISTs read in chunks
    # Mutating admission, called on every create before validation (as Kueue's webhook suspends a queued job).
    mutators: list[Callable[[Route, Obj], None]]

    def _validate(self, route: Route, obj: Obj, mode: str, name: str) -> list[str]:
        """Check ``obj`` against its CRD schema in place; return the warnings to send."""
        check_name(route, name, self.kind_of(route) or obj.get("kind") or route.plural)
        crd = self._crds.get((route.group, route.plural))
        if crd is None or route.plural == "namespaces":
            return []
        return validate_schema(crd, route, obj, mode, name)

    def _not_found(self, route: Route, name: str | None = None) -> ApiError:
        name = name or route.name or ""
        details = {"name": name, "group": route.group, "kind": route.plural}
        return ApiError(404, "NotFound", f'{route.qualified} "{name}" not found', details)

    def _check_served(self, route: Route) -> None:
        if route.group and self.strict_resources and (route.group, route.plural) not in self._crds:
            raise PageNotFound()  # as the real server answers it (e2e/tests/test_emulator_contract.py)
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
            for mutate in self.mutators:
                mutate(route, body)
            warnings = self._validate(route, body, mode, name)
            causes = label_causes(meta.get("labels"))
            if causes:
                raise invalid(route, self.kind_of(route) or body.get("kind") or route.plural, name, causes)
            if str(meta.get("resourceVersion", "")).isdigit() and int(meta["resourceVersion"]) != 0:
                raise ApiError(500, "InternalError", "resourceVersion should not be set on objects to be created")
            for key in ("deletionTimestamp", "deletionGracePeriodSeconds"):  # rest.BeforeCreate clears them
                meta.pop(key, None)
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
        """A LIST, whole or in chunks (``limit``, ``continue``: harness.kubeapi.paging)."""
        labels, fields = Selector(query.get("labelSelector")), FieldSelector(query.get("fieldSelector"))
        limit = int(query["limit"]) if (query.get("limit") or "").isdigit() else 0
        with self.lock:
            self._check_served(route)
            if query.get("continue"):
                oldest = self._events[0].rv if self._events else self._rv + 1
                rv, chunk, after = self._chunks.next(query["continue"], limit, oldest)
            else:
                matching = [
                    o for o in self._scope(route) if labels.matches(o["metadata"].get("labels")) and fields.matches(o)
                ]
                matching.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
                rv = self._rv
                chunk, after = self._chunks.first(rv, matching, limit)
            items = [copy.deepcopy(o) for o in chunk]
            kind = self.kind_of(route)
            list_kind = kind + "List" if kind else "List"
            crd = self._crds.get((route.group, route.plural))
            if crd:
                list_kind = crd.list_kind
        meta: Obj = {"resourceVersion": str(rv)}
        if after:
            meta["continue"] = after
        return {"kind": list_kind, "apiVersion": route.api_version, "metadata": meta, "items": items}

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
                    # The object's kind here, where other Status details name the plural (as the real server).
                    {"name": route.name, "group": route.group, "kind": self.kind_of(route) or route.plural},
                )
            deleted = self._delete(route, propagation or "Background")
            if not route.group:
                return deleted
            # A custom object deleted outright is answered with a success Status, not the object
            # (as the real server answers it: e2e/tests/test_emulator_contract.py).
            details = {"name": route.name, "group": route.group, "kind": route.plural, "uid": stored_uid}
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
