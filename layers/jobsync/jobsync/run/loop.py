"""What the submit, look and cleanup steps share: the cluster they talk to.

Each step (``jobsync.run.submit``, ``.poll``, ``.cleanup``) takes a parsed
request, the cluster (``KubeJobs`` or anything with its methods) and the
settings; what it decides is the core's (``jobsync.core``). The handlers only
parse, call one of them, and shape the output.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Protocol

from jobsync.evaluation.kinds import KindSpec


class Cluster(Protocol):
    def create(self, spec: KindSpec, obj: dict[str, Any]) -> dict[str, Any]: ...
    def get(self, spec: KindSpec, namespace: str, name: str) -> dict[str, Any] | None: ...
    def delete(self, spec: KindSpec, namespace: str, name: str, uid: str | None = None) -> bool: ...
    def list_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...
    def read_log(self, namespace: str, pod: str, container: str, limit_bytes: int) -> str: ...
    def list_events(self, namespace: str, pod: str) -> list[dict[str, Any]]: ...
    def watch(
        self, spec: KindSpec, namespace: str, name: str, resource_version: str, seconds: int
    ) -> Generator[tuple[str, dict[str, Any]], None, None]: ...
