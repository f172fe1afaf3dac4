"""Why a job is stuck or failed, read from its pods.

Pure functions over pod objects as the API returns them (plain dicts), so the
rules are tested without a cluster. Output stays small: a few findings, each
a short dict, never a pod dump.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jobsync.bodies import conditions, meta

# Waiting reasons that mean the pod will not start without someone acting.
STUCK_WAITING = frozenset({"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError"})
# Waiting reasons worth reporting, though the kubelet may still recover.
REPORTED_WAITING = STUCK_WAITING | {"CrashLoopBackOff", "CreateContainerError", "RunContainerError"}
UNSCHEDULABLE = "Unschedulable"
MAX_FINDINGS = 5
MAX_MESSAGE = 300
NOT_OWNED = "NotOwnedByJob"
# How many ignored pods a note names; the count is always whole.
MAX_NAMED = 5


@dataclass(frozen=True)
class JobPods:
    """The job's own pods (``jobsync.run.pods``), and the names of the pods with its labels that it does not own."""

    pods: list[dict[str, Any]]
    ignored: tuple[str, ...] = ()

    def notes(self) -> list[dict[str, Any]]:
        """A finding that names the ignored pods (none when every labelled pod is the job's)."""
        if not self.ignored:
            return []
        count = len(self.ignored)
        names = ", ".join(self.ignored[:MAX_NAMED])
        if count > MAX_NAMED:
            names += f" and {count - MAX_NAMED} more"
        pods = "pod" if count == 1 else "pods"
        message = f"ignored {count} {pods} labelled for this job that it does not own: {names}"
        return [{"reason": NOT_OWNED, "message": message}]


def _short(value: Any) -> str:
    text = str(value or "")
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _container_statuses(pod: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    status = pod.get("status") or {}
    for key in ("initContainerStatuses", "containerStatuses"):
        yield from status.get(key) or []


def pod_findings(pods: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One finding per problem seen: waiting reasons, unschedulable pods, terminated containers."""
    findings: list[dict[str, Any]] = []
    for pod in pods:
        name = meta(pod).name or "?"
        status = pod.get("status") or {}
        for cond in conditions(status):
            unscheduled = cond.type == "PodScheduled" and cond.status == "False"
            if unscheduled and cond.reason == UNSCHEDULABLE:
                findings.append({"pod": name, "reason": UNSCHEDULABLE, "message": _short(cond.message)})
        for cs in _container_statuses(pod):
            state = cs.get("state") or {}
            waiting = state.get("waiting") or {}
            terminated = state.get("terminated") or (cs.get("lastState") or {}).get("terminated") or {}
            if waiting.get("reason") in REPORTED_WAITING:
                findings.append(
                    {
                        "pod": name,
                        "container": cs.get("name"),
                        "reason": waiting["reason"],
                        "message": _short(waiting.get("message")),
                    }
                )
            elif terminated and terminated.get("exitCode", 0) != 0:
                findings.append(
                    {
                        "pod": name,
                        "container": cs.get("name"),
                        "reason": terminated.get("reason") or "Error",
                        "exitCode": terminated.get("exitCode"),
                        "message": _short(terminated.get("message")),
                    }
                )
    return findings[:MAX_FINDINGS]


def stuck_reason(findings: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The first finding that keeps a job from ever starting on its own, if any."""
    for finding in findings:
        if finding["reason"] == UNSCHEDULABLE or finding["reason"] in STUCK_WAITING:
            return finding
    return None


def failed_container(pods: Iterable[Mapping[str, Any]]) -> tuple[str, str] | None:
    """(pod, container) of a container that terminated with a non-zero exit code."""
    for pod in pods:
        for cs in _container_statuses(pod):
            state = cs.get("state") or {}
            terminated = state.get("terminated") or (cs.get("lastState") or {}).get("terminated") or {}
            if terminated and terminated.get("exitCode", 0) != 0:
                return meta(pod).name, cs.get("name", "")
    return None


def tail(text: str, limit_bytes: int) -> str:
    """The last ``limit_bytes`` of a log, cut at a line start where possible."""
    data = text.encode()
    if len(data) <= limit_bytes:
        return text
    cut = data[-limit_bytes:].decode(errors="ignore")
    newline = cut.find("\n")
    return cut[newline + 1 :] if 0 <= newline < len(cut) - 1 else cut
