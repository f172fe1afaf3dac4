"""The Lambda functions as AWS runs them, on this machine: SAM CLI's ``sam local`` on the ``sam build`` artifact.

SAM CLI runs each function in a container of the image AWS publishes as
``public.ecr.aws/lambda/python:3.11-x86_64``. No registry serves it here, so this
package builds an image laid out as AWS's is, from pinned parts, and tags it
under that name:

- ``daemon``: a Docker daemon that answers (the one already running, or one
  started here and stopped again by its pid);
- ``image``: Debian bookworm (debootstrap, minbase) with python3.11, AWS's
  runtime interface client ``awslambdaric`` under ``/var/runtime`` and the AWS
  Lambda Runtime Interface Emulator built from the pinned Go module in
  ``emulator/``, cached by a hash of its inputs;
- ``sam``: ``sam build``, ``sam local invoke`` and ``sam local start-lambda``;
- ``relay``: the host's loopback servers (a Kubernetes API, moto) offered on the
  Docker bridge's gateway address, the only host address a container can reach;
- ``__main__``: ``make sam-local``, everything above and then the checks in
  ``lambda_runtime/tests``.
"""
