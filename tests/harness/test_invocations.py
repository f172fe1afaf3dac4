"""In-process handlers keep their metrics apart by thread, as Lambda keeps invocations apart by process."""

from __future__ import annotations

import threading

from aws_lambda_powertools.metrics import MetricUnit

from harness.local import load_handler


def test_one_threads_flush_leaves_another_threads_metrics_alone():
    # An EventBridge rule's Cleanup ran in a thread beside the next execution's Submit: Powertools' one
    # metric set per process let the Cleanup's flush empty the Submit's, which then warned and failed.
    submit, cleanup = load_handler("submit").metrics, load_handler("cleanup").metrics
    added, flushed = threading.Event(), threading.Event()
    seen: list[int] = []

    def invocation() -> None:
        submit.add_metric(name="JobsSubmitted", unit=MetricUnit.Count, value=1)
        added.set()
        flushed.wait(10)
        seen.append(len(submit.provider.metric_set))
        submit.provider.clear_metrics()

    other = threading.Thread(target=invocation)
    other.start()
    assert added.wait(10)
    cleanup.add_metric(name="JobsDeleted", unit=MetricUnit.Count, value=0)
    cleanup.flush_metrics()  # this thread's
    submit.provider.clear_metrics()  # this thread's too: the other thread's set is its own
    flushed.set()
    other.join(10)
    assert seen == [1]
