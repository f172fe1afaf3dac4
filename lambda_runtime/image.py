"""The Lambda Python 3.11 image SAM CLI asks for, built here from pinned parts, laid out as AWS's is.

AWS documents two ways to a Lambda image: its base images, or any base with Python, the runtime
interface client (``awslambdaric``) and, for local runs, the Runtime Interface Emulator. No
registry serves ``public.ecr.aws/lambda/python:3.11-x86_64`` here, so the second way makes it:

- Debian bookworm, ``debootstrap --variant=minbase``, with ``python3.11`` and ``ca-certificates``
  (the one part that stands in: AWS's image is Amazon Linux);
- ``/var/runtime``: ``awslambdaric`` and its dependencies as ``requirements.txt`` pins them, byte-compiled,
  and the runtime's ``bootstrap`` (``rootfs/``);
- ``/usr/local/bin/aws-lambda-rie``: the emulator, built from the module ``emulator/go.mod`` pins;
- ``/var/lang/bin/python3.11`` (a link to Debian's), ``/var/task``, ``/opt``, ``/lambda-entrypoint.sh``,
  and the environment, working directory and entrypoint of AWS's image.

Everything is keyed by a hash of those inputs: the emulator binary and the root filesystem's tarball
are cached under ``~/.cache/jobsync-lambda`` (written under a per-process name, then renamed), the
image is tagged ``jobsync-lambda/python:3.11-x86_64-<hash>`` and that tag is what a warm run finds.
A lock per cache entry lets two checkouts build at once: one builds, the other waits and reuses.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from lambda_runtime.daemon import CACHE, Daemon

HERE = Path(__file__).resolve().parent
EMULATOR = HERE / "emulator"
ROOTFS_FILES = HERE / "rootfs"
REQUIREMENTS = HERE / "requirements.txt"
EMULATOR_PACKAGE = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"

#: The tag SAM CLI builds its invoke image from (samcli.local.docker.lambda_image, ZIP python3.11 x86_64).
IMAGE = "public.ecr.aws/lambda/python:3.11-x86_64"
KEYED = "jobsync-lambda/python"
DEBIAN = {"release": "bookworm", "variant": "minbase", "mirror": "http://deb.debian.org/debian"}
PACKAGES = ("python3.11", "ca-certificates")
GO_FLAGS = ("-trimpath", "-ldflags", "-s -w")
#: AWS's python3.11 image config, as ``docker import --change`` instructions.
CONFIG = (
    "ENV LANG=en_US.UTF-8",
    "ENV TZ=:UTC",
    "ENV PATH=/var/lang/bin:/usr/local/bin:/usr/bin/:/bin:/opt/bin",
    "ENV LD_LIBRARY_PATH=/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib"
    ":/opt/lib",
    "ENV LAMBDA_TASK_ROOT=/var/task",
    "ENV LAMBDA_RUNTIME_DIR=/var/runtime",
    "WORKDIR /var/task",
    'ENTRYPOINT ["/lambda-entrypoint.sh"]',
)


class ImageError(RuntimeError):
    """The image could not be built; the message names the step and what it printed."""


@dataclass(frozen=True)
class Built:
    image_id: str
    key: str
    seconds: float
    steps: tuple[str, ...]  # what this run had to do (empty: the image was there)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _run(step: str, command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd, env=env)
    if done.returncode != 0:
        raise ImageError(f"{step} failed ({done.returncode}): {' '.join(command[:4])} ...\n{done.stderr[-3000:]}")
    return str(done.stdout)


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise ImageError("building the Runtime Interface Emulator needs Go (1.26.6 or newer) on PATH")
    return go


def emulator_stamp() -> str:
    """A hash of what the emulator binary is built from: go.mod, go.sum, the Go version, the flags."""
    digest = hashlib.sha256()
    for part in ((EMULATOR / "go.mod").read_bytes(), (EMULATOR / "go.sum").read_bytes()):
        digest.update(part)
    digest.update(_run("go version", [_go(), "version"]).encode())
    digest.update(" ".join((EMULATOR_PACKAGE, *GO_FLAGS)).encode())
    return digest.hexdigest()[:16]


def build_emulator(say: Callable[[str], None]) -> tuple[Path, str]:
    """The emulator binary for the pinned module, built once per stamp; its path and stamp."""
    stamp = emulator_stamp()
    binary = CACHE / "bin" / f"aws-lambda-rie-{stamp}"
    with locked(CACHE / "bin" / "aws-lambda-rie.lock"):
        if binary.exists():
            return binary, stamp
        began = time.monotonic()
        partial = Path(tempfile.mkstemp(prefix=".aws-lambda-rie.", dir=binary.parent)[1])
        env = {**os.environ, "CGO_ENABLED": "0", "GOWORK": "off", "GOFLAGS": "-mod=readonly -buildvcs=false"}
        try:
            _run(
                "go build (emulator)",
                [_go(), "build", *GO_FLAGS, "-o", str(partial), EMULATOR_PACKAGE],
                cwd=EMULATOR,
                env=env,
            )
            partial.chmod(0o755)
            partial.rename(binary)
        finally:
            partial.unlink(missing_ok=True)
        say(f"built the Runtime Interface Emulator in {time.monotonic() - began:.0f}s")
    return binary, stamp


def image_key(emulator: str) -> str:
    """A hash of every input of the image: Debian's release and packages, the pins, the files, the config."""
    digest = hashlib.sha256()
    digest.update(repr((sorted(DEBIAN.items()), PACKAGES, CONFIG, emulator)).encode())
    digest.update(REQUIREMENTS.read_bytes())
    for path in sorted(p for p in ROOTFS_FILES.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(ROOTFS_FILES)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _tool(name: str, package: str, say: Callable[[str], None]) -> str:
    found = shutil.which(name)
    if found:
        return found
    say(f"installing Debian's {package} with apt")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package]
    if subprocess.run(install, env=env, capture_output=True, check=False).returncode != 0:
        _run("apt-get update", ["apt-get", "update", "-qq"], env=env)
        _run(f"apt-get install {package}", install, env=env)
    return str(shutil.which(name))


