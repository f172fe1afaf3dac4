"""Failures the server answers with a ``kind: Status`` body."""

from __future__ import annotations

from harness.kubeapi.routes import Obj, Route


class ApiError(Exception):
    """A failure the server answers with a ``kind: Status`` body."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def body(self) -> Obj:
        return status_body(self.code, self.reason, self.message, self.details)


class PageNotFound(ApiError):
    """A path no API serves: kube-apiserver's NotFoundHandler answers it as text, not as a Status."""

    TEXT = b"404 page not found\n"

    def __init__(self) -> None:
        super().__init__(404, "NotFound", "404 page not found")


def status_body(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
    body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def invalid(route: Route, kind: str, name: str, causes: list[Obj]) -> ApiError:
    """The 422 Invalid the apiserver answers for field errors (``causes``) in an object."""
    errors = [f"{c['field']}: {c['message']}" for c in causes]
    text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    qualified = f"{kind}.{route.group}" if route.group else kind
    details = {"name": name, "group": route.group, "kind": kind, "causes": causes}
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {text}', details)
