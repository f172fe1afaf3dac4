"""ResumeFunction: wakes the execution that waits for a job the notifier says has ended.

Invoked by the stack's EventBridge rule with a "Job Phase Changed" event of a
terminal phase (``jobsync.core.event``). Checks the claim with one GET of the
job and wakes the waiting execution, whose next look gives the verdict
(``jobsync.run.callback.resume``); an event for an execution that waits for
nothing, or for a job that has not ended, is a no-op, so duplicates are harmless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from jobsync import clock, handler_metrics, runtime, tracing
from jobsync.aws.tokens import TokenStore
from jobsync.core.event import PhaseChanged
from jobsync.run.callback import resume
from jobsync.run.inputs import parse

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@tracing.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
@handler_metrics.count_errors(metrics, "ResumeErrors")
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    change: PhaseChanged = parse(PhaseChanged, event)
    store = TokenStore(runtime.table())
    outcome = resume(change, runtime.cluster(), runtime.settings(), store, runtime.stepfunctions())
    logger.info("job event", extra={"resumed": outcome.resumed, "why": outcome.why, "execution": change.execution})
    # Counted when nothing was resumed too (0): every invocation publishes its metric.
    metrics.add_metric(name="Resumed", unit=MetricUnit.Count, value=1 if outcome.resumed else 0)
    if outcome.resumed and change.finished_at is not None:
        # How late the execution learns of the job's end: the event's own delay, end to end.
        delay = max(0.0, clock.now() - change.finished_at)
        metrics.add_metric(name="ResumeDelaySeconds", unit=MetricUnit.Seconds, value=delay)
    return {"resumed": outcome.resumed, "why": outcome.why}