def rootfs_tarball(key: str, emulator: Path, say: Callable[[str], None]) -> Path:
    """The root filesystem as a tarball, built once per key."""
    tarball = CACHE / "rootfs" / f"lambda-python3.11-{key}.tar"
    with locked(CACHE / "rootfs" / f"{key}.lock"):
        if tarball.exists():
            return tarball
        if os.geteuid() != 0:
            raise ImageError("debootstrap needs root")
        debootstrap = _tool("debootstrap", "debootstrap", say)
        began = time.monotonic()
        work = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=tarball.parent))
        try:
            root = work / "root"
            say(f"debootstrap {DEBIAN['release']} ({DEBIAN['variant']}, {', '.join(PACKAGES)})")
            _run(
                "debootstrap",
                [
                    debootstrap,
                    f"--variant={DEBIAN['variant']}",
                    f"--include={','.join(PACKAGES)}",
                    DEBIAN["release"],
                    str(root),
                    DEBIAN["mirror"],
                ],
            )
            _lay_out(root, emulator)
            partial = work / "rootfs.tar"
            _run("tar", ["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial), "."])
            partial.rename(tarball)  # same file system: a reader sees no tarball or a whole one
        finally:
            shutil.rmtree(work, ignore_errors=True)
        say(f"built the root filesystem in {time.monotonic() - began:.0f}s")
    return tarball


def _lay_out(root: Path, emulator: Path) -> None:
    """What AWS's image has beside the OS: the runtime, the emulator, the folders, python3.11 under /var/lang."""
    shutil.copytree(ROOTFS_FILES, root, dirs_exist_ok=True, symlinks=True)
    for folder in ("var/task", "opt", "var/lang/bin"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for name in ("python3.11", "python3", "python"):
        (root / "var/lang/bin" / name).symlink_to("/usr/bin/python3.11")
    shutil.copy2(emulator, root / "usr/local/bin/aws-lambda-rie")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--only-binary=:all:"]
    pip += ["--platform", "manylinux2014_x86_64", "--python-version", "3.11", "--implementation", "cp"]
    _run("pip install awslambdaric", [*pip, "--target", str(root / "var/runtime"), "-r", str(REQUIREMENTS)])
    # Byte-compiled by the image's own interpreter, as AWS ships its runtime.
    _run("compileall", ["chroot", str(root), "/usr/bin/python3.11", "-m", "compileall", "-q", "/var/runtime"])
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info"):
        shutil.rmtree(root / junk, ignore_errors=True)
        (root / junk).mkdir(parents=True, exist_ok=True)


def _image_id(daemon: Daemon, ref: str) -> str | None:
    done = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", ref],
        env=daemon.env(),
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def build_image(daemon: Daemon, say: Callable[[str], None] = print) -> Built:
    """Make ``IMAGE`` the image of the current inputs in ``daemon``; quick when it already is."""
    began = time.monotonic()
    steps: list[str] = []
    emulator, stamp = build_emulator(say)
    key = image_key(stamp)
    keyed = f"{KEYED}:3.11-x86_64-{key}"
    with locked(CACHE / "image.lock"):
        keyed_id = _image_id(daemon, keyed)
        if keyed_id is None:
            tarball = rootfs_tarball(key, emulator, say)
            changes = [arg for change in CONFIG for arg in ("--change", change)]
            _run("docker import", ["docker", "import", *changes, str(tarball), keyed], env=daemon.env())
            keyed_id = _image_id(daemon, keyed)
            steps.append("import")
        if _image_id(daemon, IMAGE) != keyed_id:
            _run("docker tag", ["docker", "tag", keyed, IMAGE], env=daemon.env())
            steps.append("tag")
    if keyed_id is None:
        raise ImageError(f"{keyed} is missing right after docker import")
    return Built(keyed_id, key, time.monotonic() - began, tuple(steps))
