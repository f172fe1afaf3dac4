"""The host's loopback servers, offered to the Lambda containers on the Docker bridge's gateway address.

SAM CLI 1.170 puts every function container on the daemon's default bridge, whatever
``--docker-network`` says (``host`` is ignored: samcli/local/docker/container.py connects no
network for it), so a container's 127.0.0.1 is its own. The one host address it reaches is the
bridge's gateway. The test servers stay on loopback; a relay listens on the gateway address (a
port of its own) and carries each connection to one loopback server, unchanged. Nothing is
offered on any other interface, and the daemon started here forwards nothing past the host.

``KubeProxy`` is ``kubectl proxy`` for the Lambdas: plain HTTP on the gateway to the real API
server over TLS, with the Lambdas' own bearer token, so url mode (``JOBSYNC_KUBE_URL``) reaches the
e2e tier's API server as ``jobsync-lambda``, under the Role the deployment renders.
"""

from __future__ import annotations

import http.client
import http.server
import json
import re
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from e2e.sandbox import splice
from lambda_runtime.daemon import Daemon


def gateway(daemon: Daemon) -> str:
    """The default bridge's address on the host (its gateway): where a container reaches the host."""
    done = subprocess.run(
        ["docker", "network", "inspect", "bridge", "--format", '{{index .Options "com.docker.network.bridge.name"}}'],
        env=daemon.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    bridge = done.stdout.strip() or "docker0"
    command = ["ip", "-4", "-o", "addr", "show", "dev", bridge]
    shown = subprocess.run(command, capture_output=True, text=True, check=False)
    found = re.search(r"\binet (\d+\.\d+\.\d+\.\d+)/", shown.stdout)
    if found is None:
        raise RuntimeError(f"the Docker bridge {bridge} has no IPv4 address: {shown.stderr.strip()}")
    return found.group(1)


class TcpRelay:
    """Accepts on ``(host, port)`` and splices each connection to ``upstream`` (a loopback server)."""

    def __init__(self, host: str, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server((host, 0))
        self.host, self.port = self._listener.getsockname()[:2]
        self._thread = threading.Thread(target=self._accept, name=f"relay-{self.port}", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            splice(client, server)

    def close(self) -> None:
        self._listener.close()


@contextmanager
def relayed(host: str, url: str) -> Iterator[str]:
    """``url`` (``http://127.0.0.1:<port>``) as the same server reached through ``host``: that URL."""
    parts = urlsplit(url)
    relay = TcpRelay(host, (parts.hostname or "127.0.0.1", parts.port or 80))
    try:
        yield relay.url
    finally:
        relay.close()


class KubeProxy(http.server.ThreadingHTTPServer):
    """Plain HTTP on ``host`` to the API server at ``server`` (TLS, ``ca_file``), with ``token``.

    Responses are streamed as they come (a watch is an open chunked response).
    """

    daemon_threads = True

    def __init__(self, host: str, server: str, ca_file: str, token: str) -> None:
        parts = urlsplit(server)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 443)
        self.tls = ssl.create_default_context(cafile=ca_file)
        self.token = token
        super().__init__((host, 0), _ProxyHandler)
        self._thread = threading.Thread(target=self.serve_forever, name="kube-proxy", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    server: KubeProxy
    protocol_version = "HTTP/1.1"
    _HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "authorization"})

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        host, port = self.server.upstream
        upstream = http.client.HTTPSConnection(host, port, context=self.server.tls, timeout=None)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in self._HOP}
        headers["Authorization"] = f"Bearer {self.server.token}"
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
        except OSError as exc:
            self._fail(502, f"API server unreachable: {exc}")
            upstream.close()
            return
        try:
            self.send_response(answer.status, answer.reason)
            for key, value in answer.getheaders():
                if key.lower() not in self._HOP and key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while chunk := answer.read1(65536):
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True  # the Lambda went away (its watch timed out): drop the upstream too
        finally:
            upstream.close()

    def _fail(self, status: int, message: str) -> None:
        body = json.dumps({"kind": "Status", "status": "Failure", "message": message, "code": status}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward
