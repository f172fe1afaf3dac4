"""JobsFunction: RunJobs' two steps around its Distributed Map (``jobsync.run.jobs``).

``{"step": "prepare", "run", "jobs" | "jobsFrom"}``: checks the run's jobs and writes them where the
Map reads them. ``{"step": "gather", "run", "count", "failFast", "mapError"}``: reads the Map Run's
results, writes every job's outcome, and returns the run's output and failure. A bad input raises
``InvalidInput`` naming what is wrong, which RunJobs raises as its own error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from jobsync import handler_metrics, runtime, strict_json, tracing
from jobsync.errors import InvalidInput
from jobsync.run import jobs
from jobsync.run.inputs import parse

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@tracing.capture_lambda_handler
@metrics.log_metrics(capture_cold_start_metric=True)
@handler_metrics.count_errors(metrics, "JobsErrors")
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    step = event.get("step") if isinstance(event, dict) else None
    if step == "prepare":
        prepared = jobs.prepare(parse(jobs.PrepareRequest, event), runtime.s3(), runtime.runs_bucket())
        metrics.add_metric(name="RunJobsJobs", unit=MetricUnit.Count, value=prepared["count"])
        return strict_json.checked(prepared)
    if step == "gather":
        gathered = jobs.gather(parse(jobs.GatherRequest, event), runtime.s3(), runtime.runs_bucket())
        summary = gathered["output"]["summary"]
        logger.info("run gathered", extra={"summary": summary})
        metrics.add_metric(name="RunJobsJobsSucceeded", unit=MetricUnit.Count, value=summary["succeeded"])
        metrics.add_metric(
            name="RunJobsJobsNotSucceeded", unit=MetricUnit.Count, value=summary["total"] - summary["succeeded"]
        )
        return strict_json.checked(gathered)
    raise InvalidInput(f'step: "prepare" or "gather" is required, got {str(step)[:64]!r}')
