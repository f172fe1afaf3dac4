"""The HTTP front end: a threading (optionally TLS) server, routing each request to the KubeAPI it serves."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from harness.kubeapi.errors import ApiError, PageNotFound, status_body
from harness.kubeapi.requestlog import RequestRecord, rbac_verb
from harness.kubeapi.routes import Route, parse_path, truthy
from harness.kubeapi.watch import VIRTUAL_WATCH_REACT_SECONDS

if TYPE_CHECKING:
    from harness.kubeapi.api import KubeAPI


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(
        self, addr: tuple[str, int], handler: type[BaseHTTPRequestHandler], api: KubeAPI, ctx: ssl.SSLContext | None
    ) -> None:
        self.api = api
        self.ssl_context = ctx
        super().__init__(addr, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up mid-answer (timeouts, dropped watches) are normal here, not worth a traceback.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    def finish_request(self, request: Any, client_address: Any) -> None:
        # The TLS handshake happens here, in the connection's own thread, so a slow client cannot stall accept().
        if self.ssl_context is None:
            super().finish_request(request, client_address)
            return
        try:
            tls_sock = self.ssl_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            super().finish_request(tls_sock, client_address)
        finally:
            with contextlib.suppress(OSError):
                tls_sock.close()


class Handler(BaseHTTPRequestHandler):
    _record: RequestRecord
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes: avoid the 40 ms delayed-ACK stall
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean; api.requests is the log

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    # ----------------------------------------------------------------- dispatch

    def _serve(self, method: str) -> None:
        api = self.server.api
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        raw = self._read_body()
        route = parse_path(split.path)
        watch = method == "GET" and truthy(query.get("watch")) and route is not None and not route.name
        self._record = record = RequestRecord(
            method,
            split.path,
            query,
            None,
            rbac_verb(method, route, watch) if route else None,
            route.group if route else None,
            route.rbac_resource if route else None,
            route.namespace if route else None,
            route.name if route else None,
            at=api.clock(),
        )
        try:
            record.body = json.loads(raw) if raw else None
        except ValueError:
            record.body = raw.decode(errors="replace")
        api.log_request(record)

        fault = api.take_fault(method, self.path)
        if fault and fault.kind == "drop":
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self._stall = fault.seconds if fault and fault.kind == "stall_after" else 0.0
        if fault and fault.kind == "delay":
            time.sleep(fault.seconds)
        elif fault and fault.kind != "stall_after":
            headers = {"Retry-After": str(int(fault.retry_after))} if fault.retry_after is not None else {}
            self._send_json(fault.code, status_body(fault.code, fault.reason, fault.message), headers)
            return

        if not api.authorized(self.headers.get("Authorization")):
            self._send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
            return
        try:
            self._dispatch(method, split.path, route, query, raw, watch)
        except PageNotFound:
            self._send(404, PageNotFound.TEXT, "text/plain; charset=utf-8")
        except ApiError as err:
            self._send_json(err.code, err.body())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _dispatch(
        self, method: str, path: str, route: Route | None, query: dict[str, str], raw: bytes, watch: bool
    ) -> int:
        api = self.server.api
        if route is None:
            return self._non_resource(method, path)
        mode = query.get("fieldValidation", "")
        body = self._json(raw) if raw else None
        if watch:
            return self._stream_watch(route, query)
        if method == "GET" and route.subresource == "log":
            self._send(200, api.handle_log(route, query), "text/plain")
            return 200
        if method == "GET":
            result = api.handle_get(route) if route.name else api.handle_list(route, query)
            return self._send_json(200, result)
        if method == "POST":
            obj, warnings = api.handle_create(route, body or {}, mode)
            return self._send_json(201, obj, warnings=warnings)
        if method in ("PUT", "PATCH") and route.name:
            patch_type = None
            if method == "PATCH":
                ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                patch_type = {
                    "application/merge-patch+json": "merge",
                    "application/strategic-merge-patch+json": "merge",
                    "application/json-patch+json": "json",
                }.get(ctype)
                if patch_type is None:
                    raise ApiError(
                        415,
                        "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types include: "
                        "application/json-patch+json, application/merge-patch+json",
                    )
            obj, warnings = api.handle_update(route, body, mode, patch_type)
            return self._send_json(200, obj, warnings=warnings)
        if method == "DELETE" and route.name:
            return self._send_json(200, api.handle_delete(route, query, body))
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def _non_resource(self, method: str, path: str) -> int:
        if method == "GET" and path in ("/healthz", "/readyz", "/livez"):
            self._send(200, b"ok", "text/plain")
            return 200
        if method == "GET" and path == "/version":
            return self._send_json(200, {"major": "1", "minor": "30", "gitVersion": "v1.30.0-kubeapi-emulator"})
        raise ApiError(404, "NotFound", "the server could not find the requested resource", {})

    # ----------------------------------------------------------------- I/O helpers

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    @staticmethod
    def _json(raw: bytes) -> Any:
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ApiError(400, "BadRequest", f"the object provided is unrecognized: {exc}") from exc

    def _send(self, code: int, payload: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self._record.status = code  # before any byte goes out: the client may read the log right after
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(
        self, code: int, body: Any, headers: dict[str, str] | None = None, warnings: list[str] | None = None
    ) -> int:
        self._record.status = code  # before any byte goes out: the client may read the log right after
        if getattr(self, "_stall", 0.0):
            time.sleep(self._stall)  # Fault.stall_after: the request is done, its answer is late
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        payload = json.dumps(body).encode()
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        for warning in warnings or []:
            self.send_header("Warning", f"299 - {json.dumps(warning)}")
        self.end_headers()
        self.wfile.write(payload)
        return code

    def _stream_watch(self, route: Route, query: dict[str, str]) -> int:
        events = iter(self.server.api.watch_events(route, query))
        first = next(events, None)  # raises ApiError (e.g. missing namespace) before the 200 goes out
        self._record.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if first is not None:
                self._chunk(json.dumps(first).encode() + b"\n")
            virtual = self.server.api.virtual_watch is not None
            for event in events:
                # Nothing goes out on idle ticks: the Python client turns a blank line into a None event.
                if event is not None:
                    self._chunk(json.dumps(event).encode() + b"\n")
                # On virtual time the watch moves the clock itself: it must stop as soon as the
                # client has hung up, or the clock runs on past the moment the client reacted.
                # After an event, give the client a moment (real time) to react and hang up.
                if virtual and self._client_left(VIRTUAL_WATCH_REACT_SECONDS if event is not None else 0):
                    break
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        return 200

    def _client_left(self, wait: float) -> bool:
        """Whether the client closed the connection (readable with nothing to read), waiting up to ``wait`` s."""
        readable, _, _ = select.select([self.connection], [], [], wait)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (ValueError, OSError):  # TLS sockets cannot peek: readable there means closing
            return True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
