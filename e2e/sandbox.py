"""Run one command in its own network and mount namespaces, with a path back to the API server.

The training-operator always starts a webhook server, and it listens on every interface (its main only takes
a port). Run inside a fresh network namespace, "every interface" is a loopback that nothing else can reach.
Its only way out is a forwarder: TCP on the namespace's 127.0.0.1:<port> to a Unix socket that the launcher
serves, and the launcher connects that on to the real API server. A private mount namespace also puts a
folder of ours over ``/tmp/k8s-webhook-server``, where the operator reads its webhook certificates from a
fixed path (the folder is made, empty, on the host when it is missing).

Started by the launcher as ``unshare --net --mount --fork --kill-child python -m e2e.sandbox ...``; it is
test tooling and needs root (which is what ``unshare`` needs too).

Without ``--unix`` it keeps the host's network and only mounts (``unshare --mount``): ``--bind SRC:TARGET``
puts a folder of ours over a fixed path a program reads (Kueue's metrics certificate in
``/etc/kueue/metrics/certs``). A target that does not exist is made inside an overlay of its nearest existing
folder, whose changes go to a scratch folder of ours: the host's ``/etc`` is never written.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import struct
import subprocess
import sys
import threading

_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_MS_BIND = 4096
_MS_REC = 16384
_PR_SET_PDEATHSIG = 1
#: Where training-operator v1.9.0 (pkg/cert) and controller-runtime's webhook server look for the certificates.
WEBHOOK_DIR = "/tmp/k8s-webhook-server"


def pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes from ``source`` to ``sink`` until either side closes, then close both."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


def splice(a: socket.socket, b: socket.socket) -> None:
    """Forward both ways between two connected sockets, on two daemon threads."""
    threading.Thread(target=pump, args=(a, b), daemon=True).start()
    threading.Thread(target=pump, args=(b, a), daemon=True).start()


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def die_with_parent() -> None:
    """In a child between fork and exec: have the kernel SIGKILL it when its parent dies (no orphans)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _bind_mount(source: str, target: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(source.encode(), target.encode(), None, _MS_BIND | _MS_REC, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount --bind {source} {target}: {os.strerror(err)}")


def _overlay(folder: str, scratch: str) -> None:
    """Mount an overlay on ``folder`` whose writes land in ``scratch`` (this mount namespace only)."""
    upper, work = os.path.join(scratch, "upper"), os.path.join(scratch, "work")
    os.makedirs(upper, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    options = f"lowerdir={folder},upperdir={upper},workdir={work}".encode()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"overlay", folder.encode(), b"overlay", 0, options) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount -t overlay on {folder}: {os.strerror(err)}")


def _bind_over(source: str, target: str, scratch: str) -> None:
    """Bind ``source`` over ``target``, making ``target`` inside an overlay when it does not exist."""
    if not os.path.isdir(target):
        existing = target
        while not os.path.isdir(existing):
            existing = os.path.dirname(existing)
        _overlay(existing, os.path.join(scratch, existing.strip("/").replace("/", "_") or "root"))
        os.makedirs(target, exist_ok=True)
    _bind_mount(source, target)


def _serve(listener: socket.socket, unix_path: str) -> None:
    while True:
        conn, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(unix_path)
        except OSError:
            conn.close()
            upstream.close()
            continue
        splice(conn, upstream)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--unix", help="Unix socket the launcher forwards to the API server (own network)")
    parser.add_argument("--port", type=int, help="port on this namespace's 127.0.0.1 to serve (with --unix)")
    parser.add_argument("--certs", help=f"folder to mount over {WEBHOOK_DIR} (with --unix)")
    parser.add_argument("--bind", action="append", default=[], help="SRC:TARGET, a folder to mount over a path")
    parser.add_argument("--scratch", help="folder for the overlays a --bind target needs")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    for pair in args.bind:
        source, _, target = pair.partition(":")
        _bind_over(source, target, args.scratch or os.path.join(source, ".scratch"))
    if args.unix:
        _loopback_up()
        os.makedirs(WEBHOOK_DIR, exist_ok=True)
        _bind_mount(args.certs, WEBHOOK_DIR)

        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", args.port))
        listener.listen(64)
        threading.Thread(target=_serve, args=(listener, args.unix), daemon=True).start()

    child = subprocess.Popen(command, preexec_fn=die_with_parent)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda s, _f: child.send_signal(s))
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
