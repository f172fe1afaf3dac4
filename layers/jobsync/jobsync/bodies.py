"""Typed views over the Kubernetes objects jobsync reads: metadata, owner references, conditions.

The API answers in plain JSON, and an object jobsync did not create may have
any shape: a field missing, null, or of another type. Each view reads its
object once and never raises: what is missing or malformed reads as empty
(``""``, ``{}``, no references), so a caller asks ``meta(obj).uid`` instead of
digging through ``(obj.get("metadata") or {})`` wherever it needs a field.
Whether such an object can be judged at all is the evaluator's business
(``jobsync.evaluation.evaluate``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    return str(value) if value is not None else ""


def _labels(value: Any) -> dict[str, Any]:
    """A label or annotation map (the API sends strings; a test's YAML may not), as a dict."""
    return {str(k): v for k, v in _mapping(value).items()}


@dataclass(frozen=True)
class OwnerRef:
    """One entry of ``metadata.ownerReferences``."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False

    @property
    def group(self) -> str:
        """The API group ("" for the core group's ``v1``): an owner is the same object whatever its version."""
        return self.api_version.rpartition("/")[0]

    @classmethod
    def read(cls, ref: Mapping[str, Any]) -> OwnerRef:
        return cls(
            str(ref.get("apiVersion") or ""),
            str(ref.get("kind") or ""),
            str(ref.get("name") or ""),
            str(ref.get("uid") or ""),
            ref.get("controller") is True,
        )


@dataclass(frozen=True)
class Meta:
    """An object's ``metadata``: its identity, labels, annotations, times (as sent) and owners."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: Mapping[str, Any] = field(default_factory=dict)
    annotations: Mapping[str, Any] = field(default_factory=dict)
    creation_timestamp: Any = None
    deletion_timestamp: Any = None
    owners: tuple[OwnerRef, ...] = ()

    @classmethod
    def read(cls, metadata: Any) -> Meta:
        meta = _mapping(metadata)
        refs = meta.get("ownerReferences")
        return cls(
            name=_text(meta.get("name")),
            namespace=_text(meta.get("namespace")),
            uid=_text(meta.get("uid")),
            resource_version=_text(meta.get("resourceVersion")),
            labels=_labels(meta.get("labels")),
            annotations=_labels(meta.get("annotations")),
            creation_timestamp=meta.get("creationTimestamp"),
            deletion_timestamp=meta.get("deletionTimestamp"),
            owners=tuple(OwnerRef.read(r) for r in (refs if isinstance(refs, list) else []) if isinstance(r, Mapping)),
        )

    @property
    def controller(self) -> OwnerRef | None:
        """The reference with ``controller: true`` (and a uid), if any: the one owner that manages the object."""
        return next((ref for ref in self.owners if ref.controller and ref.uid), None)


def meta(obj: Any) -> Meta:
    """The metadata of ``obj`` (an object as the API sends it, or anything else: then empty)."""
    return Meta.read(_mapping(obj).get("metadata"))


@dataclass(frozen=True)
class Condition:
    """One entry of a ``status.conditions`` list, as the Kubernetes conventions shape it."""

    type: str
    status: Any
    reason: str = ""
    message: str = ""
    last_transition_time: Any = None

    @property
    def true(self) -> bool:
        """A condition counts only while its status is "True" (YAML 1.1 reads an unquoted True as a boolean)."""
        return self.status in ("True", True)

    @classmethod
    def read(cls, entry: Mapping[str, Any]) -> Condition:
        return cls(
            str(entry.get("type")),
            entry.get("status"),
            _text(entry.get("reason")),
            _text(entry.get("message")),
            entry.get("lastTransitionTime"),
        )


def conditions(status: Any) -> list[Condition]:
    """The well-formed entries of ``status.conditions`` (an object with a string ``type``); the rest is skipped."""
    raw = _mapping(status).get("conditions")
    entries = raw if isinstance(raw, list) else []
    return [Condition.read(c) for c in entries if isinstance(c, Mapping) and isinstance(c.get("type"), str)]
