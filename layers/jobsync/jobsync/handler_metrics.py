"""What every handler invocation publishes, so none ends with no metric at all.

Powertools' ``log_metrics`` flushes the metrics an invocation added; one that
added none (a Lambda that raised, a cleanup that deleted nothing) publishes
nothing and warns ("No application metrics to publish") in the function's log,
once per such invocation. So each handler counts what it did even when it is
zero (``JobsDeleted: 0``), and ``count_errors`` counts an invocation that
raised, by function (``SubmitErrors``, ...), before the error leaves it: the
state machine sees the error as before, and the count is a metric to alarm on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

Handler = TypeVar("Handler", bound=Callable[..., Any])


def count_errors(metrics: Any, name: str) -> Callable[[Handler], Handler]:
    """Under ``@metrics.log_metrics``: an invocation that raises adds one to the count ``name``, then raises."""

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        def counted(event: Any, context: Any) -> Any:
            try:
                return handler(event, context)
            except Exception:
                from aws_lambda_powertools.metrics import MetricUnit

                metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
                raise

        return cast("Handler", counted)

    return decorate
