"""RunJobs' jobs and outcomes: what a run's list of jobs must be, and what its Map Run's records say.

RunJobs (statemachine/run_jobs.asl.json) runs each job as a child execution of a Distributed Map
whose ResultWriter exports every child's record to S3: SUCCEEDED, FAILED (failed, timed out and
aborted children) and PENDING (items never started). Pure, no I/O: ``jobsync.run.jobs`` reads and
writes S3 around it.

- ``check_jobs``: a list of 1 to ``MAX_JOBS`` RunJob inputs, each a JSON object an execution can take.
- ``outcomes``: one outcome per job, in input order, from the records; a job with no record never started.
- ``verdict``: the run's output (the summary, where every outcome is, and the outcomes themselves
  when they fit ``OUTPUT_LIMIT``) and, unless every job succeeded, its failure: failFast's first
  failure, else ``JobsFailed`` with every job named in a Cause of at most ``CAUSE_LIMIT`` characters.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from jobsync.core.outcome import Phase
from jobsync.errors import InvalidInput

# The most one run takes (README "Several jobs at once"); make bench-runjobs measures a run of that many.
MAX_JOBS = 1000
# An execution's input, and a state's input or output, in UTF-8 bytes of compact JSON (Step Functions).
PAYLOAD_LIMIT = 262_144
# Each job reaches its own RunJob execution inside the Map Run child's input: {"index", "input", "failFast"}.
MAX_JOB_BYTES = PAYLOAD_LIMIT - 1024
# The execution's output, with the outcomes inline, leaves room in the payload for the task around it.
OUTPUT_LIMIT = 240_000
CAUSE_LIMIT = 32_768  # characters of a failure's Cause
# The child's Error that says what became of its job (RunJob's Fail states, one per Phase), and States.Timeout's.
PHASES = {**{p.error_name: str(p) for p in Phase if p.error_name}, "States.Timeout": str(Phase.TIMED_OUT)}
# A Fail state may not raise a States.* error: the child's end in its stead (RunJobs' item processor too).
ENDED = {"ABORTED": "ExecutionAborted", "TIMED_OUT": "ExecutionTimedOut"}
ERROR_PHASES = {**PHASES, "ExecutionAborted": "ABORTED", "ExecutionTimedOut": "TIMED_OUT"}
SUMMARY_PHASES = {
    "succeeded": ("SUCCEEDED",),
    "failed": ("FAILED",),
    "stopped": ("STOPPED", "ABORTED"),
    "timedOut": ("TIMED_OUT",),
    "notFound": ("NOT_FOUND",),
    "error": ("ERROR",),
}


def compact(value: Any) -> str:
    """``value`` as Step Functions stores it: compact JSON (its size is ``len(compact(v).encode())``)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def check_jobs(jobs: Any, where: str) -> list[dict[str, Any]]:
    """``jobs`` if 1 to ``MAX_JOBS`` JSON objects, each one an execution can take; else InvalidInput naming where."""
    if not isinstance(jobs, list):
        raise InvalidInput(f"{where}: an array of 1 to {MAX_JOBS} RunJob inputs is required, got {_kind(jobs)}")
    if not 1 <= len(jobs) <= MAX_JOBS:
        raise InvalidInput(
            f"{where}: an array of 1 to {MAX_JOBS} RunJob inputs is required (more jobs: several runs), "
            f"got an array of {len(jobs)}"
        )
    for index, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise InvalidInput(f"{where}: job {index} must be a JSON object (a RunJob input), got {_kind(job)}")
        size = len(compact(job).encode())
        if size > MAX_JOB_BYTES:
            raise InvalidInput(
                f"{where}: job {index} is {size:,} bytes of JSON, over the {MAX_JOB_BYTES:,} one execution's input "
                "may hold beside its index"
            )
    return jobs


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, str):
        return f'string "{value[:64]}"'
    return f"an array of {len(value)}" if isinstance(value, list) else type(value).__name__


def _parsed(text: Any) -> Any:
    """A record's JSON text field, parsed (None when absent or not JSON)."""
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def outcomes(records: Iterable[Mapping[str, Any]], total: int) -> list[dict[str, Any]]:
    """Each job's outcome, in input order, from the Map Run's records (ResultWriter's files).

    A child that succeeded returns its outcome (RunJobs' item processor builds it, a failed RunJob
    included). One that failed (failFast's first failure), was stopped or timed out is read from its
    Error and Cause. A job with no record never started: the run failed, or was stopped, first.
    """
    by_index: dict[int, dict[str, Any]] = {}
    for record in records:
        item = _parsed(record.get("Input"))
        index = item.get("index") if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < total:
            continue
        status = record.get("Status")
        output = _parsed(record.get("Output"))
        if status == "SUCCEEDED" and isinstance(output, dict):
            by_index[index] = output
        elif status in {"FAILED", "TIMED_OUT", "ABORTED"}:
            by_index[index] = _ended(index, str(status), record)
    return [by_index.get(i) or _not_started(i) for i in range(total)]


