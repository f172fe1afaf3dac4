"""A Docker daemon that answers: the one already running, or one started here and stopped again by its pid.

When no daemon answers (``DOCKER_HOST``, else the default socket), Debian's ``docker.io`` is
installed with apt if ``dockerd`` is missing, and a daemon is started on a socket of its own
under ``/run/jobsync-lambda``, with its images under the cache (so a built image outlives it).
It changes nothing else on the host: no iptables rules, no IP forwarding, no masquerading
(``--iptables=false --ip-forward=false --ip-masq=false``), so a container reaches the host's
bridge address and no further; the bridge it creates is deleted again when it stops. It gets a
parent-death signal, so a killed run does not leave it behind. One such daemon serves one run
at a time on a machine: a second checkout waits on the lock until the first is done with it.

If it cannot start, :class:`DaemonError` carries the daemon's own last lines.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("JOBSYNC_LAMBDA_CACHE") or Path.home() / ".cache" / "jobsync-lambda")
RUN_DIR = Path("/run/jobsync-lambda")  # short: a Unix socket's path has at most 107 bytes
DEFAULT_HOST = "unix:///var/run/docker.sock"
BRIDGE = "docker0"
_PR_SET_PDEATHSIG = 1


class DaemonError(RuntimeError):
    """No Docker daemon answers and none could be started; the message says why, in the daemon's words."""


@dataclass(frozen=True)
class Daemon:
    host: str  # what DOCKER_HOST must say to reach it
    version: str
    pid: int | None  # set when this process started it (and so stops it)

    def env(self) -> dict[str, str]:
        """This process's environment, pointed at this daemon."""
        return {**os.environ, "DOCKER_HOST": self.host}


def server_version(host: str, timeout: float = 20) -> str | None:
    """The daemon's version if one answers at ``host``, else None."""
    docker = shutil.which("docker")
    if docker is None:
        return None
    try:
        out = subprocess.run(
            [docker, "version", "--format", "{{.Server.Version}}"],
            env={**os.environ, "DOCKER_HOST": host},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def answering() -> Daemon | None:
    """The daemon ``DOCKER_HOST`` (or the default socket) reaches, if one answers."""
    host = os.environ.get("DOCKER_HOST") or DEFAULT_HOST
    version = server_version(host)
    return Daemon(host, version, None) if version else None


def install_docker(say: Callable[[str], None]) -> None:
    """Debian's docker.io with apt (its client, dockerd, containerd, runc), when dockerd is missing."""
    if shutil.which("dockerd"):
        return
    if os.geteuid() != 0:
        raise DaemonError("no Docker daemon answers and dockerd is missing: install docker.io (needs root)")
    say("installing Debian's docker.io with apt")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "docker.io"]
    if subprocess.run(install, env=env, capture_output=True, check=False).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=True, capture_output=True)
        done = subprocess.run(install, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise DaemonError(f"apt-get install docker.io failed: {done.stderr.strip()[-2000:]}")


def _die_with_parent() -> None:
    # The daemon gets SIGTERM when the process that started it dies, however it dies.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


@contextlib.contextmanager
def _machine_lock(path: Path, say: Callable[[str], None]) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another run to be done with its Docker daemon ({path})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # the lock goes with the file's descriptor


@contextlib.contextmanager
def docker_daemon(say: Callable[[str], None] = print, start_timeout: float = 90) -> Iterator[Daemon]:
    """Yield a daemon that answers; if this call started it, stop it (by its pid) on the way out."""
    running = answering()
    if running is not None:
        say(f"Docker daemon {running.version} answers at {running.host}")
        yield running
        return
    install_docker(say)
    if os.geteuid() != 0:
        raise DaemonError("no Docker daemon answers, and starting dockerd needs root")
    with _machine_lock(CACHE / "daemon.lock", say):
        host = f"unix://{RUN_DIR / 'docker.sock'}"
        leftover = server_version(host)
        if leftover:  # a daemon another run started and that outlived it: used, not stopped (it is not ours)
            say(f"Docker daemon {leftover} answers at {host}")
            yield Daemon(host, leftover, None)
            return
        with _started(host, start_timeout, say) as daemon:
            yield daemon


@contextlib.contextmanager
def _started(host: str, start_timeout: float, say: Callable[[str], None]) -> Iterator[Daemon]:
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    (CACHE / "docker").mkdir(parents=True, exist_ok=True)
    log_path = CACHE / "dockerd.log"
    bridge_existed = Path(f"/sys/class/net/{BRIDGE}").exists()
    command = [
        str(shutil.which("dockerd")),
        f"--host={host}",
        f"--pidfile={RUN_DIR / 'docker.pid'}",
        f"--exec-root={RUN_DIR / 'exec'}",
        f"--data-root={CACHE / 'docker'}",
        # Leave the host's firewall and routing as they are: containers reach the bridge address only.
        "--iptables=false",
        "--ip6tables=false",
        "--ip-forward=false",
        "--ip-masq=false",
    ]
    began = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent
        )
    try:
        while (version := server_version(host, timeout=5)) is None:
            if process.poll() is not None:
                raise DaemonError(f"dockerd exited with {process.returncode}:\n{_tail(log_path)}")
            if time.monotonic() - began > start_timeout:
                raise DaemonError(f"dockerd did not answer within {start_timeout:.0f}s:\n{_tail(log_path)}")
            time.sleep(0.5)
        say(f"started Docker daemon {version} (pid {process.pid}) in {time.monotonic() - began:.1f}s at {host}")
        yield Daemon(host, version, process.pid)
    finally:
        _stop(process, say)
        if not bridge_existed and Path(f"/sys/class/net/{BRIDGE}").exists():
            subprocess.run(["ip", "link", "delete", BRIDGE], check=False, capture_output=True)


def _stop(process: subprocess.Popen[bytes], say: Callable[[str], None]) -> None:
    """SIGTERM to the daemon this run started, by its pid; SIGKILL if it has not ended in 30 s."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    say(f"stopped the Docker daemon this run started (pid {process.pid})")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"
