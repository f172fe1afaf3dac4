"""What cleanup did after an execution ended outside its loop, kept for whoever stopped it.

The ExecutionEnded rule invokes the cleanup function asynchronously: whoever
stopped the execution (``jobsync stop``) cannot see its answer. So the answer
(deleted or kept, by uid, and why) is put in the stack's table under
``cleanup#<execution ARN>`` for a week, where the command reads it.
"""

from __future__ import annotations

import json
from typing import Any

from jobsync import strict_json

RECORD_TTL_SECONDS = 7 * 86_400


class CleanupRecords:
    """Cleanup outcomes by execution, in the stack's DynamoDB table (``pk`` ``cleanup#<execution ARN>``)."""

    def __init__(self, table: Any) -> None:
        self._table = table

    @staticmethod
    def key(execution: str) -> dict[str, str]:
        return {"pk": f"cleanup#{execution}"}

    def put(self, result: dict[str, Any], now: float) -> None:
        item = {**self.key(str(result["execution"])), "result": strict_json.dumps(result)}
        self._table.put_item(Item={**item, "ttl": int(now) + RECORD_TTL_SECONDS})

    def get(self, execution: str) -> dict[str, Any] | None:
        item = self._table.get_item(Key=self.key(execution), ConsistentRead=True).get("Item")
        if not item:
            return None
        result = json.loads(str(item["result"]))
        return result if isinstance(result, dict) else None
