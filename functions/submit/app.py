"""SubmitFunction: create the job for this execution and return the first loop state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from jobsync import handler_metrics, runtime, strict_json, tracing
from jobsync.run.inputs import SubmitRequest, parse
from jobsync.run.submit import submit

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@tracing.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
@handler_metrics.count_errors(metrics, "SubmitErrors")
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse(SubmitRequest, event)
    state = submit(request, runtime.cluster(), runtime.settings(), runtime.fetch_template, runtime.hints())
    logger.info("job submitted", extra={"job": state.job.model_dump(), "phase": state.phase})
    metrics.add_metric(name="JobsSubmitted", unit=MetricUnit.Count, value=1)
    return strict_json.checked(state.payload())
