"""The RocketMQ 5 ``apache.rocketmq.v2`` stubs, generated from the official ``.proto`` files on first use.

Why this shape: the gRPC front and the ``grpc://`` target must speak exactly the messages the real proxy and the
official v5 clients speak, and the project commits neither a peer's source nor generated code. The ``.proto``
files are published by Apache in the npm package ``rocketmq-client-nodejs`` (the Node.js v5 client of
apache/rocketmq-clients; its ``proto/`` folder is a copy of apache/rocketmq-apis, the same messages the Maven
artifact ``org.apache.rocketmq:rocketmq-proto`` compiles for Java, which ships no ``.proto`` text). The tarball is
fetched by name and version from the npm registry, checked against the registry's sha512 integrity, and compiled
with grpcio-tools (``--python_out``, ``--grpc_python_out``, ``--pyi_out``) into the user's cache. No Node.js is
needed: the registry serves a plain ``.tgz``.

:func:`load` returns the three generated modules; the first call on a machine downloads ~100 kB and runs
``protoc`` once (about a second); every later call imports from the cache.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import io
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


@dataclass(frozen=True)
class NpmArtifact:
    """A package pinned by name, version and the registry's ``dist.integrity`` (sha512, base64)."""

    name: str
    version: str
    integrity: str

    @property
    def url(self) -> str:
        return f"https://registry.npmjs.org/{self.name}/-/{self.name}-{self.version}.tgz"


#: The official protos (apache/rocketmq-clients, nodejs/proto): MessagingService with RecallMessage and
#: SyncLiteSubscription, the same service the 5.5.0 proxy implements from rocketmq-proto 2.1.2.
PROTO_ARTIFACT = NpmArtifact(
    "rocketmq-client-nodejs",
    "1.0.8",
    "sha512-qSzgN9/oFy+iqGIbXoAdY4L/hcAGDq1PqOk4/zXs3Jz6bxsGRL3GA5QSOFS1nVUtFzGTiPyHEz4f/ITloCWEJg==",
)
#: Where the tarball keeps them, and which are compiled.
PROTO_ROOT_IN_TARBALL = "package/proto/"
PROTO_FILES = ("apache/rocketmq/v2/definition.proto", "apache/rocketmq/v2/service.proto",
               "apache/rocketmq/v2/admin.proto")
#: How long the one download may take.
DOWNLOAD_TIMEOUT_S = 60


class ProtoError(Exception):
    """The stubs cannot be had; the message is one line that says why (offline, integrity, protoc)."""


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/mqtck/grpc`` (``~/.cache/mqtck/grpc``), beside the peers' cache."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mqtck" / "grpc"


def stubs_dir() -> Path:
    """The generated tree for this artifact and this grpcio-tools: a new protoc regenerates rather than mixes."""
    from importlib.metadata import version

    tools_version = version("grpcio-tools")
    return cache_root() / f"{PROTO_ARTIFACT.name}-{PROTO_ARTIFACT.version}-grpcio-tools-{tools_version}"


def _download(artifact: NpmArtifact) -> bytes:
    try:
        with urllib.request.urlopen(artifact.url, timeout=DOWNLOAD_TIMEOUT_S) as reply:
            data: bytes = reply.read()
    except OSError as exc:
        raise ProtoError(f"cannot fetch {artifact.url} for the RocketMQ 5 protos: {exc}") from None
    algo, _, expected = artifact.integrity.partition("-")
    got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if got != expected:
        raise ProtoError(f"{artifact.url}: integrity mismatch ({algo} {got} != {expected})")
    return data


def _extract_protos(tarball: bytes, into: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
        for rel in PROTO_FILES:
            member = tar.getmember(PROTO_ROOT_IN_TARBALL + rel)
            source = tar.extractfile(member)
            if source is None:
                raise ProtoError(f"{PROTO_ARTIFACT.name}@{PROTO_ARTIFACT.version}: {rel} is not a file")
            target = into / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())


def _compile(protos: Path, out: Path) -> None:
    from importlib.resources import files

    from grpc_tools import protoc

    well_known = str(files("grpc_tools") / "_proto")
    for rel in PROTO_FILES:
        code = protoc.main(["protoc", f"-I{protos}", f"-I{well_known}", f"--python_out={out}",
                            f"--grpc_python_out={out}", f"--pyi_out={out}", str(protos / rel)])
        if code != 0:
            raise ProtoError(f"protoc failed on {rel} (exit {code})")


def generate(target: Path | None = None) -> Path:
    """Fetch, check and compile the protos into ``target`` (default :func:`stubs_dir`); returns the tree.

    Generation happens in a temporary sibling renamed into place, so parallel test workers never import a
    half-written tree.
    """
    target = target or stubs_dir()
    if (target / "apache" / "rocketmq" / "v2" / "service_pb2_grpc.py").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".gen-", dir=target.parent))
    try:
        _extract_protos(_download(PROTO_ARTIFACT), work / "proto")
        out = work / "stubs"
        out.mkdir()
        _compile(work / "proto", out)
        (out / "SOURCE").write_text(f"{PROTO_ARTIFACT.url}\n{PROTO_ARTIFACT.integrity}\n")
        try:
            out.rename(target)
        except OSError:
            if not target.is_dir():  # another worker won the race only if the tree is there
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


@dataclass(frozen=True)
class Stubs:
    """The generated modules: messages (``service_pb2``), enums and shared types (``definition_pb2``) and the
    service (``service_pb2_grpc``: ``MessagingServiceStub``, ``MessagingServiceServicer``, ``add_…_to_server``)."""

    definition: ModuleType
    service: ModuleType
    grpc: ModuleType


def load() -> Stubs:
    """The ``apache.rocketmq.v2`` modules, generating them first if this machine has none."""
    root = str(generate())
    if root not in sys.path:
        sys.path.append(root)
    return Stubs(
        importlib.import_module("apache.rocketmq.v2.definition_pb2"),
        importlib.import_module("apache.rocketmq.v2.service_pb2"),
        importlib.import_module("apache.rocketmq.v2.service_pb2_grpc"),
    )
