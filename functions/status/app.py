"""StatusFunction: one poll of the job: its phase, why it is stuck or failed, the next wait."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from jobsync import runs, runtime
from jobsync.inputs import LoopState, parse

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
tracer = Tracer()
metrics = Metrics()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    state = parse(LoopState, event)
    new = runs.poll(state, runtime.cluster(), runtime.settings())
    logger.info(
        "job polled",
        extra={"job": new.job.name, "phase": new.phase, "reason": new.reason, "waitSeconds": new.waitSeconds},
    )
    metrics.add_metric(name="Polls", unit=MetricUnit.Count, value=1)
    if new.terminal:  # JobsSucceeded, JobsFailed, JobsStopped, JobsNot_Found, ...
        metrics.add_metric(name=f"Jobs{new.phase.title()}", unit=MetricUnit.Count, value=1)
    return new.model_dump(exclude_none=True)
