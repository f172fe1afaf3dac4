"""CleanupFunction: delete the job when the execution's `cleanup` setting asks for it.

Two callers: the state machine's Cleanup state (the loop state, whose job
carries the uid Submit returned), and an EventBridge rule for executions that
ended without reaching it (aborted, timed out, failed: a "Step Functions
Execution Status Change" event; the uid is then read from the execution's
history). Either way only that uid is deleted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from jobsync import handler_metrics, runtime, strict_json, tracing
from jobsync.aws.executions import history_reader
from jobsync.run import execution_events
from jobsync.run.cleanup import cleanup
from jobsync.run.inputs import CleanupRequest, parse

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@tracing.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
@handler_metrics.count_errors(metrics, "CleanupErrors")
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if execution_events.is_execution_event(event):
        result = execution_events.cleanup_after(
            event,
            runtime.cluster(),
            runtime.settings(),
            runtime.describe_execution,
            history_reader(runtime.stepfunctions()),
            runtime.cleanup_state_ran,
            runtime.stopped_with,
        )
        record(result)
    else:
        result = cleanup(parse(CleanupRequest, event), runtime.cluster(), runtime.settings())
    logger.info("cleanup", extra=result)
    # Counted when nothing was deleted too (0): every invocation publishes its metric.
    metrics.add_metric(name="JobsDeleted", unit=MetricUnit.Count, value=1 if result["deleted"] else 0)
    return strict_json.checked(result)


def record(result: dict[str, Any]) -> None:
    """Keep the outcome for whoever stopped the execution (jobsync stop); a lost record costs that view only."""
    try:
        runtime.record_cleanup(result)
    except Exception as exc:  # DynamoDB trouble must not fail a cleanup that did its work
        logger.warning(
            "cleanup outcome not recorded", extra={"execution": result.get("execution"), "error": type(exc).__name__}
        )
