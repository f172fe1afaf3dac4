"""EvaluateFunction: the phase of a job object, for people who keep their own ``eks:call``.

Input (any of):

- the object itself (a PyTorchJob, a batch/v1 Job, an Azure ML job summary, ...);
- ``{"object": <object>}``;
- the output of Step Functions' ``eks:call``: ``{"ResponseBody": <object>, ...}``,
  or for a list GET ``{"ResponseBody": {"items": [...]}}`` (no item: the job
  does not exist, phase NOT_FOUND and terminal; one item: it is evaluated).

Output: ``Evaluation.to_dict()``: ``phase``, ``terminal``, ``reason``,
``message``, ``since``, ``kind``, and ``progress`` when the object reports
it (JobSet and TrainJob job counts, Trainer v2's ``trainerStatus``).

Errors: input that cannot be evaluated (not an object, no ``kind``, an
unsupported kind, several items in a list) raises ``InvalidInput`` with a
message naming the field, so a state machine can ``Catch`` the error name
``InvalidInput`` rather than a generic Lambda failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from jobsync import handler_metrics, strict_json, tracing
from jobsync.errors import EvaluationError, InvalidInput
from jobsync.evaluation.evaluator import evaluate_event

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@tracing.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
@handler_metrics.count_errors(metrics, "EvaluateErrors")
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        result = evaluate_event(event)
    except EvaluationError as err:
        logger.warning("cannot evaluate the event", extra={"error": str(err)})
        metrics.add_metric(name="InvalidInputs", unit=MetricUnit.Count, value=1)
        raise InvalidInput(str(err)) from err
    logger.info("evaluated", extra={"evaluation": result})
    metrics.add_metric(name="Evaluations", unit=MetricUnit.Count, value=1)
    return strict_json.checked(result)
