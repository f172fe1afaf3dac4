"""The one translation from Kubernetes API answers and transport failures to jobsync's errors.

Messages name the cluster (its label), never its endpoint, CA or token.
"""

from __future__ import annotations

import json
import re
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from jobsync.errors import (
    ClusterAccessDenied,
    ClusterAuthError,
    ClusterRequestFailed,
    InvalidInput,
    JobsyncError,
    TransientClusterError,
)

# What a request can fail with below HTTP: DNS, refused, TLS, timeouts, a dropped connection.
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (urllib3.exceptions.HTTPError, OSError)


def api_message(exc: ApiException) -> str:
    """The message of a Kubernetes ``Status`` body, or the HTTP reason."""
    try:
        body = json.loads(exc.body or "")
        return str(body.get("message") or exc.reason)
    except (ValueError, AttributeError, TypeError):
        return str(exc.reason)


def is_object_not_found(exc: ApiException, plural: str, namespace: str, name: str) -> bool:
    """Whether a 404 says the object ``name`` (or its namespace) does not exist.

    An object's 404 names it: ``details`` holds its ``name`` and ``kind`` (the
    plural), and the message reads ``<plural>.<group> "<name>" not found``. A
    404 for the resource type or the path ("the server could not find the
    requested resource") names nothing, and is not the object's.
    """
    try:
        body = json.loads(exc.body or "")
    except (ValueError, TypeError):
        body = None
    if not isinstance(body, dict):
        return False
    details: dict[str, Any] = body["details"] if isinstance(body.get("details"), dict) else {}
    if details.get("name"):
        this_job = details.get("name") == name and details.get("kind") in (plural, None)
        its_namespace = details.get("name") == namespace and details.get("kind") == "namespaces"
        return this_job or its_namespace
    # No details (some proxies and older servers): the message names the resource and the object.
    match = re.match(r'^([a-z0-9-]+)(\.[a-z0-9.-]+)? "[^"]*" not found$', str(body.get("message") or ""))
    return match is not None and match.group(1) in (plural, "namespaces")


def _named(label: str | None, message: str) -> str:
    return f"cluster {label!r}: {message}" if label else message


def unauthorized(label: str | None, after_refresh: bool, detail: str = "") -> ClusterAuthError:
    """A 401: with ``after_refresh``, fresh credentials were refused too."""
    if after_refresh:
        message = (
            "the API server answered 401 Unauthorized again with fresh credentials; "
            "check the EKS access entry for this role"
        )
    else:
        message = "Kubernetes API refused the credentials (401)" + (f": {detail}" if detail else "")
    return ClusterAuthError(_named(label, message))


def unreachable(exc: BaseException, label: str | None = None) -> TransientClusterError:
    """A transport failure; urllib3's messages carry the host, so only the kind of failure is kept."""
    reason = getattr(exc, "reason", None) or exc
    return TransientClusterError(_named(label, f"Kubernetes API unreachable ({type(reason).__name__})"))


def from_api_exception(exc: ApiException) -> JobsyncError:
    """An HTTP error answer as the jobsync error that says what to do about it."""
    message = api_message(exc)
    status = exc.status or 0
    if status == 401:
        return unauthorized(None, after_refresh=False, detail=message)
    if status == 403 and message.startswith("admission webhook "):
        # A webhook's refusal (Kueue, Trainer, JobSet validate what they run) comes back as 403 too.
        return InvalidInput(f"the Kubernetes API rejected the job ({status} {exc.reason}): {message}")
    if status == 403:
        return ClusterAccessDenied(
            f"Kubernetes RBAC denied the request (403): {message}. "
            "Grant it in the jobsync Role bound to the functions' group (charts/jobsync; jobsync preflight "
            "names every grant that is missing)."
        )
    if status == 429 or status >= 500:
        retry_after = (exc.headers or {}).get("Retry-After") if exc.headers else None
        hint = f", retry after {retry_after}s" if retry_after else ""
        return TransientClusterError(f"Kubernetes API answered {status} ({exc.reason}){hint}: {message}")
    if status in (400, 422):
        return InvalidInput(f"the Kubernetes API rejected the job ({status} {exc.reason}): {message}")
    return ClusterRequestFailed(f"Kubernetes API answered {status} ({exc.reason}): {message}")
