"""Resource paths: what a URL names (group, version, plural, namespace, name, subresource)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Key = tuple[str, str, str, str]  # (group, plural, namespace or "", name)
Obj = dict[str, Any]


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


def truthy(value: str | None) -> bool:
    """Go's strconv.ParseBool, which the apiserver uses for query flags (the client sends ``True``)."""
    return value in ("1", "t", "T", "true", "TRUE", "True")
