"""Run a real Amazon States Language definition locally, on virtual time.

moto's Step Functions interpreter (``execute_state_machine``) runs the
definition; ``lambda:invoke`` tasks call the real Python handlers in-process;
Wait states, retry back-off and every timestamp the execution shows go through
a :class:`~harness.clock.VirtualClock`, so a multi-hour run takes seconds.

    with LocalStepFunctions({"status": status.lambda_handler}) as sfn:
        arn = sfn.create_state_machine(definition, "jobsync", {"StatusFunctionArn": sfn.function_arn("status")})
        result = sfn.wait(sfn.start(arn, {"job": ...}))

The package:

- ``moto``: the one module that knows moto's internals: every seam the hooks replace,
  every private attribute they read, and the moto and jsonata-python versions all of it is
  written for (importing this package with other versions raises);
- ``hooks``: one named function per patch, grouped by what it is (AWS behaviour moto lacks,
  virtual time, the in-process functions, diagnostics), applied in the order of ``hooks.HOOKS``;
- ``history``: GetExecutionHistory in pages, as the service answers it;
- ``lambdas``: the mapped Lambda functions, run in-process, with injectable errors;
- ``service``: :class:`LocalStepFunctions`, its lifecycle, API and virtual time.
"""

from harness.sfn.moto import require_pinned_versions

require_pinned_versions()  # before anything imports moto's internals (harness.sfn.moto checks on import, too)

from harness.sfn.lambdas import Handler, Invocation, LambdaContext  # noqa: E402
from harness.sfn.scheduler import WaitRecord  # noqa: E402
from harness.sfn.service import HarnessError, LocalStepFunctions  # noqa: E402

__all__ = ["Handler", "HarnessError", "Invocation", "LambdaContext", "LocalStepFunctions", "WaitRecord"]
