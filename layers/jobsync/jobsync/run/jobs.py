"""RunJobs' two steps around its Distributed Map (the jobs function): prepare the items, gather the outcomes.

Everything a run keeps is in the stack's runs bucket, under ``runs/<execution name>/``:

- ``prepare``: the run's jobs, given inline (``jobs``) or as an object the caller put under the
  bucket's ``inputs/`` (``jobsFrom``), checked (``jobsync.core.runs.check_jobs``) and written to
  ``jobs.json``, which the Map's ItemReader reads;
- ``gather``: the Map Run's result files (its ResultWriter's manifest under the same prefix), each
  job's outcome written to ``outcomes.json`` in input order, and the run's output and failure
  (``jobsync.core.runs.verdict``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from jobsync.aws import runs as store
from jobsync.core import runs
from jobsync.errors import InvalidInput

INPUTS_PREFIX = "inputs/"
RUNS_PREFIX = "runs/"
MAX_JOBS_FILE_BYTES = 64 * 1024 * 1024
MAX_RESULTS_FILE_BYTES = 128 * 1024 * 1024
# An execution's name, as Step Functions allows it (1 to 80 characters, none of these).
EXECUTION_NAME = r"^[^\s<>{}\[\]?*\"#%\\^|~`$&,;:/]{1,80}$"


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    run: str = Field(pattern=EXECUTION_NAME)


class PrepareRequest(_Request):
    """Prepare's input: the execution's name and its jobs, inline or where to read them."""

    step: Literal["prepare"]
    jobs: list[Any] | None = None
    jobsFrom: str | None = None


class GatherRequest(_Request):
    """Gather's input: how many jobs the run took, whether it fails fast, and the Map's error if it failed."""

    step: Literal["gather"]
    count: int = Field(ge=1, le=runs.MAX_JOBS)
    failFast: bool
    mapError: dict[str, Any] | None = None


def run_prefix(run: str) -> str:
    return f"{RUNS_PREFIX}{run}/"


def prepare(request: PrepareRequest, s3: Any, bucket: str) -> dict[str, Any]:
    """Check the run's jobs and write them where its Map reads them; ``{"bucket", "key", "count"}``."""
    if (request.jobs is None) == (request.jobsFrom is None):
        raise InvalidInput("give exactly one of 'jobs' (RunJob inputs) or 'jobsFrom' (s3://bucket/inputs/key.json)")
    if request.jobsFrom is not None:
        key = _input_key(request.jobsFrom, bucket)
        where = f"jobsFrom {request.jobsFrom}"
        jobs = runs.check_jobs(store.read_json(s3, bucket, key, MAX_JOBS_FILE_BYTES, "jobsFrom"), where)
    else:
        jobs = runs.check_jobs(request.jobs, "jobs")
    key = run_prefix(request.run) + "jobs.json"
    store.write_json(s3, bucket, key, jobs)
    return {"bucket": bucket, "key": key, "count": len(jobs)}


def _input_key(uri: str, bucket: str) -> str:
    """The key ``jobsFrom`` names: an object under the runs bucket's ``inputs/``, the only one a run may read."""
    named_bucket, _, key = uri.removeprefix("s3://").partition("/")
    if (
        not uri.startswith("s3://")
        or named_bucket != bucket
        or not key.startswith(INPUTS_PREFIX)
        or key == INPUTS_PREFIX
    ):
        raise InvalidInput(
            f"jobsFrom: an object under s3://{bucket}/{INPUTS_PREFIX} (the stack's RunJobsBucketName) is required, "
            f'got "{uri[:200]}"'
        )
    return key


def gather(request: GatherRequest, s3: Any, bucket: str) -> dict[str, Any]:
    """Each job's outcome from the Map Run's results, written in input order; the run's output and failure."""
    prefix = run_prefix(request.run)
    manifest = store.latest_manifest(s3, bucket, prefix)
    records: list[dict[str, Any]] = []
    files: dict[str, Any] = {}
    if manifest is not None:
        files = store.read_json(s3, bucket, manifest, MAX_RESULTS_FILE_BYTES, "the Map Run's manifest")
        for status in ("SUCCEEDED", "FAILED", "PENDING"):
            for entry in (files.get("ResultFiles") or {}).get(status, []):
                records += store.read_json(s3, bucket, entry["Key"], MAX_RESULTS_FILE_BYTES, "the Map Run's results")
    jobs = runs.outcomes(records, request.count)
    outcomes_key = prefix + "outcomes.json"
    store.write_json(s3, bucket, outcomes_key, jobs)
    where = {"bucket": bucket, "outcomes": outcomes_key, "manifest": manifest, "mapRunArn": files.get("MapRunArn")}
    return runs.verdict(jobs, records, request.failFast, where, request.mapError)
