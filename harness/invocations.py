"""What keeps in-process handler invocations apart as Lambda keeps them: one invocation per process there."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, MutableMapping
from types import ModuleType
from typing import Any


class _PerThread(MutableMapping[str, Any]):
    """A dict of each thread's own, each starting as a copy of ``initial``."""

    def __init__(self, initial: Mapping[str, Any]) -> None:
        self._initial = dict(initial)
        self._local = threading.local()

    @property
    def _data(self) -> dict[str, Any]:
        if not hasattr(self._local, "data"):
            self._local.data = dict(self._initial)
        return self._local.data  # type: ignore[no-any-return]

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._data[key] = value

    def __delitem__(self, key: str) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def own_metrics_per_thread(module: ModuleType) -> None:
    """Lambda runs one invocation per process; here the handlers share one, and threads (an EventBridge rule's
    Cleanup beside the next execution's Submit, RunJobs' children). Powertools keeps one metric set for all of
    its Metrics objects, so one invocation's flush emptied another's, which then published nothing and warned:
    each function's metrics are its thread's own, as each invocation's are its process's."""
    provider = getattr(getattr(module, "metrics", None), "provider", None)
    if provider is None:
        return
    for name in ("metric_set", "dimension_set", "metadata_set"):
        setattr(provider, name, _PerThread(getattr(provider, name)))
