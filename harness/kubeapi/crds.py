"""CustomResourceDefinitions: what a CRD manifest serves, and validation against its structural schema."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.kubeapi.errors import ApiError, invalid
from harness.kubeapi.routes import Obj, Route


@dataclass
class CRD:
    group: str
    plural: str
    kind: str
    list_kind: str
    namespaced: bool
    schemas: dict[str, Obj]  # served version -> openAPIV3Schema


def crd_from_manifest(crd: Obj) -> CRD:
    """What a CustomResourceDefinition (the parsed YAML) serves: its names, scope and per-version schemas."""
    spec = crd["spec"]
    schemas = {
        v["name"]: (v.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
        for v in spec["versions"]
        if v.get("served", True)
    }
    names = spec["names"]
    return CRD(
        spec["group"],
        names["plural"],
        names["kind"],
        names.get("listKind", names["kind"] + "List"),
        spec.get("scope", "Namespaced") == "Namespaced",
        schemas,
    )


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


def validate_schema(crd: CRD, route: Route, obj: Obj, mode: str, name: str) -> list[str]:
    """Check ``obj`` against the CRD schema of ``route.version`` in place (pruning unknown fields).

    ``mode`` is the ``fieldValidation`` query parameter; returns the warnings to send.
    """
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
        raise invalid(route, crd.kind, name, report.causes)
    obj.clear()
    obj.update(pruned)
    if meta is not None:
        obj["metadata"] = meta
    if mode == "Warn":
        return [f'unknown field "{u}"' for u in report.unknown]
    return []
