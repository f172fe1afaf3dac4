"""A LIST in pages (``limit`` and ``continue``), keeping only what the caller picks from each object.

A cluster keeps the jobs that ended (the default cleanup deletes only the failed
ones), so a namespace's LIST grows with its history. Read in one answer, every
object of it is in memory at once; read in pages, one page is, and the caller
keeps a few fields of each (``pick``). The pages of one LIST are one consistent
snapshot: the API server serves them at the first page's resourceVersion. When
that version has been compacted away before the last page was asked for, the
server answers 410 Gone ("the provided continue parameter is too old"): the LIST
starts again from the first page, with what was picked so far dropped, as
client-go's pager does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from jobsync.errors import TransientClusterError

T = TypeVar("T")
# Objects per page: 500 is what kubectl and client-go's informers ask for.
PAGE_SIZE = 500
# A LIST whose continue token expires this many times in a row gives up (the caller retries later).
RELISTS = 3


@dataclass
class Listing(Generic[T]):
    """What a LIST kept: the picks, in the API's order, and the version the whole LIST was read at."""

    kept: list[T] = field(default_factory=list)
    resource_version: str = ""
    pages: int = 0
    restarts: int = 0


def expired(exc: BaseException) -> bool:
    """Whether a failed page was the API's 410 Gone (its continue token, or its version, is too old)."""
    return getattr(exc, "status", None) == 410


def list_in_pages(
    fetch: Callable[[str | None], dict[str, Any]],
    pick: Callable[[dict[str, Any]], T | None],
    relists: int = RELISTS,
) -> Listing[T]:
    """All the pages of one LIST: ``fetch(continue_token)`` answers a page, ``pick(obj)`` keeps what is needed.

    A None pick keeps nothing of that object. A 410 on any page starts the LIST again from the first one,
    at most ``relists`` times in a row; then TransientClusterError.
    """
    restarts = 0
    while True:
        listing: Listing[T] = Listing(restarts=restarts)
        token: str | None = None
        try:
            while True:
                page = fetch(token)
                listing.pages += 1
                meta = page.get("metadata") or {}
                if listing.pages == 1:
                    listing.resource_version = str(meta.get("resourceVersion") or "")
                for obj in page.get("items") or []:
                    picked = pick(obj)
                    if picked is not None:
                        listing.kept.append(picked)
                token = meta.get("continue") or None
                if not token:
                    return listing
        except Exception as exc:
            if not expired(exc):
                raise
            restarts += 1
            if restarts > relists:
                raise TransientClusterError(
                    f"the LIST's continue token expired {restarts} times in a row (410): the API server compacts "
                    "faster than the pages are read"
                ) from None
