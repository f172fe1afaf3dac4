#!/bin/sh
# The image's entrypoint, as in AWS's Lambda base images: the handler is the one argument. Outside Lambda
# (no AWS_LAMBDA_RUNTIME_API) the Runtime Interface Emulator serves the invoke API and starts the runtime.
# SAM CLI replaces this entrypoint with its own copy of the emulator (/var/rapid/aws-lambda-rie).
if [ $# -ne 1 ]; then
  echo "entrypoint requires the handler name to be the first argument" 1>&2
  exit 142
fi
export _HANDLER="$1"

RUNTIME_ENTRYPOINT=/var/runtime/bootstrap
if [ -z "${AWS_LAMBDA_RUNTIME_API}" ]; then
  exec /usr/local/bin/aws-lambda-rie $RUNTIME_ENTRYPOINT
else
  exec $RUNTIME_ENTRYPOINT
fi