def _ended(index: int, status: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """The outcome of a job whose Map Run child did not succeed: its Error says what became of the job."""
    error = record.get("Error") if isinstance(record.get("Error"), str) else None
    cause = _parsed(record.get("Cause"))
    cause = cause if isinstance(cause, dict) and error in PHASES else {}
    phase = (
        "ABORTED" if status == "ABORTED" else "TIMED_OUT" if status == "TIMED_OUT" else ERROR_PHASES.get(error or "")
    )
    return {
        "index": index,
        "executionArn": None,  # the job's own execution: the Map Run child's history has it
        "status": status,
        "job": cause.get("job"),
        "phase": phase or "ERROR",
        "reason": cause.get("reason"),
        "error": error,
        "result": cause.get("result"),
    }


def _not_started(index: int) -> dict[str, Any]:
    keys = ("executionArn", "job", "reason", "error", "result")
    return {"index": index, "status": "NOT_STARTED", "phase": "ABORTED", **dict.fromkeys(keys)}


def summary(jobs: list[dict[str, Any]]) -> dict[str, int]:
    counts = {"total": len(jobs)}
    for key, phases in SUMMARY_PHASES.items():
        counts[key] = sum(1 for job in jobs if job.get("phase") in phases)
    return counts


def verdict(
    jobs: list[dict[str, Any]],
    records: Iterable[Mapping[str, Any]],
    fail_fast: bool,
    where: dict[str, Any],
    map_error: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``{"output": ..., "failure": None | {"Error", "Cause"}}``: what the run ends with.

    ``where`` says where every outcome is (``bucket``, ``outcomes``, ``manifest``); the outcomes
    themselves are in the output too when it stays within ``OUTPUT_LIMIT`` bytes.
    """
    counted = summary(jobs)
    output: dict[str, Any] = {"jobs": jobs, "summary": counted, "results": where}
    if len(compact(output).encode()) > OUTPUT_LIMIT:
        output = {"summary": counted, "results": where}
    records = list(records)
    every_one = counted["succeeded"] == counted["total"]
    if every_one and map_error is None:
        return {"output": output, "failure": None}
    if every_one or (map_error is not None and not records):
        return {"output": output, "failure": _map_failure(map_error or {})}
    if fail_fast:
        return {"output": output, "failure": first_failure(jobs, records)}
    return {"output": output, "failure": {"Error": "JobsFailed", "Cause": jobs_failed_cause(jobs, counted, where)}}


def _map_failure(error: Mapping[str, Any]) -> dict[str, str]:
    """An error of the Map itself (its items unread, its results unwritten), named, within a Cause."""
    name = error.get("Error") if isinstance(error.get("Error"), str) else "the Map failed"
    why = error.get("Cause") if isinstance(error.get("Cause"), str) else "without a cause"
    return {"Error": "RunJobsFailed", "Cause": f"{name}: {why}"[:CAUSE_LIMIT]}


def first_failure(jobs: list[dict[str, Any]], records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """failFast: the first job's failure, its Error and Cause as its child raised them (failing the run).

    The Map Run child that failed first (the one whose failure stopped the others); else, when no
    child failed (one stopped by hand, one timed out), the first job that did not succeed.
    """
    failed = [r for r in records if r.get("Status") == "FAILED" and isinstance(r.get("Error"), str)]
    if failed:
        first = min(failed, key=lambda r: _stop_time(r.get("StopDate")))
        error = str(first["Error"])
        cause = first.get("Cause") if isinstance(first.get("Cause"), str) else ""
        if not error.startswith("States."):
            return {"Error": error, "Cause": str(cause)[:CAUSE_LIMIT]}
        return {"Error": "ExecutionFailed", "Cause": f"{error}: {cause}"[:CAUSE_LIMIT]}
    job = next(j for j in jobs if j.get("phase") != "SUCCEEDED")
    status = str(job.get("status"))
    name = ENDED.get(status, "ExecutionFailed")
    return {
        "Error": name,
        "Cause": f"job {job['index']} ended {status} ({job.get('phase')}) without a cause"[:CAUSE_LIMIT],
    }


def _stop_time(value: Any) -> float:
    """A record's StopDate as seconds (ISO 8601 text or epoch milliseconds); unknown ones last."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) / 1000
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return float("inf")


def jobs_failed_cause(jobs: list[dict[str, Any]], counted: dict[str, int], where: dict[str, Any]) -> str:
    """The Cause of JobsFailed: the summary and every job, as much of each as fits 32,768 characters.

    Each job's index, executionArn, job name, phase, reason and error; past the limit, index, phase
    and error only; past that, the jobs that did not succeed only, as many as fit, and where all are.
    """
    full = compact(
        {
            "summary": counted,
            "jobs": [
                {
                    "index": j.get("index"),
                    "executionArn": j.get("executionArn"),
                    "job": (j.get("job") or {}).get("name") if isinstance(j.get("job"), dict) else None,
                    "phase": j.get("phase"),
                    "reason": j.get("reason"),
                    "error": j.get("error"),
                }
                for j in jobs
            ],
        }
    )
    if len(full) <= CAUSE_LIMIT:
        return full
    brief = [{"index": j.get("index"), "phase": j.get("phase"), "error": j.get("error")} for j in jobs]
    more = "each child execution (the output jobs[].executionArn) has the rest"
    short = compact({"summary": counted, "jobs": brief, "more": more})
    if len(short) <= CAUSE_LIMIT:
        return short
    location = f"s3://{where.get('bucket')}/{where.get('outcomes')}"
    failed = [job for job in brief if job["phase"] != "SUCCEEDED"]
    kept: list[dict[str, Any]] = []
    for job in failed:
        candidate = compact({"summary": counted, "jobs": [*kept, job], "more": _more(location, len(failed) - 1)})
        if len(candidate) > CAUSE_LIMIT:
            break
        kept.append(job)
    return compact({"summary": counted, "jobs": kept, "more": _more(location, len(failed) - len(kept))})


def _more(location: str, left_out: int) -> str:
    return f"the jobs that did not succeed ({left_out} more not listed); every job's outcome: {location}"
