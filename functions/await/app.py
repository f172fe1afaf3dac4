"""AwaitFunction: callback mode's wait. Stores the execution's task token, then looks at the job once.

Invoked by the state machine's Await task (``lambda:invoke.waitForTaskToken``)
with ``{"state": <loop state>, "taskToken": ...}``. The execution then waits
with no transitions until ResumeFunction (on the notifier's event) or this
function (the job had already ended) calls SendTaskSuccess with the next loop
state, or until the task's timeout runs one ordinary Status poll.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from jobsync import handler_metrics, runtime, tracing
from jobsync.aws.tokens import TokenStore
from jobsync.run.callback import arm
from jobsync.run.inputs import AwaitRequest, parse

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@tracing.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
@handler_metrics.count_errors(metrics, "AwaitErrors")
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse(AwaitRequest, event)
    store = TokenStore(runtime.table())
    new = arm(request.state, request.taskToken, runtime.cluster(), runtime.settings(), store, runtime.stepfunctions())
    logger.info("waiting for the job's event", extra={"job": new.job.name, "phase": new.phase, "ended": new.terminal})
    metrics.add_metric(name="Awaits", unit=MetricUnit.Count, value=1)
    # The state machine takes the loop state from SendTaskSuccess, not from here: this says what the look saw.
    return {"phase": new.phase, "reason": new.reason, "terminal": new.terminal}
