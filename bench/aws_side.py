"""The AWS side of the notifier benchmark, in a process of its own: moto over HTTP behind a proxy that adds a
round trip to EventBridge and counts what PutEvents took.

    python -m bench.aws_side --latency 0.02     # prints {"url": ...} and serves until stdin closes

Its own process, so that moto's work does not share an interpreter lock with the Kubernetes API emulator,
which the benchmark runs in its own process, nor with the notifier. The proxy forwards every request to
moto's server; a request signed for EventBridge (``events``) waits ``latency`` seconds first (a round trip
to the service), and each PutEvents answer's taken entries are counted with the monotonic time they were
taken at (CLOCK_MONOTONIC is the machine's: the benchmark compares it with its own). ``GET /_bench/taken``
answers ``{"taken": [[time, entries], ...]}``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from harness.aws_server import endpoint, moto_server
from harness.eventbridge import put_events_size_limit


class Proxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, target: str, latency: float) -> None:
        self.target = urlsplit(target)
        self.latency = latency
        self.taken: list[tuple[float, int]] = []
        self.lock = threading.Lock()
        self.local = threading.local()
        super().__init__(("127.0.0.1", 0), Handler)

    def connection(self) -> http.client.HTTPConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection(self.target.hostname, self.target.port, timeout=60)
        return conn


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body in separate writes: no 40 ms delayed-ACK stall
    server: Proxy

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/_bench/taken":
            with self.server.lock:
                body = json.dumps({"taken": self.server.taken}).encode()
            self._answer(200, {"Content-Type": "application/json"}, body)
            return
        self._forward("GET")

    def do_POST(self) -> None:
        self._forward("POST")

    def _forward(self, method: str) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        scope = re.search(r"Credential=[^/]+/\d{8}/[^/]+/([^/]+)/", self.headers.get("Authorization", ""))
        service = scope[1] if scope else ""
        if service == "events" and self.server.latency:
            time.sleep(self.server.latency)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive")}
        conn = self.server.connection()
        try:
            conn.request(method, self.path, body, headers)
            answer = conn.getresponse()
            data = answer.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            self.server.local.conn = None
            raise
        if service == "events" and "PutEvents" in self.headers.get("X-Amz-Target", "") and answer.status == 200:
            entries = json.loads(data).get("Entries") or []
            with self.server.lock:
                self.server.taken.append((time.monotonic(), sum(1 for e in entries if "EventId" in e)))
        keep = {k: v for k, v in answer.getheaders() if k.lower() not in ("transfer-encoding", "connection")}
        self._answer(answer.status, keep, data)

    def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() != "content-length":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.aws_side")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to each EventBridge request")
    args = parser.parse_args(argv)
    from moto import mock_aws

    with mock_aws(), put_events_size_limit(), moto_server() as server:
        proxy = Proxy(endpoint(server), args.latency)
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        host, port = proxy.server_address[:2]
        print(json.dumps({"url": f"http://{host}:{port}"}), flush=True)
        sys.stdin.read()  # until the benchmark closes it
        proxy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
