"""The few Kubernetes API calls jobsync makes, with its errors translated.

One class over the official client (``jobsync.cluster.connection``, which
also renews an expired EKS token, retries once on a 401 and gives every call
its default timeout). Every failure is mapped to the errors the state machine
understands (``jobsync.cluster.errors``). Jobs and pods come back as plain
dicts, as the API sends them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException
from kubernetes.watch import Watch

from jobsync.cluster.errors import (
    TRANSPORT_ERRORS,
    api_message,
    from_api_exception,
    is_object_not_found,
    unreachable,
)
from jobsync.cluster.paging import PAGE_SIZE, Listing, list_in_pages
from jobsync.errors import JobConflict, TransientClusterError, WatchExpired
from jobsync.evaluation.kinds import KindSpec
from jobsync.settings import REQUEST_TIMEOUT

T = TypeVar("T")
logger = logging.getLogger(__name__)

# The uids of DELETEs sent whose answer never came (see KubeJobs.delete).
_UNANSWERED_DELETES: set[str] = set()


class KubeJobs:
    """Create, read and delete jobs; read their pods and logs."""

    def __init__(self, api_client: ApiClient) -> None:
        self._custom = CustomObjectsApi(api_client)
        self._core = CoreV1Api(api_client)

    def create(self, spec: KindSpec, obj: dict[str, Any]) -> dict[str, Any]:
        """Create with Strict field validation; raises ApiException 409 for the caller to handle."""
        return self._call(
            self._custom.create_namespaced_custom_object,
            spec.group,
            spec.version,
            obj["metadata"]["namespace"],
            spec.plural,
            obj,
            field_validation="Strict",
            handle={409},
        )

    def get(self, spec: KindSpec, namespace: str, name: str) -> dict[str, Any] | None:
        """The job, or None when the API says this job does not exist.

        Only an object's 404 (its Status names this job, or its namespace) is
        None. A 404 for the resource type or the path ("the server could not
        find the requested resource", as while a CRD is being re-established)
        says nothing of the job: TransientClusterError.
        """
        try:
            job: dict[str, Any] = self._call(
                self._custom.get_namespaced_custom_object,
                spec.group,
                spec.version,
                namespace,
                spec.plural,
                name,
                handle={404},
            )
            return job
        except ApiException as exc:
            if is_object_not_found(exc, spec.plural or "", namespace, name):
                return None
            raise TransientClusterError(
                f"Kubernetes API answered 404 for the resource, not for {spec.kind} {namespace}/{name}: "
                f"{api_message(exc)}"
            ) from None

    def delete(self, spec: KindSpec, namespace: str, name: str, uid: str | None = None) -> bool:
        """Delete with background propagation (the pods go too); False when it was already gone.

        With ``uid``, only that very object: when the name now belongs to
        another object the API refuses (409), raised here as JobConflict.

        A DELETE whose answer is lost (read timeout, dropped connection) may
        have been carried out. Its uid is remembered: when a DELETE of that uid
        then answers 404, it is this execution's first DELETE that removed it,
        and the answer is True. (Remembered in this process only: a retry in
        another Lambda sandbox reports False, "already gone".)
        """
        options: dict[str, Any] = {"body": {"preconditions": {"uid": uid}}} if uid else {}
        try:
            self._custom.delete_namespaced_custom_object(
                spec.group,
                spec.version,
                namespace,
                spec.plural,
                name,
                propagation_policy="Background",
                **options,
            )
        except ApiException as exc:
            if exc.status == 404:
                if uid is not None and uid in _UNANSWERED_DELETES:
                    _UNANSWERED_DELETES.discard(uid)
                    logger.info("%s %s/%s: deleted (the first DELETE's answer was lost)", spec.kind, namespace, name)
                    return True
                return False
            if exc.status == 409 and uid:  # the uid precondition failed
                raise JobConflict(
                    f"{spec.kind} {namespace}/{name} is not the object {uid}: {api_message(exc)}"
                ) from None
            raise from_api_exception(exc) from None
        except TransientClusterError:  # the API client's word for a transport failure
            if uid is not None:
                _UNANSWERED_DELETES.add(uid)
            raise
        except TRANSPORT_ERRORS as exc:
            if uid is not None:
                _UNANSWERED_DELETES.add(uid)
            raise unreachable(exc) from None
        if uid is not None:
            _UNANSWERED_DELETES.discard(uid)
        return True

    def watch(
        self, spec: KindSpec, namespace: str, name: str, resource_version: str, seconds: int
    ) -> Generator[tuple[str, dict[str, Any]], None, None]:
        """(event type, object) for changes of one job after ``resource_version``, for up to ``seconds``.

        With an empty ``resource_version`` the watch starts now: the API sends the
        job as it is (ADDED) first. A version that has left the API's window
        (410 Gone, as a stream ERROR event or as the answer) raises WatchExpired.
        """
        options: dict[str, Any] = {"resource_version": resource_version} if resource_version else {}
        try:
            stream = Watch().stream(
                self._custom.list_namespaced_custom_object,
                spec.group,
                spec.version,
                namespace,
                spec.plural,
                field_selector=f"metadata.name={name}",
                timeout_seconds=seconds,
                _request_timeout=(REQUEST_TIMEOUT[0], seconds + REQUEST_TIMEOUT[1]),
                **options,
            )
            try:
                for event in stream:
                    if event["type"] == "ERROR":
                        if (event.get("raw_object") or {}).get("code") == 410:
                            raise WatchExpired(f"watch from resourceVersion {resource_version} expired (410)")
                        return  # the caller's GET result stands
                    yield event["type"], event["object"]
            finally:
                stream.close()  # hang up now, not when the garbage collector gets to it
        except ApiException as exc:
            if exc.status == 410:
                raise WatchExpired(f"watch from resourceVersion {resource_version} expired: {exc.reason}") from None
            raise from_api_exception(exc) from None
        except TRANSPORT_ERRORS as exc:
            raise unreachable(exc) from None

    def list_jobs(self, spec: KindSpec, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        """The jobs of ``spec``'s kind with these labels (cleanup after an execution event finds a template's job).

        A kind the cluster does not serve (404: no CRD, say mpi-operator's MPIJob beside the training-operator's)
        has no jobs.
        """
        response = self._call(
            self._custom.list_namespaced_custom_object,
            spec.group,
            spec.version,
            namespace,
            spec.plural,
            label_selector=label_selector,
            none_on_404=True,
        )
        return list(response.get("items") or []) if response is not None else []

    def list_job_pages(
        self,
        spec: KindSpec,
        namespace: str,
        label_selector: str,
        pick: Callable[[dict[str, Any]], T | None],
        limit: int = PAGE_SIZE,
    ) -> Listing[T]:
        """One LIST of ``spec``'s jobs with these labels, in pages of ``limit``, keeping ``pick(obj)`` of each
        (jobsync.cluster.paging: a page in memory at a time; an expired continue token lists again)."""

        def fetch(token: str | None) -> dict[str, Any]:
            options: dict[str, Any] = {"_continue": token} if token else {}
            page: dict[str, Any] = self._call(
                self._custom.list_namespaced_custom_object,
                spec.group,
                spec.version,
                namespace,
                spec.plural,
                label_selector=label_selector,
                limit=limit,
                handle={410},
                **options,
            )
            return page

        return list_in_pages(fetch, pick)

    def list_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        response = self._call(
            self._core.list_namespaced_pod, namespace, label_selector=label_selector, _preload_content=False
        )
        return list(json.loads(response.data).get("items") or [])

    def list_events(self, namespace: str, pod: str) -> list[dict[str, Any]]:
        """The events of one pod (core v1, as the scheduler, the autoscalers and the kubelet write them)."""
        response = self._call(
            self._core.list_namespaced_event,
            namespace,
            field_selector=f"involvedObject.kind=Pod,involvedObject.name={pod}",
            _preload_content=False,
        )
        return list(json.loads(response.data).get("items") or [])

    def read_log(self, namespace: str, pod: str, container: str, limit_bytes: int) -> str:
        """The log's last lines, at most ``limit_bytes``; bytes that are not UTF-8 become U+FFFD.

        ``limitBytes`` cuts bytes, often inside a character (a progress bar's
        block characters), and a program may print anything: the client's own
        strict decoding would fail on either, so the bytes are read as they
        come and decoded leniently here.
        """
        response = self._call(
            self._core.read_namespaced_pod_log,
            pod,
            namespace,
            container=container,
            limit_bytes=limit_bytes,
            tail_lines=200,
            none_on_404=True,
            _preload_content=False,
        )
        if response is None:
            return ""
        return bytes(response.data or b"").decode("utf-8", errors="replace")

    def stream_log(
        self, namespace: str, pod: str, container: str, follow: bool = False, read_timeout: float = 60.0
    ) -> Generator[str, None, None]:
        """A container's whole log, line by line (``follow``: then what it writes, until it ends).

        For a person following a job (``jobsync logs -f``), never for a Lambda. Bytes that are not
        UTF-8 become U+FFFD. A log quiet for ``read_timeout`` seconds ends the stream with
        TransientClusterError, as a dropped connection does: the caller looks at the job and reads again.
        """
        response = self._call(
            self._core.read_namespaced_pod_log,
            pod,
            namespace,
            container=container,
            follow=follow,
            _preload_content=False,
            _request_timeout=(REQUEST_TIMEOUT[0], read_timeout),
        )
        pending = b""
        try:
            for chunk in response.stream(4096):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield line.decode("utf-8", errors="replace")
            if pending:
                yield pending.decode("utf-8", errors="replace")
        except TRANSPORT_ERRORS as exc:
            raise unreachable(exc) from None
        finally:
            response.release_conn()

    def _call(
        self,
        fn: Callable[..., T],
        *args: Any,
        none_on_404: bool = False,
        handle: frozenset[int] | set[int] = frozenset(),
        **kwargs: Any,
    ) -> T:
        try:
            return fn(*args, **kwargs)
        except ApiException as exc:
            if exc.status == 404 and none_on_404:
                return None  # type: ignore[return-value]
            if exc.status in handle:
                raise
            raise from_api_exception(exc) from None
        except TRANSPORT_ERRORS as exc:
            raise unreachable(exc) from None
