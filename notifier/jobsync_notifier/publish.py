"""Phase changes as EventBridge events: ``source: jobsync``, ``detail-type: Job Phase Changed``.

The event is the one model Resume parses (``jobsync.core.event``).
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools import Logger

from jobsync import strict_json
from jobsync.core.event import DETAIL_TYPE, SOURCE, PhaseChangedDetail

ATTEMPTS = 4

logger = Logger(service="jobsync-notifier")


class EventBridgePublisher:
    """Puts one event per change on the bus; retries what EventBridge did not take."""

    def __init__(self, bus_name: str, client: Any = None, sleep: Any = time.sleep) -> None:
        if client is None:
            from jobsync import aws

            client = aws.client("events")
        self._bus = bus_name
        self._client = client
        self._sleep = sleep

    def publish(self, change: PhaseChangedDetail) -> bool:
        """True once EventBridge took the event. A lost event costs delay only: the safety poll covers it."""
        entry = {
            "Source": SOURCE,
            "DetailType": DETAIL_TYPE,
            "Detail": strict_json.dumps(change.payload()),
            "EventBusName": self._bus,
        }
        job = change.job.model_dump()
        for attempt in range(ATTEMPTS):
            try:
                answer = self._client.put_events(Entries=[entry])
                if not answer.get("FailedEntryCount"):
                    logger.info("phase change published", extra={"job": job, "phase": str(change.phase)})
                    return True
                failure = answer["Entries"][0].get("ErrorCode", "failed")
            except Exception as exc:  # botocore's errors, throttling included: retried, then reported
                failure = type(exc).__name__
            self._sleep(min(8.0, 0.5 * 2**attempt))
        logger.error("phase change not published", extra={"job": job, "error": failure})
        return False
