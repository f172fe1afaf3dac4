"""X-Ray tracing of the handlers, as Powertools' ``Tracer`` gives it, paid for only when it is on.

``Tracer()`` imports the X-Ray SDK even with tracing off, and its default
``patch_all()`` imports every library it can trace, botocore among them, before
the handler has run once. A status poll against the API needs neither. So:

- tracing off (``POWERTOOLS_TRACE_DISABLED``, or not in Lambda, or in SAM /
  Chalice local: Powertools' own rule, :func:`enabled`): the handler is not
  wrapped and the X-Ray SDK is never imported;
- tracing on (``Tracing: Active`` in template.yaml): the handler runs in
  Powertools' ``## lambda_handler`` subsegment, as before. Of what
  ``patch_all()`` patches, jobsync calls through two libraries: ``requests``
  (imported with the kubernetes client anyway), patched at once, and
  ``botocore``, patched by :func:`patch_botocore` when jobsync first imports
  boto3 (``jobsync.aws``), so every AWS call is a subsegment as before. The
  others (sqlite3, pymongo, psycopg, ...) are libraries jobsync never calls.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

from aws_lambda_powertools.shared import constants
from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

Handler = TypeVar("Handler", bound=Callable[..., Any])

# Patched with the tracer: already imported by the kubernetes client, so free.
PATCHED_AT_START = ("requests",)
_lock = threading.Lock()
_botocore_patched = False


def enabled() -> bool:
    """Whether X-Ray tracing is on: Powertools' rule (``Tracer._is_tracer_disabled``), read from the environment."""
    if resolve_truthy_env_var_choice(env=os.getenv(constants.TRACER_DISABLED_ENV, "false")):
        return False
    in_lambda = bool(os.getenv(constants.LAMBDA_TASK_ROOT_ENV))
    emulated = bool(os.getenv(constants.SAM_LOCAL_ENV) or os.getenv(constants.CHALICE_LOCAL_ENV))
    return in_lambda and not emulated


@cache
def tracer() -> Tracer:
    """The container's Powertools Tracer (tracing on only), with the libraries jobsync calls patched."""
    from aws_lambda_powertools import Tracer

    traced = Tracer(auto_patch=False)
    traced.patch(PATCHED_AT_START)
    return traced


def capture_lambda_handler(handler: Handler) -> Handler:
    """``@tracer.capture_lambda_handler`` when tracing is on; the handler itself when it is off."""
    if not enabled():
        return handler
    return cast("Handler", tracer().capture_lambda_handler(handler))


def patch_botocore() -> None:
    """Trace AWS calls (botocore) from now on, when tracing is on; jobsync.aws calls it on importing boto3."""
    global _botocore_patched
    with _lock:
        if _botocore_patched or not enabled():
            return
        tracer().patch(("botocore",))
        _botocore_patched = True
