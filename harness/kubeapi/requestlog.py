"""The request log: one record per request, with the Kubernetes RBAC verb it needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.kubeapi.routes import Route


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
    at: float | None = None  # when it arrived, on the API's clock (the virtual one in the local run)


def rbac_verb(method: str, route: Route, watch: bool) -> str:
    if method == "GET":
        if watch:
            return "watch"
        return "get" if route.name else "list"
    if method == "DELETE":
        return "delete" if route.name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())
