"""The notifier as the separate process it is when deployed: ``python -m jobsync_notifier``.

``NotifierProcess`` starts it with the environment the Deployment gives it
(the chart's, ``deployed_env``), except for where the cluster is (the
local API's URL, or a kubeconfig, instead of the in-cluster service account)
and where AWS is (an endpoint served from this process's moto backends,
``harness.aws_server``, with fake credentials). It waits for ``/readyz`` (every
kind listed once), as the Deployment's readiness probe does.

Its log (JSON lines, as the Lambdas') goes to this process's standard error, or
to a file. ``stop()`` sends SIGTERM, waits, then SIGKILLs; ``kill()`` is the
SIGKILL of a crash. A child also gets a parent-death signal, and whatever is
still running when the interpreter exits is killed, so no notifier outlives the
run that started it, even on Ctrl-C or a failing test.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
# Where the Dockerfile puts the library and the notifier (PYTHONPATH=/app).
PYTHONPATH = os.pathsep.join([str(ROOT / "layers" / "jobsync"), str(ROOT / "notifier")])
_PR_SET_PDEATHSIG = 1
_running: set[NotifierProcess] = set()
# The parent-death signal fires when the *thread* that forked the child ends: fork from one that lives on.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="notifier-spawner")


class NotifierError(RuntimeError):
    """The notifier did not start, or did not become ready; the message has its exit code or log tail."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def deployed_env(namespace: str, kinds: str, event_bus: str, region: str) -> dict[str, str]:
    """The container environment the chart gives the notifier's Deployment (charts/jobsync), less where the
    cluster is and the health port, which the run sets itself; tests/integration/test_chart.py compares."""
    from jobsync.settings import parse_allowed_kinds

    return {
        "JOBSYNC_NAMESPACE": namespace,
        "JOBSYNC_ALLOWED_KINDS": ",".join(f"{k.api_version}/{k.kind}" for k in parse_allowed_kinds(kinds)),
        "JOBSYNC_EVENT_BUS_NAME": event_bus,
        "AWS_REGION": region,
        "POWERTOOLS_SERVICE_NAME": "jobsync-notifier",
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }


def _die_with_parent() -> None:
    """In the child between fork and exec: the kernel SIGKILLs it when its parent dies."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class NotifierProcess:
    """``python -m jobsync_notifier`` with ``env`` (the deployed settings), its health on ``health_port``."""

    def __init__(self, env: Mapping[str, str], log: Path | None = None, health_port: int | None = None) -> None:
        self.health_port = health_port or free_port()
        inherited = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("AWS_", "JOBSYNC_", "POWERTOOLS_", "KUBECONFIG", "PYTHONPATH"))
        }
        self.env = {
            **inherited,
            **env,
            "PYTHONPATH": PYTHONPATH,
            "PYTHONUNBUFFERED": "1",
            "JOBSYNC_HEALTH_PORT": str(self.health_port),
        }
        self.log = log
        self.popen: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.ready_seconds: float | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self, ready_timeout: float = 60.0) -> NotifierProcess:
        """Start it and wait until ``/readyz`` answers 200; raises NotifierError if it exits or stays unready."""
        if self.running:
            raise NotifierError("the notifier is already running")
        out: IO[bytes] | int
        out = self.log.open("ab") if self.log else sys.stderr.fileno()
        try:
            popen = _SPAWNER.submit(
                subprocess.Popen,
                [sys.executable, "-m", "jobsync_notifier"],
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches this process, which stops it in order
                preexec_fn=_die_with_parent,
            ).result()
        finally:
            if not isinstance(out, int):
                out.close()
        self.popen = popen
        self.started_at = time.monotonic()
        _running.add(self)
        try:
            self.wait_ready(ready_timeout)
        except BaseException:
            self.stop()
            raise
        self.ready_seconds = time.monotonic() - self.started_at
        return self

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.popen is None or self.popen.poll() is not None:
                code = None if self.popen is None else self.popen.returncode
                raise NotifierError(f"the notifier exited with {code} before it was ready{self._tail()}")
            status, _ = self.health("/readyz")
            if status == 200:
                return
            if time.monotonic() > deadline:
                raise NotifierError(f"the notifier was not ready after {timeout}s{self._tail()}")
            time.sleep(0.05)

    def stop(self, grace: float = 15.0) -> int | None:
        """SIGTERM, wait up to ``grace`` s, then SIGKILL; returns the exit code (None if it never ran)."""
        return self._end(signal.SIGTERM, grace)

    def kill(self) -> int | None:
        """SIGKILL, as a crash or an evicted pod: nothing is flushed, nothing is said."""
        return self._end(signal.SIGKILL, 5.0)

    def _end(self, sig: signal.Signals, grace: float) -> int | None:
        popen, self.popen = self.popen, None
        _running.discard(self)
        if popen is None:
            return None
        for each, wait in ((sig, grace), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, each)
            try:
                return popen.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        return popen.poll()

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self.popen is None else self.popen.pid

    # ---------------------------------------------------------------- looking at it

    def health(self, path: str = "/healthz") -> tuple[int, dict[str, Any]]:
        """``(status, body)`` of a health endpoint; ``(0, {})`` while nothing listens."""
        url = f"http://127.0.0.1:{self.health_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")
        except (OSError, ValueError):
            return 0, {}

    def log_lines(self) -> list[dict[str, Any]]:
        """The JSON lines of its log file (empty without one)."""
        if not self.log or not self.log.exists():
            return []
        lines = []
        for line in self.log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    lines.append(record)
        return lines

    def _tail(self, lines: int = 20) -> str:
        if not self.log or not self.log.exists():
            return " (its log went to standard error)"
        tail = self.log.read_text(errors="replace").splitlines()[-lines:]
        return ":\n" + "\n".join(tail)


@atexit.register
def _kill_leftovers() -> None:
    """Whatever a crashed run left running is killed when the interpreter exits."""
    for process in list(_running):
        process.kill()
