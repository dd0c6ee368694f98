"""Real clients as peers: ``mqtck gate java-client-4.9.8`` runs the client check on Apache RocketMQ's own consumer.

A client peer is a program that speaks the client-check protocol (docs/client-conformance.md: it reads
``MQTCK_NAMESRV``, ``MQTCK_TOPIC``, ``MQTCK_GROUP`` ... and consumes until told to stop). The Java subjects are
single-file programs of the project (``conformance/client_check/subjects/*.java``) run with ``java`` (JEP 330:
nothing is built) on the runtime classpath of ``rocketmq-client`` resolved by name and version from Maven
Central; the Go subject is the module ``conformance/peers/go_client`` (its ``go.mod`` pins
``github.com/apache/rocketmq-client-go/v2``, fetched from the Go module proxy), built once with ``go build``
into the peer cache; the C++ subject is the PyPI package ``rocketmq`` 0.4.4 (rocketmq-client-cpp 1.2.3), which only the
``interop-remoting`` tox environment installs (it conflicts with the other ``rocketmq`` on PyPI).

:func:`client_command` turns a catalogue entry into the shell command the check runs, with everything the
client writes (the Java client's logs, the C++ client's offsets) kept in a directory of the caller's.
"""

from __future__ import annotations

import importlib.util
import os
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
#: The Go subject's module (go.mod, go.sum, main.go).
GO_MODULE_DIR = Path(__file__).resolve().parent / "go_client"
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
        from conformance.peers.maven import client_classpath, require_tool

        java = require_tool("java", "the Java client's subjects run on it")
        classpath = os.pathsep.join(client_classpath(info.version))
        # user.home: the Java client writes its logs under ~/logs/rocketmqlogs.
        return shlex.join([java, JAVA_HEAP, f"-Duser.home={home}", "-cp", classpath, str(SUBJECTS_DIR / subject)])
    if subject == GO_MODULE_DIR.name:
        return shlex.quote(str(go_subject(info.version)))
    if importlib.util.find_spec("rocketmq") is None or importlib.util.find_spec("rocketmq.client") is None:
        raise PeerError(f"{info.name} needs the PyPI package rocketmq=={info.version} in this Python; it is installed "
                        "by the interop-remoting tox env: tox -e interop-remoting -- (or pip install "
                        f"rocketmq=={info.version})")
    # HOME: the C++ client writes its logs and offsets under it.
    return f"HOME={shlex.quote(str(home))} {shlex.join([sys.executable, '-m', subject])}"


def go_subject(version: str) -> Path:
    """The Go subject's executable, built by ``go build`` from :data:`GO_MODULE_DIR` into the peer cache unless
    a build of the same sources is there; PeerError with go's first error line when it cannot be built."""
    import hashlib
    import subprocess

    from conformance.peers.maven import cache_dir, require_tool

    go = require_tool("go", "the Go client's subject is built with go build")
    sources = hashlib.sha256(b"".join((GO_MODULE_DIR / name).read_bytes() for name in ("go.mod", "go.sum", "main.go")))
    binary = cache_dir() / f"go-client-{version}-{sources.hexdigest()[:12]}" / "mqtck-go-push-consumer"
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    try:
        built = subprocess.run([go, "build", "-o", str(binary), "."], cwd=GO_MODULE_DIR, capture_output=True,
                               text=True, timeout=GO_BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise PeerError(f"go build of the Go client's subject took more than {GO_BUILD_TIMEOUT_S} s") from None
    if built.returncode != 0 or not binary.exists():
        lines = (built.stderr or built.stdout).strip().splitlines() or ["no output"]
        raise PeerError(f"go build of the Go client's subject failed: {lines[0][:300]}")
    return binary
