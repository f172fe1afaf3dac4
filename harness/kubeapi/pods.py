"""Pods' logs: stored text per container, served as the ``log`` subresource."""

from __future__ import annotations

from harness.kubeapi.errors import ApiError
from harness.kubeapi.rest import RestVerbs
from harness.kubeapi.routes import Route, truthy


class PodLogs(RestVerbs):
    """The pods' log subresource: text stored per (namespace, pod, container)."""

    def set_pod_log(self, namespace: str, pod: str, container: str, text: str) -> None:
        with self.lock:
            self._logs[(namespace, pod, container)] = text

    def handle_log(self, route: Route, query: dict[str, str]) -> bytes:
        with self.lock:
            self._check_served(route)
            pod = self._store.get((route.group, "pods", route.namespace or "", route.name or ""))
            if pod is None:
                raise self._not_found(Route("", "v1", "pods", route.namespace, route.name))
            containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
            container = query.get("container") or (containers[0] if len(containers) == 1 else None)
            if container is None:
                if not containers:
                    container = ""
                else:
                    raise ApiError(
                        400,
                        "BadRequest",
                        f"a container name must be specified for pod {route.name}, choose one of: {containers}",
                    )
            elif containers and container not in containers:
                raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {route.name}")
            suffix = ":previous" if truthy(query.get("previous")) else ""
            text = self._logs.get((route.namespace or "", route.name or "", container + suffix))
            if text is None:
                text = self._logs.get((route.namespace or "", route.name or "", container), "")
        if query.get("tailLines"):
            lines = text.splitlines(keepends=True)
            n = int(query["tailLines"])
            text = "".join(lines[-n:]) if n > 0 else ""
        data = text.encode()
        if query.get("limitBytes"):
            data = data[: int(query["limitBytes"])]  # bytes, as kubelet cuts them: maybe mid-character
        return data
