"""Watches: the initial ADDED events, then the event log from a resourceVersion, on real or virtual time."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable

from harness.kubeapi.errors import status_body
from harness.kubeapi.rest import RestVerbs
from harness.kubeapi.routes import Key, Obj, Route
from harness.kubeapi.selectors import FieldSelector, Selector

# How far a watch on virtual time moves the clock before looking for events again.
VIRTUAL_WATCH_STEP_SECONDS = 5.0
# Real seconds a watch on virtual time waits, after sending an event, for the client to hang up.
VIRTUAL_WATCH_REACT_SECONDS = 0.2


class Watches(RestVerbs):
    """Watches over the store's event log, ended by timeoutSeconds on the real or the virtual clock."""

    watch_real_cap_seconds: float | None  # caps every watch's timeoutSeconds on the wall clock
    # Set by a harness on virtual time: advances that clock by N seconds
    # while a watch waits for events, so watches end on virtual time.
    virtual_watch: Callable[[float], None] | None
    _stopping: bool  # set by KubeAPI.stop(): ends open watches

    def watch_events(self, route: Route, query: dict[str, str]) -> Iterable[Obj | None]:
        """Yield watch events (None = heartbeat, so the handler can notice a stop) until the timeout."""
        labels, fields = Selector(query.get("labelSelector")), FieldSelector(query.get("fieldSelector"))
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        if self.watch_real_cap_seconds is not None:
            timeout = min(timeout, self.watch_real_cap_seconds) if timeout is not None else self.watch_real_cap_seconds
        deadline = time.monotonic() + timeout if timeout is not None else None
        if self.virtual_watch is not None:
            # On virtual time the watch lasts timeoutSeconds of the virtual clock.
            virtual_deadline = self.clock() + (timeout if timeout is not None else 1800.0)
            deadline = None

        def wanted(key: Key, obj: Obj) -> bool:
            in_scope = key[0] == route.group and key[1] == route.plural
            in_ns = route.namespace is None or key[2] == route.namespace
            return in_scope and in_ns and labels.matches(obj["metadata"].get("labels")) and fields.matches(obj)

        rv_text = query.get("resourceVersion")
        pending: list[Obj] = []
        with self.lock:
            self._check_served(route)
            if rv_text and rv_text != "0":
                cursor = int(rv_text)
                oldest = self._events[0].rv if self._events else self._rv + 1
                if cursor < oldest - 1 and cursor < self._rv:
                    expired = status_body(410, "Expired", f"too old resource version: {cursor} ({oldest - 1})")
                    yield {"type": "ERROR", "object": expired}
                    return
            else:
                cursor = self._rv
                for key, obj in sorted(self._store.items(), key=lambda kv: int(kv[1]["metadata"]["resourceVersion"])):
                    if wanted(key, obj):
                        pending.append({"type": "ADDED", "object": copy.deepcopy(obj)})
        yield None  # checks passed: the handler may send the 200 now
        yield from pending
        while True:
            with self._changed:
                events = [e for e in self._events if e.rv > cursor]
                if not events and not self._stopping and self.virtual_watch is None:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return
                    self._changed.wait(timeout=min(remaining, 1.0) if remaining is not None else 1.0)
                    events = [e for e in self._events if e.rv > cursor]
                if self._stopping:
                    return
            if not events and self.virtual_watch is not None:
                # Virtual time: move the clock on (the operator simulator acts on it) instead of sleeping.
                remaining = virtual_deadline - self.clock()
                if remaining <= 0:
                    return
                self.virtual_watch(min(remaining, VIRTUAL_WATCH_STEP_SECONDS))
                yield None
                continue
            if events and events[0].rv > cursor + 1:
                # The log moved past this watch (it keeps the last 2,000 events): the apiserver ends it with 410.
                expired = status_body(410, "Expired", f"too old resource version: {cursor} ({events[0].rv - 1})")
                yield {"type": "ERROR", "object": expired}
                return
            for event in events:
                cursor = event.rv
                if wanted(event.key, event.obj):
                    yield {"type": event.type, "object": copy.deepcopy(event.obj)}
            if not events:
                yield None
            if deadline is not None and time.monotonic() >= deadline:
                return
            if self.virtual_watch is not None and self.clock() >= virtual_deadline:
                return  # on virtual time too, a watch ends at its timeout while events keep coming
