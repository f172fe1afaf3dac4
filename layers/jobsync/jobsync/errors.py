"""Every error jobsync raises on purpose, in one place.

The Lambdas' error class names are the ``Error`` names the state machine
sees (Lambda reports the exception's class as ``errorType``), so the ASL
retries and catches by these names: keep them stable. ``retried`` says
whether the state machine's Retry covers the error (a test holds the ASL to
it). The translation from HTTP answers and transport failures to these
classes lives in one place, ``jobsync.cluster.errors``.
"""

from __future__ import annotations


class JobsyncError(Exception):
    """Base class: an error jobsync raises on purpose, with a message for people."""

    retried = False


class InvalidInput(JobsyncError):
    """The request is malformed or not allowed; nothing was created. Not retried."""


class TransientClusterError(JobsyncError):
    """The Kubernetes API was throttled, failed with 5xx or could not be reached. Retried."""

    retried = True


class ClusterAccessDenied(JobsyncError):
    """RBAC refused a request (403): retrying cannot help. Names the verb and resource."""


class JobConflict(JobsyncError):
    """A job of the derived name exists and belongs to another execution. Not retried."""


class NotOurJob(JobsyncError):
    """The job a request names was not created by the request's execution: it is not read or touched.

    Not retried: the object under that name belongs to someone else (a
    person, another execution) and will not become ours.
    """


class ClusterAuthError(JobsyncError):
    """The Kubernetes API refused the credentials (401) even after a fresh token. Not retried."""


class ClusterRequestFailed(JobsyncError):
    """The Kubernetes API refused a request for a reason a retry cannot fix (a missing CRD, ...)."""


class WatchExpired(JobsyncError):
    """A watch's resourceVersion left the API server's window (410 Gone, "too old resource version").

    Expected after enough unrelated writes: the status step keeps the GET's
    verdict and watches again from now. It never leaves the status step.
    """


class ClusterConfigError(JobsyncError):
    """Misconfiguration a retry cannot fix: missing settings, no such cluster, no AWS credentials."""


class EvaluationError(ValueError):
    """The input cannot be evaluated: not a Kubernetes object, or a kind jobsync does not know."""
