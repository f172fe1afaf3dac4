"""Errors the Lambdas raise. Their class names are the `Error` names the state
machine sees (Lambda reports the exception's class as `errorType`), so the
ASL retries and catches by these names: keep them stable.
"""

from __future__ import annotations


class JobsyncError(Exception):
    """Base class: an error jobsync raises on purpose, with a message for people."""


class InvalidInput(JobsyncError):
    """The request is malformed or not allowed; nothing was created. Not retried."""


class TransientClusterError(JobsyncError):
    """The Kubernetes API was throttled, failed with 5xx or could not be reached. Retried."""


class ClusterAccessDenied(JobsyncError):
    """RBAC refused a request (403): retrying cannot help. Names the verb and resource."""


class JobConflict(JobsyncError):
    """A job of the derived name exists and belongs to another execution. Not retried."""


class ClusterAuthError(JobsyncError):
    """The Kubernetes API refused the credentials (401) even after a fresh token. Not retried."""


class ClusterRequestFailed(JobsyncError):
    """The Kubernetes API refused a request for a reason a retry cannot fix (a missing CRD, ...)."""
