"""A cluster in memory that records every call: ``jobsync.run.loop.Cluster`` without an API server.

It answers as ``jobsync.cluster.jobs.KubeJobs`` does: ``get`` of a missing job
is None, ``delete`` of one is False and a DELETE whose uid precondition does
not match raises JobConflict, ``create`` of a name already taken raises the
API's 409. Jobs are keyed by name (one namespace, as a deployment has).
"""

from __future__ import annotations

import itertools
from collections.abc import Generator, Iterable
from typing import Any

from kubernetes.client.exceptions import ApiException

from harness.kubeapi import Selector
from jobsync.errors import JobConflict

Obj = dict[str, Any]


class RecordingCluster:
    """Jobs, pods and logs the test hands in; ``calls`` lists what was asked, e.g. ``("get", name)``.

    ``expect`` names the only methods the test allows: any other call fails the
    test at once (``RecordingCluster(jobs, expect={"get", "delete"})``).
    """

    def __init__(
        self,
        objects: dict[str, Obj] | None = None,
        *,
        pods: list[Obj] | None = None,
        logs: dict[tuple[str, str], str] | None = None,
        events: list[tuple[str, Obj]] | None = None,
        pod_events: list[Obj] | None = None,
        expect: Iterable[str] | None = None,
    ) -> None:
        self.objects = objects if objects is not None else {}
        self.pods = pods or []
        self.logs = logs or {}
        self.events = events or []
        self.pod_events = pod_events or []
        self.expect = None if expect is None else set(expect)
        self.calls: list[tuple[str, str]] = []
        self._uids = itertools.count(1)

    def _record(self, method: str, what: str) -> None:
        if self.expect is not None and method not in self.expect:
            raise AssertionError(f"{method}({what!r}) not expected")
        self.calls.append((method, what))

    def create(self, spec, obj: Obj) -> Obj:
        name = obj["metadata"]["name"]
        self._record("create", name)
        if name in self.objects:
            raise ApiException(status=409, reason="Conflict")
        created = {**obj, "metadata": {**obj["metadata"], "uid": f"uid-{next(self._uids)}"}}
        self.objects[name] = created
        return created

    def get(self, spec, namespace: str, name: str) -> Obj | None:
        self._record("get", name)
        return self.objects.get(name)

    def delete(self, spec, namespace: str, name: str, uid: str | None = None) -> bool:
        self._record("delete", name)
        obj = self.objects.get(name)
        if obj is None:
            return False
        if uid and obj["metadata"]["uid"] != uid:
            raise JobConflict("precondition failed")
        del self.objects[name]
        return True

    def list_jobs(self, spec, namespace: str, label_selector: str) -> list[Obj]:
        self._record("list_jobs", label_selector)
        selector = Selector(label_selector)
        return [job for job in self.objects.values() if selector.matches(job.get("metadata", {}).get("labels"))]

    def list_pods(self, namespace: str, label_selector: str) -> list[Obj]:
        self._record("list_pods", label_selector)
        selector = Selector(label_selector)
        return [pod for pod in self.pods if selector.matches(pod.get("metadata", {}).get("labels"))]

    def read_log(self, namespace: str, pod: str, container: str, limit_bytes: int) -> str:
        self._record("read_log", pod)
        # As the API serves tail_lines=200 with limitBytes: the last 200 lines, cut to the limit.
        tail = "".join(self.logs.get((pod, container), "").splitlines(keepends=True)[-200:])
        return tail.encode()[:limit_bytes].decode(errors="ignore")

    def list_events(self, namespace: str, pod: str) -> list[Obj]:
        self._record("list_events", pod)
        return [e for e in self.pod_events if (e.get("involvedObject") or {}).get("name") == pod]

    def watch(
        self, spec, namespace: str, name: str, resource_version: str, seconds: int
    ) -> Generator[tuple[str, Obj], None, None]:
        self._record("watch", name)
        yield from self.events
