"""A LIST in pages over real HTTP: the emulator's ``limit``/``continue``, and jobsync's pager on top of it.

The emulator serves chunks as the apiserver does: one consistent snapshot at the first chunk's
resourceVersion, a continue token that expires (410) once that version leaves its window, 400 for
a token that is not one. ``KubeJobs.list_job_pages`` keeps only what it picks of each object and,
on a 410, lists again from the first page.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from harness.kubeapi import KubeAPI
from jobsync.cluster import get_api_client, reset_cache
from jobsync.cluster.jobs import KubeJobs
from jobsync.cluster.paging import RELISTS, list_in_pages
from jobsync.errors import TransientClusterError
from jobsync.settings import ClusterSettings, Settings
from tests.support.kube import NAMESPACE, PYTORCHJOBS, start_kube_api

KEY = (*PYTORCHJOBS, NAMESPACE)
SPEC = Settings().allowed_kinds[0]


def job(name: str, labels: dict[str, str] | None = None) -> dict:
    meta = {"name": name, "labels": labels or {"app.kubernetes.io/managed-by": "jobsync"}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta, "spec": {}}


@pytest.fixture
def api() -> Iterator[KubeAPI]:
    server = start_kube_api()
    try:
        yield server
    finally:
        server.stop()
        reset_cache()


def custom(api: KubeAPI) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(get_api_client(ClusterSettings(mode="url", url=api.url)))


def page(api: KubeAPI, limit: int, token: str | None = None, selector: str | None = None) -> dict:
    options = {"_continue": token} if token else {}
    if selector:
        options["label_selector"] = selector
    return custom(api).list_namespaced_custom_object(
        *PYTORCHJOBS[:2], NAMESPACE, PYTORCHJOBS[2], limit=limit, **options
    )


def names(listing: dict) -> list[str]:
    return [o["metadata"]["name"] for o in listing["items"]]


def compact(api: KubeAPI, writes: int = 2100) -> None:
    """Writes elsewhere that push older versions out of the API's window (as an etcd compaction does)."""
    for i in range(writes):
        noise = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"noise-{i}"}}
        api.put(("", "v1", "configmaps", NAMESPACE, f"noise-{i}"), noise)


def test_chunks_are_one_snapshot_at_the_first_chunks_version(api):
    for i in range(7):
        api.put((*KEY, f"job-{i}"), job(f"job-{i}"))
    first = page(api, 3)
    assert names(first) == ["job-0", "job-1", "job-2"] and first["metadata"]["continue"]
    version = first["metadata"]["resourceVersion"]
    api.delete((*KEY, "job-4"))  # after the first chunk: the LIST still shows it, as read at its version
    api.put((*KEY, "job-3a"), job("job-3a"))
    second = page(api, 3, first["metadata"]["continue"])
    assert names(second) == ["job-3", "job-4", "job-5"]
    assert second["metadata"]["resourceVersion"] == version
    third = page(api, 3, second["metadata"]["continue"])
    assert names(third) == ["job-6"] and not third["metadata"].get("continue")
    assert names(page(api, 0)) == ["job-0", "job-1", "job-2", "job-3", "job-3a", "job-5", "job-6"]  # a new LIST


def test_the_label_selector_holds_across_chunks(api):
    for i in range(5):
        api.put((*KEY, f"ours-{i}"), job(f"ours-{i}"))
        api.put((*KEY, f"theirs-{i}"), job(f"theirs-{i}", labels={"team": "other"}))
    first = page(api, 2, selector="app.kubernetes.io/managed-by=jobsync")
    rest = page(api, 10, first["metadata"]["continue"])
    assert names(first) + names(rest) == [f"ours-{i}" for i in range(5)]


def test_an_expired_continue_token_is_410_and_a_bad_one_400(api):
    for i in range(4):
        api.put((*KEY, f"job-{i}"), job(f"job-{i}"))
    first = page(api, 2)
    compact(api)
    with pytest.raises(ApiException) as expired:
        page(api, 2, first["metadata"]["continue"])
    assert expired.value.status == 410 and "too old to display a consistent list" in expired.value.body
    with pytest.raises(ApiException) as bad:
        page(api, 2, "not-a-token")
    assert bad.value.status == 400


def test_the_pager_keeps_only_what_it_picks_and_lists_again_after_a_410(api):
    for i in range(12):
        api.put((*KEY, f"job-{i:02d}"), job(f"job-{i:02d}"))
    jobs = KubeJobs(get_api_client(ClusterSettings(mode="url", url=api.url)))
    seen: list[str] = []

    def pick(obj: dict) -> str | None:
        name = obj["metadata"]["name"]
        seen.append(name)
        if name == "job-04" and seen.count(name) == 1:
            compact(api)  # the first LIST's version is compacted away before its next page is asked for
        return name if name.endswith(("0", "5")) else None

    listing = jobs.list_job_pages(SPEC, NAMESPACE, "app.kubernetes.io/managed-by=jobsync", pick, limit=5)
    assert listing.kept == ["job-00", "job-05", "job-10"]
    assert listing.restarts == 1 and listing.pages == 3  # 5 + 5 + 2 objects, read again from the first page
    assert listing.resource_version == str(api.resource_version)
    lists = [r for r in api.requests if r.verb == "list" and r.resource == "pytorchjobs"]
    assert [r.query.get("limit") for r in lists] == ["5"] * 5
    assert [r.status for r in lists] == [200, 410, 200, 200, 200]


def test_the_pager_gives_up_when_every_continue_token_expires():
    answers = iter(range(100))

    def fetch(token: str | None) -> dict:
        if token:
            raise ApiException(status=410, reason="Expired")
        return {"metadata": {"resourceVersion": str(next(answers)), "continue": "more"}, "items": [{}]}

    with pytest.raises(TransientClusterError, match="expired 4 times in a row"):
        list_in_pages(fetch, lambda obj: obj)
    assert RELISTS == 3
