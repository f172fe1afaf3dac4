"""/healthz (alive: every watcher answered lately) and /readyz (every kind listed once)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jobsync_notifier.watch import KindWatcher


class HealthServer:
    def __init__(self, watchers: Sequence[KindWatcher], port: int, stale_after_seconds: float) -> None:
        self.watchers = list(watchers)
        self.stale_after = stale_after_seconds
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                code, body = owner.answer(self.path)
                payload = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # probes every few seconds would drown the structured log

        self._server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="health", daemon=True)

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        now = time.monotonic()
        kinds = {
            w.spec.kind: {"synced": w.synced.is_set(), "lastContactSecondsAgo": round(now - w.last_contact, 1)}
            for w in self.watchers
        }
        if path == "/readyz":
            ready = all(w.synced.is_set() for w in self.watchers)
            return (200 if ready else 503), {"ready": ready, "kinds": kinds}
        if path == "/healthz":
            alive = all(not w.synced.is_set() or now - w.last_contact < self.stale_after for w in self.watchers)
            return (200 if alive else 503), {"alive": alive, "kinds": kinds}
        return 404, {"error": f"no such endpoint {path}"}

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
