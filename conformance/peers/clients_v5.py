"""The official RocketMQ 5 (gRPC, POP) clients as peers: ``mqtck gate java-client-v5-5.2.0`` runs the POP client
check (:mod:`conformance.client_check.pop_harness`) on Apache RocketMQ's own SimpleConsumer and PushConsumer.

Each subject speaks the POP check's environment (docs/client-conformance.md, "RocketMQ 5 clients") and prints its
consumptions as JSON lines:

* Java: ``conformance/client_check/subjects/JavaV5Consumer.java``, compiled once into the peer cache against
  ``org.apache.rocketmq:rocketmq-client-java`` resolved from Maven Central (``conformance/peers/java_client_v5``);
* Python: ``conformance.client_check.subjects.rocketmq_v5_consumer`` on PyPI ``rocketmq-python-client`` 5.1.2,
  which only the ``v5-python`` extra and the ``interop-v5`` tox env install (its top-level package ``rocketmq``
  is also the RocketMQ 4 binding's);
* Go: the module ``conformance/peers/go_client_v5`` (``go.mod`` pins ``github.com/apache/rocketmq-clients/golang/v5``
  v5.1.2, from the Go module proxy), built once with ``go build``. v5.1.2 has no PushConsumer: its push scenarios
  are not applicable.
"""

from __future__ import annotations

import importlib.metadata
import shlex
import sys
from pathlib import Path

from conformance.peers import PeerError, PeerInfo
from conformance.peers.clients import JAVA_HEAP, SUBJECTS_DIR, go_build

#: Client peer name -> its subject: a Java source file, a Python module, or the Go module's directory name.
V5_SUBJECTS = {
    "java-client-v5-5.2.0": "JavaV5Consumer.java",
    "python-client-v5-5.1.2": "conformance.client_check.subjects.rocketmq_v5_consumer",
    "go-client-v5-5.1.2": "go_client_v5",
}
#: The Go module of the RocketMQ 5 Go client's subject.
GO_V5_MODULE_DIR = Path(__file__).resolve().parent / "go_client_v5"


def is_v5(info: PeerInfo) -> bool:
    """Whether ``info`` is judged by the POP client check over gRPC (not the remoting client check)."""
    return info.name in V5_SUBJECTS


def python_client_installed() -> bool:
    """Whether rocketmq-python-client is installed here, asked of the package metadata: importing (or find_spec of
    ``rocketmq.v5``, which imports its parent) would register its ``apache.rocketmq.v2`` protos in protobuf's default
    pool, and the reference's own stubs (reference/net/grpc/protos.py) then fail as duplicate symbols."""
    try:
        importlib.metadata.version("rocketmq-python-client")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def v5_client_command(info: PeerInfo, home: Path) -> str:
    """The shell command that runs the v5 client peer ``info``, writing its logs under ``home``; PeerError (one
    line) when what it needs is missing: java or mvn, go, the registry, or the Python package."""
    subject = V5_SUBJECTS[info.name]
    home.mkdir(parents=True, exist_ok=True)
    if subject.endswith(".java"):
        from conformance.peers.java import java_program
        from conformance.peers.maven import require_tool, v5_client_classpath

        java = require_tool("java", "the Java client's subjects run on it")
        program = java_program(SUBJECTS_DIR / subject, v5_client_classpath(info.version), f"{info.name}'s subject")
        # user.home: the client writes its logs under ~/logs/rocketmq.
        return shlex.join([java, JAVA_HEAP, f"-Duser.home={home}", *program])
    if subject == GO_V5_MODULE_DIR.name:
        binary = go_build(".", info.name, "mqtck-go-v5-consumer", "the Go v5 client's subject",
                          module_dir=GO_V5_MODULE_DIR)
        # HOME: the client writes its logs under ~/logs/rocketmqlogs.
        return f"HOME={shlex.quote(str(home))} {shlex.quote(str(binary))}"
    if not python_client_installed():
        raise PeerError(f"{info.name} needs the PyPI package rocketmq-python-client=={info.version} in this Python; "
                        "it is installed by the interop-v5 tox env: tox -e interop-v5 -- (or pip install "
                        "'mqtck[v5-python]')")
    # HOME: the client writes its logs under ~/logs/rocketmq_python.
    return f"HOME={shlex.quote(str(home))} {shlex.join([sys.executable, '-m', subject])}"


def install_v5(info: PeerInfo) -> str:
    """``mqtck peer install`` of a v5 client: resolve and compile (Java) or build (Go) its subject into the peer
    cache; the line that says what is installed. The Python client comes from PyPI through its tox env only."""
    if info.artifacts[0].startswith("pypi:"):
        raise PeerError(f"{info.name} comes from PyPI, not a registry mqtck resolves itself: the interop-v5 tox env "
                        "installs it (or pip install 'mqtck[v5-python]')")
    import tempfile

    command = v5_client_command(info, Path(tempfile.mkdtemp(prefix=f"mqtck-{info.name}-")))
    return f"installed {info.name}: {command}"
