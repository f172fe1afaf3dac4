"""PATCH bodies: JSON merge patch (RFC 7396, also used for strategic merge) and JSON patch (RFC 6902)."""

from __future__ import annotations

import copy
from typing import Any

from harness.kubeapi.errors import ApiError
from harness.kubeapi.routes import Obj


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
