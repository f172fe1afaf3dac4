"""Evaluate one object: check it is something jobsync can judge, then ask its kind's evaluator.

``evaluate`` is the one entry point the CLI, the Lambda handlers and the
tests use. Bad input raises ``EvaluationError`` with a message that names
what is wrong, never a KeyError or TypeError; malformed parts *inside*
``status`` are the evaluators' business and give UNKNOWN (see
the family modules, over ``jobsync.evaluation.conditions``).
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Mapping
from typing import Any

from jobsync.errors import EvaluationError
from jobsync.evaluation import kinds
from jobsync.evaluation.conditions import timestamp_text
from jobsync.evaluation.phase import Evaluation, Phase


def evaluate(obj: Any) -> Evaluation:
    """The phase of ``obj``: a Kubernetes object, or an Azure ML job summary.

    Kubernetes objects need ``apiVersion`` and ``kind`` strings; an Azure ML
    job is ``{"kind": "AzureMLJob", "name": ..., "status": ...}`` with no
    ``apiVersion``. ``metadata``, when present, must be an object. An object
    whose ``metadata.deletionTimestamp`` is set and that has not ended yet is
    STOPPED: it is being deleted and will never finish.

    Raises EvaluationError when ``obj`` is not such an object or its kind is
    not one jobsync knows.
    """
    if not isinstance(obj, Mapping):
        raise EvaluationError(f"expected a JSON object, got {_describe(obj)}")
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise EvaluationError(f"field 'kind' must be a non-empty string, got {_describe(kind)}")
    api_version = obj.get("apiVersion")
    if kind == kinds.AZURE_ML_KIND and api_version is not None:
        raise EvaluationError(f"an {kinds.AZURE_ML_KIND} object has no 'apiVersion' (got {api_version!r})")
    if kind != kinds.AZURE_ML_KIND and (not isinstance(api_version, str) or not api_version):
        raise EvaluationError(f"field 'apiVersion' must be a non-empty string, got {_describe(api_version)}")
    metadata = obj.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise EvaluationError(f"field 'metadata' must be an object, got {_describe(metadata)}")

    spec = kinds.lookup(api_version, kind)
    evaluation = dataclasses.replace(spec.evaluator(obj), kind=kind)

    deleted = timestamp_text(metadata.get("deletionTimestamp")) if metadata else None
    if deleted and not evaluation.terminal:
        was = f"it was {evaluation.phase}: {evaluation.reason}"
        return Evaluation(Phase.STOPPED, "Deleting", f"the object is being deleted; {was}", deleted, kind)
    return evaluation


def unwrap_event(event: Any) -> Any | None:
    """The object inside a Lambda or CLI input, or None when the input says it does not exist.

    Accepted forms:

    - the object itself;
    - ``{"object": <object>}``;
    - what Step Functions' ``eks:call`` returns for a GET of one object,
      ``{"ResponseBody": <object>, "StatusCode": ..., ...}``;
    - and for a list (a GET with a labelSelector),
      ``{"ResponseBody": {"kind": "...List", "items": [...]}}``: no item
      means the job does not exist (None), one item is the job, more is an
      error. List items of built-in kinds carry no ``apiVersion``/``kind``;
      they are taken from the list.

    Anything else is returned as it is, for ``evaluate`` to judge. Raises
    EvaluationError when a wrapper is malformed or there is no object at all
    (``null``), so that None always means "the list was empty".
    """
    if isinstance(event, Mapping) and "kind" not in event and "object" in event:
        event = event["object"]
    if isinstance(event, Mapping) and "kind" not in event and "ResponseBody" in event:
        event = _unwrap_response_body(event["ResponseBody"])
        if event is _NO_ITEMS:
            return None
    if event is None:
        # None means "not found" to the caller; an absent object is bad input instead.
        raise EvaluationError("expected a JSON object, got nothing")
    return event


_NO_ITEMS = object()


def _unwrap_response_body(body: Any) -> Any:
    """The object in an ``eks:call`` ResponseBody, or ``_NO_ITEMS`` for an empty list."""
    if not isinstance(body, Mapping):
        raise EvaluationError(f"field 'ResponseBody' must be an object, got {_describe(body)}")
    list_kind = body.get("kind")
    if "items" not in body or (isinstance(list_kind, str) and not list_kind.endswith("List")):
        return body
    items = body["items"]
    if not isinstance(items, list):
        raise EvaluationError(f"field 'ResponseBody.items' must be a list, got {_describe(items)}")
    if not items:
        return _NO_ITEMS
    if len(items) > 1:
        raise EvaluationError(f"field 'ResponseBody.items' holds {len(items)} objects; expected one job at most")
    item = items[0]
    if isinstance(item, Mapping) and isinstance(list_kind, str):
        # Built-in kinds (batch/v1 JobList) leave apiVersion/kind off their items.
        defaults = {"apiVersion": body.get("apiVersion"), "kind": list_kind.removesuffix("List")}
        item = {**{k: v for k, v in defaults.items() if v}, **item}
    return item


def list_kind_of(event: Any) -> str:
    """The item kind of an ``eks:call`` list response (``PyTorchJobList`` gives ``PyTorchJob``), or ""."""
    if isinstance(event, Mapping) and "kind" not in event and "object" in event:
        event = event["object"]
    body = event.get("ResponseBody") if isinstance(event, Mapping) else None
    kind = body.get("kind") if isinstance(body, Mapping) else None
    return kind.removesuffix("List") if isinstance(kind, str) else ""


def not_found(kind: str = "") -> dict[str, Any]:
    """The answer for a job that does not exist, shaped like ``Evaluation.to_dict()``.

    NOT_FOUND is no phase the evaluator gives (it never sees such a job), but
    it ends the loop like one (docs/phases.md).
    """
    return {
        "phase": str(Phase.NOT_FOUND),
        "reason": "NotFound",
        "message": "the list returned no object: the job does not exist",
        "since": None,
        "kind": kind,
        "terminal": Phase.NOT_FOUND.terminal,
    }


def evaluate_event(event: Any) -> dict[str, Any]:
    """``unwrap_event`` then ``evaluate``, as the dict the CLI and the handler return."""
    obj = unwrap_event(event)
    if obj is None:
        return not_found(list_kind_of(event))
    return evaluate(obj).to_dict()


def _describe(value: Any) -> str:
    """A short description of a bad value for an error message."""
    if value is None:
        return "nothing"
    # reprlib bounds depth and length, so a huge or deeply nested value stays short.
    return f"{type(value).__name__} {reprlib.repr(value)}"
