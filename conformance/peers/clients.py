"""Real clients as peers: ``mqtck gate java-client-4.9.8`` runs the client check on Apache RocketMQ's own consumer.

A client peer is a program that speaks the client-check protocol (docs/client-conformance.md: it reads
``MQTCK_NAMESRV``, ``MQTCK_TOPIC``, ``MQTCK_GROUP`` ... and consumes until told to stop). The Java subjects are
single-file programs of the project (``conformance/client_check/subjects/*.java``), compiled once into the peer
cache (:mod:`conformance.peers.java`) and run on the runtime classpath of ``rocketmq-client`` resolved by name and
version from Maven Central; the Go subject is the module ``conformance/peers/go_client`` (its ``go.mod`` pins
``github.com/apache/rocketmq-client-go/v2``, fetched from the Go module proxy), built once with ``go build``
into the peer cache; the C++ subject is the PyPI package ``rocketmq`` 0.4.4 (rocketmq-client-cpp 1.2.3), which only the
``interop-remoting`` tox environment installs (it conflicts with the other ``rocketmq`` on PyPI).

:func:`client_command` turns a catalogue entry into the shell command the check runs, with everything the
client writes (the Java client's logs, the C++ client's offsets) kept in a directory of the caller's.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path

from conformance.peers import PeerError, PeerInfo

SUBJECTS_DIR = Path(__file__).resolve().parent.parent / "client_check" / "subjects"
#: Client peer name -> the subject program: a Java source file, or the Python module of the C++ subject.
SUBJECTS = {
    "java-client-4.9.8": "JavaPushConsumer.java",
    "go-client-2.1.2": "go_client",
    "java-lite-pull-4.9.8": "JavaLitePullConsumer.java",
    "cpp-client-0.4.4": "conformance.client_check.subjects.rocketmq_cpp_push",
}
#: The JVM's heap for a subject: one consumer of a few thousand small messages.
JAVA_HEAP = "-Xmx256m"
#: The Go module of the Go client's programs: the subject (main.go, the root package) and ``mqtck bench e2e``'s
#: producer and consumer (e2e/main.go); go.mod pins the client, go.sum its dependencies.
GO_MODULE_DIR = Path(__file__).resolve().parent / "go_client"
#: The module path of the official Go client, as go.mod requires it.
GO_CLIENT_MODULE = "github.com/apache/rocketmq-client-go/v2"
#: How long ``go build`` may take (a cold module cache downloads the client and its dependencies).
GO_BUILD_TIMEOUT_S = 600


def client_command(info: PeerInfo, home: Path) -> str:
    """The shell command that runs the client peer ``info``, writing its files under ``home``; PeerError (one
    line) when what it needs is missing: java or mvn, the registry, or the C++ package."""
    subject = SUBJECTS.get(info.name)
    if info.kind != "client" or subject is None:
        raise PeerError(f"{info.name} is not a client peer")
    home.mkdir(parents=True, exist_ok=True)
    if subject.endswith(".java"):
        from conformance.peers.java import java_program
        from conformance.peers.maven import client_classpath, require_tool

        java = require_tool("java", "the Java client's subjects run on it")
        program = java_program(SUBJECTS_DIR / subject, client_classpath(info.version), f"{info.name}'s subject")
        # user.home: the Java client writes its logs under ~/logs/rocketmqlogs.
        return shlex.join([java, JAVA_HEAP, f"-Duser.home={home}", *program])
    if subject == GO_MODULE_DIR.name:
        return shlex.quote(str(go_subject(info.version)))
    if importlib.util.find_spec("rocketmq") is None or importlib.util.find_spec("rocketmq.client") is None:
        raise PeerError(f"{info.name} needs the PyPI package rocketmq=={info.version} in this Python; it is installed "
                        "by the interop-remoting tox env: tox -e interop-remoting -- (or pip install "
                        f"rocketmq=={info.version})")
    # HOME: the C++ client writes its logs and offsets under it.
    return f"HOME={shlex.quote(str(home))} {shlex.join([sys.executable, '-m', subject])}"


def go_subject(version: str) -> Path:
    """The Go subject's executable (the module's root package), built by ``go build`` into the peer cache unless
    a build of the same sources is there; PeerError with go's first error line when it cannot be built."""
    return go_build(".", f"go-client-{version}", "mqtck-go-push-consumer", "the Go client's subject")


def go_e2e() -> Path:
    """``mqtck bench e2e --client go``'s producer and consumer (the module's package ``e2e``, the command-line
    contract of ``EndToEnd.java``), built as :func:`go_subject` is."""
    return go_build("./e2e", f"go-e2e-{go_client_version()}", "mqtck-go-e2e", "the Go client's e2e program")


def go_client_version() -> str:
    """The rocketmq-client-go version :data:`GO_MODULE_DIR`'s ``go.mod`` pins (e.g. ``v2.1.2``): what a result
    that ran the Go client names, read from the pin itself so that the two cannot disagree."""
    for line in (GO_MODULE_DIR / "go.mod").read_text(encoding="utf-8").splitlines():
        words = line.split()
        if len(words) >= 2 and words[-2] == GO_CLIENT_MODULE:
            return words[-1]
    raise PeerError(f"{GO_MODULE_DIR / 'go.mod'} does not require {GO_CLIENT_MODULE}")


def go_build(package: str, cache_name: str, binary_name: str, what: str, module_dir: Path = GO_MODULE_DIR) -> Path:
    """``go build`` of ``package`` (a directory of :data:`GO_MODULE_DIR`, ``.`` or ``./e2e``) into the peer cache,
    under a directory named after ``cache_name`` and the hash of its sources: go.mod, go.sum and the package's own
    ``.go`` files (a package of this module imports no other of its packages, so these are all it is built
    from). A binary already there is reused; PeerError (naming ``what``) with go's first error line when the
    build fails. For the root package the hash is the one go_subject always used (go.mod, go.sum, main.go).
    ``module_dir``: another Go module of the peers (the RocketMQ 5 client's, ``go_client_v5``)."""
    import hashlib

    from conformance.peers.build import run_build
    from conformance.peers.maven import cache_dir, require_tool

    go = require_tool("go", f"{what} is built with go build")
    package_dir = module_dir / package
    files = [module_dir / "go.mod", module_dir / "go.sum",
             *sorted(p for p in package_dir.glob("*.go") if not p.name.endswith("_test.go"))]
    sources = hashlib.sha256(b"".join(path.read_bytes() for path in files))
    binary = cache_dir() / f"{cache_name}-{sources.hexdigest()[:12]}" / binary_name
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    run_build([go, "build", "-o", str(binary), package], step=f"go build of {what}", timeout_s=GO_BUILD_TIMEOUT_S,
              cwd=module_dir)
    if not binary.exists():
        raise PeerError(f"go build of {what} failed: it wrote no {binary_name}")
    return binary
