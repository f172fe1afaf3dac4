"""Learned hints: a recurring job's expected duration, from its family's last successful runs.

Scheduled jobs repeat. When an input gives no ``expectedDurationSeconds``,
the median run time of the family's last ``KEEP`` successful runs is the
hint, once ``MIN_RUNS`` are known. The family is the input's ``jobFamily``,
else the manifest's ``metadata.name``. Kept in the stack's DynamoDB table
(``pk`` ``family#<name>``), beside the task tokens.
"""

from __future__ import annotations

import statistics
from decimal import Decimal
from typing import Any

from jobsync.core.state import LoopState, seconds

KEEP = 5
MIN_RUNS = 2


class HintStore:
    def __init__(self, table: Any) -> None:
        self._table = table

    @staticmethod
    def _key(family: str) -> dict[str, str]:
        return {"pk": f"family#{family}"}

    def durations(self, family: str) -> list[int]:
        item = self._table.get_item(Key=self._key(family)).get("Item") or {}
        return [int(d) for d in item.get("durations", [])]

    def hint(self, family: str) -> int | None:
        """The median of the last runs, or None while fewer than MIN_RUNS are known."""
        runs = self.durations(family)
        return int(statistics.median(runs)) if len(runs) >= MIN_RUNS else None

    def record_success(self, state: LoopState) -> bool:
        """Remember a run that SUCCEEDED (from its start to its end); False when there is nothing to learn."""
        if state.phase != "SUCCEEDED" or not state.jobFamily or state.startedAt is None or state.finishedAt is None:
            return False
        self.record(state.jobFamily, seconds(state.finishedAt) - seconds(state.startedAt))
        return True

    def record(self, family: str, seconds: float) -> None:
        """Remember one successful run's duration (a lost write costs a hint, nothing else)."""
        runs = [*self.durations(family), max(1, round(seconds))][-KEEP:]
        self._table.put_item(Item={**self._key(family), "durations": [Decimal(r) for r in runs]})
