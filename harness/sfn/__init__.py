"""Run a real Amazon States Language definition locally, on virtual time.

moto's Step Functions interpreter (``execute_state_machine``) runs the
definition; ``lambda:invoke`` tasks call the real Python handlers in-process;
Wait states, retry back-off and every timestamp the execution shows go through
a :class:`~harness.clock.VirtualClock`, so a multi-hour run takes seconds.

    with LocalStepFunctions({"status": status.lambda_handler}) as sfn:
        arn = sfn.create_state_machine(definition, "jobsync", {"StatusFunctionArn": sfn.function_arn("status")})
        result = sfn.wait(sfn.start(arn, {"job": ...}))

The package:

- ``pins``: the moto and jsonata-python versions the hooks are written for;
  importing this package with other versions raises;
- ``hooks``: every patch of moto's internals, one named function each, with the
  service behaviour it reproduces, applied in the order of ``hooks.HOOKS``;
- ``lambdas``: the mapped Lambda functions, run in-process, with injectable errors;
- ``service``: :class:`LocalStepFunctions`, its lifecycle, API and virtual time.
"""

from harness.sfn.pins import require_pinned_versions

require_pinned_versions()  # before anything imports moto's internals

from harness.sfn.lambdas import Handler, Invocation, LambdaContext  # noqa: E402
from harness.sfn.service import HarnessError, LocalStepFunctions, WaitRecord  # noqa: E402

__all__ = ["Handler", "HarnessError", "Invocation", "LambdaContext", "LocalStepFunctions", "WaitRecord"]
