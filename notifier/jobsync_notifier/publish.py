"""Phase changes as EventBridge events: ``source: jobsync``, ``detail-type: Job Phase Changed``."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from aws_lambda_powertools import Logger

from jobsync import strict_json
from jobsync.evaluation.kinds import KindSpec
from jobsync.evaluation.phase import Evaluation
from jobsync.evaluation.times import JobTimes
from jobsync.run.manifests import EXECUTION_ANNOTATION

SOURCE = "jobsync"
DETAIL_TYPE = "Job Phase Changed"
ATTEMPTS = 4

logger = Logger(service="jobsync-notifier")


@dataclass(frozen=True)
class PhaseChange:
    """One job seen in a new phase: a ``Phase``, or the loop's NOT_FOUND for a job deleted before it ended."""

    job: dict[str, Any]
    execution_arn: str | None
    phase: str
    terminal: bool
    reason: str
    message: str = ""
    since: str | None = None
    times: JobTimes = field(default_factory=JobTimes)

    @classmethod
    def of(cls, obj: dict[str, Any], spec: KindSpec, evaluation: Evaluation, times: JobTimes) -> PhaseChange:
        return cls(
            job_ref(obj, spec),
            execution_arn(obj),
            str(evaluation.phase),
            evaluation.terminal,
            evaluation.reason,
            evaluation.message,
            evaluation.since,
            times,
        )

    def detail(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "executionArn": self.execution_arn,
            "phase": self.phase,
            "terminal": self.terminal,
            "reason": self.reason,
            "message": self.message,
            "since": self.since,
            **{f"{name}At": value for name, value in asdict(self.times).items()},
        }


def job_ref(obj: dict[str, Any], spec: KindSpec) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": spec.api_version,
        "kind": spec.kind,
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
    }


def execution_arn(obj: dict[str, Any]) -> str | None:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(EXECUTION_ANNOTATION)


class EventBridgePublisher:
    """Puts one event per change on the bus; retries what EventBridge did not take."""

    def __init__(self, bus_name: str, client: Any = None, sleep: Any = time.sleep) -> None:
        if client is None:
            from jobsync import aws

            client = aws.client("events")
        self._bus = bus_name
        self._client = client
        self._sleep = sleep

    def publish(self, change: PhaseChange) -> bool:
        """True once EventBridge took the event. A lost event costs delay only: the safety poll covers it."""
        entry = {
            "Source": SOURCE,
            "DetailType": DETAIL_TYPE,
            "Detail": strict_json.dumps(change.detail()),
            "EventBusName": self._bus,
        }
        for attempt in range(ATTEMPTS):
            try:
                answer = self._client.put_events(Entries=[entry])
                if not answer.get("FailedEntryCount"):
                    logger.info("phase change published", extra={"job": change.job, "phase": change.phase})
                    return True
                failure = answer["Entries"][0].get("ErrorCode", "failed")
            except Exception as exc:  # botocore's errors, throttling included: retried, then reported
                failure = type(exc).__name__
            self._sleep(min(8.0, 0.5 * 2**attempt))
        logger.error("phase change not published", extra={"job": change.job, "error": failure})
        return False
