"""AWS over real HTTP, served from this process's moto backends: for programs the local run starts as processes.

A subprocess (``jobsync run``, the notifier) reaches AWS through an endpoint URL
(``AWS_ENDPOINT_URL``, ``AWS_ENDPOINT_URL_EVENTS``) with fake credentials
(``client_env``). What it does over HTTP lands in the same backends as this
process's in-process clients under ``mock_aws``: an execution it starts runs in
the harness's interpreter, an event it puts on a bus meets the rules and the
hooks (``eventbridge_invokes_lambda_targets``) the in-process side installed.

moto's server mode (``moto.server.ThreadedMotoServer``) needs Flask (moto[server]);
without it the same dispatch runs under a plain werkzeug server (``WerkzeugMotoServer``):
the request, re-addressed to the service's AWS host, goes to moto's own request
router, the one ``mock_aws`` uses for in-process clients.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

REGION = "us-east-1"


class WerkzeugMotoServer:
    """moto's server mode without Flask: each request re-addressed to its AWS host and handed to moto's router."""

    def __init__(self) -> None:
        from werkzeug.serving import WSGIRequestHandler, make_server

        class QuietHandler(WSGIRequestHandler):
            def log_request(self, *args: Any, **kwargs: Any) -> None:
                pass

        # Stack name -> its "Outputs" (StateMachineArn, RunJobsStateMachineArn, ...) and "Parameters", by key,
        # when moto's CloudFormation cannot load.
        self.stacks: dict[str, dict[str, dict[str, str]]] = {}
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True, request_handler=QuietHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="aws-server", daemon=True)

    def _app(self, environ: dict[str, Any], start_response: Any) -> Any:
        from botocore.awsrequest import AWSPreparedRequest
        from botocore.compat import HTTPHeaders
        from moto.core.botocore_stubber import BotocoreStubber
        from werkzeug.wrappers import Request, Response

        request = Request(environ)
        scope = re.search(r"Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/", request.headers.get("Authorization", ""))
        if not scope:
            return Response("unsigned request", status=400)(environ, start_response)
        region, service = scope.groups()
        if service == "cloudformation" and not MOTO_CLOUDFORMATION:
            return _describe_stacks(self.stacks, request)(environ, start_response)
        host = f"{service}.{region}.amazonaws.com"
        headers = HTTPHeaders()
        for key, value in request.headers.items():
            headers[key] = host if key.lower() == "host" else value
        url = f"https://{host}{request.full_path.rstrip('?')}"
        answer = BotocoreStubber().process_request(
            AWSPreparedRequest(request.method, url, headers, request.get_data(), False)
        )
        status, response_headers, body = answer or (404, {}, f"no moto backend for {service}")
        return Response(body, status=status, headers=dict(response_headers))(environ, start_response)

    def start(self) -> None:
        self._thread.start()

    def get_host_and_port(self) -> tuple[str, int]:
        return "127.0.0.1", self._server.server_port

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def _moto_cloudformation() -> bool:
    try:
        import moto.cloudformation.models  # noqa: F401  (it imports every service's models)
    except ImportError:  # openapi-spec-validator and the like, of moto[cloudformation], are missing
        return False
    return True


MOTO_CLOUDFORMATION = _moto_cloudformation()


def _members(values: dict[str, str], key: str, value: str) -> str:
    return "".join(f"<member><{key}>{k}</{key}><{value}>{v}</{value}></member>" for k, v in values.items())


def _describe_stacks(stacks: dict[str, dict[str, dict[str, str]]], request: Any) -> Any:
    """DescribeStacks as CloudFormation answers it (query protocol), for the stacks the test created."""
    from werkzeug.wrappers import Response

    name = request.form.get("StackName", "")
    if request.form.get("Action") != "DescribeStacks" or name not in stacks:
        error = f"Stack with id {name} does not exist" if name else "unsupported"
        body = (
            "<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code>"
            f"<Message>{error}</Message></Error><RequestId>1</RequestId></ErrorResponse>"
        )
        return Response(body, status=400, content_type="text/xml")
    body = (
        '<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">'
        f"<DescribeStacksResult><Stacks><member><StackName>{name}</StackName>"
        f"<StackId>arn:aws:cloudformation:us-east-1:123456789012:stack/{name}/1</StackId>"
        "<CreationTime>2025-01-01T00:00:00Z</CreationTime><StackStatus>CREATE_COMPLETE</StackStatus>"
        f"<Outputs>{_members(stacks[name].get('Outputs', {}), 'OutputKey', 'OutputValue')}</Outputs>"
        f"<Parameters>{_members(stacks[name].get('Parameters', {}), 'ParameterKey', 'ParameterValue')}</Parameters>"
        "</member></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>"
        "</DescribeStacksResponse>"
    )
    return Response(body, status=200, content_type="text/xml")


def endpoint(server: Any) -> str:
    """The server's URL, ``http://127.0.0.1:<port>``."""
    host, port = server.get_host_and_port()
    return f"http://{host}:{port}"


def client_env(endpoint_url: str, base: Mapping[str, str] | None = None, service: str | None = None) -> dict[str, str]:
    """``base`` (this process's environment) without its AWS settings, pointed at ``endpoint_url``.

    Fake credentials, no config or credentials file, two attempts per call. With ``service`` only
    that service's endpoint is set, as a program that talks to one service would be configured;
    otherwise ``AWS_ENDPOINT_URL``. botocore names the variable after the service's id, not its
    endpoint prefix: EventBridge (``boto3.client("events")``) reads ``AWS_ENDPOINT_URL_EVENTBRIDGE``.
    """
    env = {key: value for key, value in (os.environ if base is None else base).items() if not key.startswith("AWS_")}
    env.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION=REGION,
        AWS_REGION=REGION,
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_MAX_ATTEMPTS="2",
    )
    env[f"AWS_ENDPOINT_URL_{service.upper().replace(' ', '_')}" if service else "AWS_ENDPOINT_URL"] = endpoint_url
    return env


@contextlib.contextmanager
def moto_server() -> Iterator[Any]:
    """An HTTP endpoint on 127.0.0.1 and a free port, served from this process's moto backends."""
    try:
        with warnings.catch_warnings():  # moto warns before it fails to import Flask
            warnings.simplefilter("ignore")
            from moto.server import ThreadedMotoServer

        server: Any = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    except ImportError:  # no Flask: moto[server] is not installed
        server = WerkzeugMotoServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
