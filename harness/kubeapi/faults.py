"""Injected faults: what the server does instead of (or before) answering matching requests."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Fault:
    """Something to do instead of (or before) answering a request."""

    kind: str  # "status" | "drop" | "delay" | "stall_after"
    code: int = 0
    reason: str = ""
    message: str = ""
    retry_after: float | None = None
    seconds: float = 0.0

    @classmethod
    def status(cls, code: int, reason: str, message: str, retry_after: float | None = None) -> Fault:
        return cls("status", code=code, reason=reason, message=message, retry_after=retry_after)

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection without a response (the client sees RemoteDisconnected/ProtocolError)."""
        return cls("drop")

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        """Sleep, then answer normally: for read-timeout tests."""
        return cls("delay", seconds=seconds)

    @classmethod
    def stall_after(cls, seconds: float) -> Fault:
        """Do the request, then sleep before answering: the change is made, the client may never hear of it."""
        return cls("stall_after", seconds=seconds)

    # The common ones, with the messages a real EKS control plane sends.
    @classmethod
    def internal_error(cls, message: str = "Internal error occurred: etcdserver: request timed out") -> Fault:
        return cls.status(500, "InternalError", message)

    @classmethod
    def unavailable(cls, message: str = "the server is currently unable to handle the request") -> Fault:
        return cls.status(503, "ServiceUnavailable", message)

    @classmethod
    def too_many_requests(cls, retry_after: float = 1) -> Fault:
        return cls.status(429, "TooManyRequests", "Too many requests, please try again later.", retry_after)

    @classmethod
    def unauthorized(cls) -> Fault:
        return cls.status(401, "Unauthorized", "Unauthorized")

    @classmethod
    def forbidden(
        cls,
        name: str = "x",
        verb: str = "get",
        resource: str = "pytorchjobs",
        group: str = "kubeflow.org",
        namespace: str = "ml-training",
        user: str = "arn:aws:sts::123456789012:assumed-role/jobsync/fn",
    ) -> Fault:
        qualified = f"{resource}.{group}" if group else resource
        message = (
            f'{qualified} "{name}" is forbidden: User "{user}" cannot {verb} resource "{resource}" '
            f'in API group "{group}" in the namespace "{namespace}"'
        )
        return cls.status(403, "Forbidden", message)


@dataclass
class Injection:
    fault: Fault
    method: str | None
    path_contains: str | None
    times: int


def take(injections: list[Injection], method: str, path: str) -> Fault | None:
    """The fault of the first injection matching ``method`` and ``path``, used up after ``times`` requests."""
    for inj in injections:
        if (inj.method is None or inj.method == method) and (inj.path_contains is None or inj.path_contains in path):
            inj.times -= 1
            if inj.times <= 0:
                injections.remove(inj)
            return inj.fault
    return None
