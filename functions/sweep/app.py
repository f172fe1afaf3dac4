"""SweepFunction: callback mode's sweeper, run by the stack's schedule every SweepMinutes (jobsync.run.sweep).

One LIST per allowed kind against the executions that wait: it resumes those whose job ended without an event
(a dead notifier's work), and does the starting jobs' checks (stuck pods, an operator that never reconciles) that
no event announces. The schedule's event is ``{"sweep": "scheduled"}`` (its Input in template.yaml); any other
event raises ``InvalidInput`` and sweeps nothing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from jobsync import handler_metrics, runtime, tracing
from jobsync.aws.tokens import TokenStore
from jobsync.errors import InvalidInput
from jobsync.run.sweep import sweep

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

SCHEDULED = {"sweep": "scheduled"}  # the Sweep schedule's Input
logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@tracing.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
@handler_metrics.count_errors(metrics, "SweepErrors")
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event != SCHEDULED:
        got = json.dumps(event, default=str)[:120]
        raise InvalidInput(f'the schedule\'s event {{"sweep": "scheduled"}} is required, got {got}')
    store = TokenStore(runtime.table())
    report = sweep(
        runtime.cluster(),
        runtime.settings(),
        store,
        runtime.stepfunctions(),
        time_left=lambda: context.get_remaining_time_in_millis() / 1000,
    )
    summary = report.as_dict()
    logger.info("swept", extra=summary)
    metrics.add_metric(name="ExecutionsWaiting", unit=MetricUnit.Count, value=report.waiting)
    metrics.add_metric(name="SweepLooks", unit=MetricUnit.Count, value=report.looked)
    # A resume here is an end the notifier did not announce: a dead or lagging notifier shows as this metric.
    metrics.add_metric(name="SweepResumed", unit=MetricUnit.Count, value=report.resumed)
    metrics.add_metric(name="SweepFailedStarts", unit=MetricUnit.Count, value=report.failed_starts)
    return summary
