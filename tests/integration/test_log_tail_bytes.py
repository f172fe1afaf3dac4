"""A failed container's log is bytes: a tail cut in the middle of a character still ends as JobFailed.

The API server's ``limitBytes`` counts bytes, so a tqdm progress bar (one
long line of U+2588 FULL BLOCK, three bytes each) cut at 4,096 bytes leaves
an incomplete character at the end. The status Lambda must still report the
failure with its diagnostics and the readable part of the log; a failed job
is never hidden behind a UnicodeDecodeError.
"""

from __future__ import annotations

import json

from harness import operator_sim
from harness.local import LocalJobsync
from tests.conftest import load_event

QUIET = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}
LIMIT = 4096  # Settings.log_tail_bytes, the limitBytes status asks for
BAR = "\u2588"


def progress_bar_cut_mid_character(prefix_bytes: int) -> str:
    """Text that, after ``prefix_bytes`` of earlier log, puts byte LIMIT inside a █."""
    head = "Epoch 1: "
    pad = "x" * ((LIMIT - prefix_bytes - len(head) - 2) % 3)  # the LIMIT-th byte is then the second of a █
    return head + pad + BAR * 2000 + "| 1000/1000\nRuntimeError: CUDA error: out of memory\n"


def test_a_failed_jobs_log_cut_inside_a_character_still_fails_with_the_job_failed_cause(monkeypatch):
    before = operator_sim._training_log("Master", 0, done=False)  # what the failed pod printed first
    tail = progress_bar_cut_mid_character(len(before.encode()))
    cut = (before + tail).encode()[:LIMIT]
    assert cut.endswith(BAR.encode()[:2])  # limitBytes ends the answer two bytes into a █
    monkeypatch.setattr(operator_sim, "OOM_TRACEBACK", tail)

    with LocalJobsync("failure", {"pending_s": 30, "run_s": 300}, env=QUIET) as local:
        result = local.run(load_event("run-job-input.json"), name="tqdm")
        logs = [r for r in local.api.requests if r.resource == "pods/log"]

    assert result.status == "FAILED" and result.error == "JobFailed", (result.error, result.cause)
    cause = json.loads(result.cause)
    assert cause["reason"] == "PyTorchJobFailed"
    assert any(d.get("exitCode") == 1 for d in cause["diagnostics"])
    assert BAR in cause["logTail"] and len(cause["logTail"].encode()) <= LIMIT
    assert [r.status for r in logs] == [200]
