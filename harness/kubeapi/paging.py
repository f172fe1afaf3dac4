"""LIST in chunks, as the apiserver pages it: ``limit`` and ``continue``, one consistent snapshot, 410 when too old.

The apiserver serves every chunk of one LIST at the first chunk's resourceVersion.
Its continue token (base64 of ``{"v": "meta.k8s.io/v1", "rv": N, "start": key}``)
says where the next chunk starts; once etcd has compacted version N away, the
token is refused with 410 Expired ("The provided continue parameter is too old
...") and the client lists again. Here a LIST's matching objects are kept as a
snapshot (references: the store replaces an object on every write, it never
changes one in place); a token whose version has left the event log's window
(as a watch from it would, ``harness.kubeapi.watch``), or whose snapshot is no
longer kept (the last ``SNAPSHOTS`` LISTs are), is expired.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections import OrderedDict

from harness.kubeapi.errors import ApiError
from harness.kubeapi.routes import Obj

SNAPSHOTS = 32
TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)


class Chunks:
    """The snapshots of the LISTs being read in chunks, by an id of their own."""

    def __init__(self) -> None:
        self._snapshots: OrderedDict[str, tuple[int, list[Obj]]] = OrderedDict()
        self._lock = threading.Lock()
        self._ids = 0

    def first(self, rv: int, items: list[Obj], limit: int) -> tuple[list[Obj], str | None]:
        """The first chunk of a LIST read at ``rv`` (``items`` sorted as the server sorts them), and its token."""
        if limit <= 0 or len(items) <= limit:
            return items, None
        with self._lock:
            self._ids += 1
            snapshot = f"s{self._ids}"
            self._snapshots[snapshot] = (rv, items)
            while len(self._snapshots) > SNAPSHOTS:
                self._snapshots.popitem(last=False)
        return items[:limit], token(rv, snapshot, limit)

    def next(self, continue_token: str, limit: int, oldest_rv: int) -> tuple[int, list[Obj], str | None]:
        """(the LIST's version, the chunk after ``continue_token``, the next token); 410 when it is too old."""
        rv, snapshot, offset = parse(continue_token)
        with self._lock:
            kept = self._snapshots.get(snapshot)
        if kept is None or rv < oldest_rv - 1 or kept[0] != rv:
            raise ApiError(410, "Expired", TOO_OLD)
        items = kept[1]
        end = len(items) if limit <= 0 else offset + limit
        chunk = items[offset:end]
        if end >= len(items):
            with self._lock:
                self._snapshots.pop(snapshot, None)
            return rv, chunk, None
        return rv, chunk, token(rv, snapshot, end)


def token(rv: int, snapshot: str, start: int) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{snapshot}/{start}"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def parse(continue_token: str) -> tuple[int, str, int]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(continue_token + "=" * (-len(continue_token) % 4)))
        snapshot, start = str(raw["start"]).split("/")
        return int(raw["rv"]), snapshot, int(start)
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise ApiError(400, "BadRequest", f"continue key is not valid: {exc}") from None
