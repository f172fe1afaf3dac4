"""bench/resume.py: what a callback job's end costs now that Resume wakes a look, measured in the local run."""

from __future__ import annotations

from bench import resume
from bench.report import resume_lines


def test_the_wake_costs_one_await_round_and_a_get_more_than_trusting_the_event():
    measured = resume.measure()
    end = measured["job_end"]
    # Resume's GET of the job, then the woken wait's look: a GET and the pods' LIST (the result).
    assert end["kubernetes_requests"] == {"get pytorchjobs": 2, "list pods": 1}
    assert measured["more_than_trusting_the_event"] == {
        "transitions": 2,  # Await and IsDone once more
        "history_events": 8,
        "lambda_invocations": 1,  # the second Await
        "kubernetes_requests": 2,
    }
    # From the wake: Await's exit, IsDone, Await (its look ends it), IsDone, Cleanup, Outcome, Succeeded.
    assert end["states_entered"] == 6
    lines = resume_lines({"callback": {"resume": measured}})
    assert lines and "2 state transitions" in lines[2] and "list pods" in lines[2]
