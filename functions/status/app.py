"""StatusFunction: one poll of the job: its phase, why it is stuck or failed, the next wait."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from jobsync import handler_metrics, runtime, strict_json, tracing
from jobsync.core.outcome import Phase
from jobsync.core.state import LoopState, seconds
from jobsync.run.inputs import parse
from jobsync.run.poll import poll

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@tracing.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
@handler_metrics.count_errors(metrics, "StatusErrors")
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    state = parse(LoopState, event)
    new = poll(state, runtime.cluster(), runtime.settings())
    logger.info(
        "job polled",
        extra={"job": new.job.name, "phase": new.phase, "reason": new.reason, "waitSeconds": new.waitSeconds},
    )
    metrics.add_metric(name="Polls", unit=MetricUnit.Count, value=1)
    if new.phase == Phase.SUCCEEDED:
        learn(new)
    if new.terminal:
        # One metric with a phase dimension, on its own so Polls keeps its dimensions.
        with single_metric(name="JobsFinished", unit=MetricUnit.Count, value=1) as finished:
            finished.add_dimension(name="phase", value=new.phase)
        delay = detection_delay(new)
        if delay is not None:
            # How late jobsync learned of the end: the job's own finish to the poll that saw it.
            with single_metric(name="DetectionDelaySeconds", unit=MetricUnit.Seconds, value=delay) as late:
                late.add_dimension(name="phase", value=new.phase)
    return strict_json.checked(new.payload())


def detection_delay(state: LoopState) -> float | None:
    """noticedAt - finishedAt, when the job's status gave its finish (a poll's own time would say 0)."""
    if state.timesFrom.get("finishedAt") != "job" or state.finishedAt is None or state.noticedAt is None:
        return None
    return max(0.0, seconds(state.noticedAt) - seconds(state.finishedAt))  # a cluster clock ahead is no negative delay


def learn(state: LoopState) -> None:
    """Keep a successful run's duration for the next runs of its family; a lost write costs a hint only."""
    store = runtime.hints()
    if store is None:
        return
    try:
        store.record_success(state)
    except Exception as exc:  # DynamoDB trouble must not fail a poll that saw the job succeed
        logger.warning("duration not recorded", extra={"family": state.jobFamily, "error": type(exc).__name__})
