"""Resolve a peer's Java runtime classpath with Maven, from the project's own pom (no jar is committed).

``conformance/peers/rocketmq/pom.xml`` (the brokers), ``conformance/peers/java_strategies/pom.xml`` (the
Java client) and ``conformance/peers/java_client/pom.xml`` (the client with its ACL hook) name the artifacts with
the version as a property; Maven downloads them into ``~/.m2`` once,
and the resolved classpath is cached per module and version under ``~/.cache/mqtck/peers/`` so a second
start asks Maven nothing.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conformance.peers import PeerError
from conformance.peers.build import run_build

POM_DIR = Path(__file__).resolve().parent / "rocketmq"
CLIENT_POM_DIR = Path(__file__).resolve().parent / "java_strategies"
#: rocketmq-client with rocketmq-acl: the Java client as an application that signs its requests runs it.
APP_CLIENT_POM_DIR = Path(__file__).resolve().parent / "java_client"
#: rocketmq-client-java: the RocketMQ 5 (gRPC) Java client, one shaded jar.
V5_CLIENT_POM_DIR = Path(__file__).resolve().parent / "java_client_v5"
#: Apache Pulsar: pulsar-broker (the standalone) and pulsar-client (the Java client), one pom each.
PULSAR_POM_DIR = Path(__file__).resolve().parent / "pulsar"
PULSAR_CLIENT_POM_DIR = Path(__file__).resolve().parent / "pulsar_client"
#: rocketmq-proxy and rocketmq-namesrv: the RocketMQ 5 proxy peer (LOCAL mode: the broker inside the proxy).
PROXY_POM_DIR = Path(__file__).resolve().parent / "rocketmq_proxy"
#: rocketmq-tools: Apache RocketMQ's admin tool (mqadmin), run against the reference to check its admin answers.
MQADMIN_POM_DIR = Path(__file__).resolve().parent / "mqadmin"
#: Apache DataFusion Comet: the audit's native engine (not a peer; the same resolution by name and version).
COMET_POM_DIR = Path(__file__).resolve().parents[1] / "audit" / "comet"
#: How long one resolution may take (a cold ~/.m2 downloads ~40 MB for 4.9.7, ~90 MB for 5.x).
RESOLVE_TIMEOUT_S = 600


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mqtck" / "peers"


def require_tool(name: str, why: str) -> str:
    """The path of ``name`` on PATH, or PeerError saying it is missing and what needs it."""
    path = shutil.which(name)
    if path is None:
        raise PeerError(f"{name} not found on PATH ({why})")
    return path


#: Maven's line for one finished download in batch mode, e.g.
#: ``[INFO] Downloaded from central: https://…/rocketmq-all-4.9.8.pom (31 kB at 1.2 MB/s)`` (decimal units).
_DOWNLOADED = re.compile(r"Downloaded from [^:]+: (?P<url>\S+) \((?P<size>[\d.]+) (?P<unit>B|kB|MB|GB) at ")
_UNIT_BYTES = {"B": 1, "kB": 1000, "MB": 1000**2, "GB": 1000**3}


@dataclass
class DownloadTally:
    """What Maven has downloaded so far, read off its output lines: a cold install fetches tens of MB over
    minutes, and a person watching should see it move."""

    label: str
    files: int = 0
    bytes: int = 0
    last_file: str = ""

    def feed(self, line: str) -> bool:
        """Count ``line`` if it reports a finished download; True when it did."""
        found = _DOWNLOADED.search(_ANSI.sub("", line))
        if found is None:
            return False
        self.files += 1
        self.bytes += round(float(found["size"]) * _UNIT_BYTES[found["unit"]])
        self.last_file = found["url"].rpartition("/")[2]
        return True

    def summary(self) -> str:
        """``37 files, 12.3 MB``."""
        return f"{self.files} files, {self.bytes / 1e6:.1f} MB"


#: Hears a resolution's progress: once when Maven starts (nothing downloaded yet), then after each download.
Progress = Callable[[DownloadTally], None]


def rocketmq_classpath(version: str, *, refresh: bool = False, progress: Progress | None = None) -> list[str]:
    """The name server + broker runtime classpath of Apache RocketMQ ``version`` (jar paths).

    PeerError with Maven's own first error line when it cannot resolve (registry unreachable, version not
    published)."""
    return _classpath(POM_DIR, f"rocketmq-{version}", version, refresh, progress)


def proxy_classpath(version: str, *, progress: Progress | None = None) -> list[str]:
    """The name server + proxy (with its broker) runtime classpath of Apache RocketMQ ``version`` (jar paths)."""
    return _classpath(PROXY_POM_DIR, f"rocketmq-proxy-{version}", version, False, progress)


def server_classpath(kind: str, version: str, *, progress: Progress | None = None) -> list[str]:
    """The classpath a served peer of ``kind`` ("broker" or "proxy") starts on."""
    return (proxy_classpath if kind == "proxy" else rocketmq_classpath)(version, progress=progress)


def client_classpath(version: str, *, progress: Progress | None = None) -> list[str]:
    """The runtime classpath of Apache RocketMQ's Java client ``rocketmq-client`` ``version`` (jar paths)."""
    return _classpath(CLIENT_POM_DIR, f"rocketmq-client-{version}", version, False, progress)


def mqadmin_classpath(version: str) -> list[str]:
    """The runtime classpath of Apache RocketMQ's admin tool ``rocketmq-tools`` ``version`` (mqadmin's jars)."""
    return _classpath(MQADMIN_POM_DIR, f"rocketmq-tools-{version}", version, False)


def app_client_classpath(version: str) -> list[str]:
    """The runtime classpath of an application on the Java client ``version`` with its ACL hook (rocketmq-client and
    rocketmq-acl): what a producer or consumer that signs its requests runs on."""
    return _classpath(APP_CLIENT_POM_DIR, f"rocketmq-client-acl-{version}", version, False)


def v5_client_classpath(version: str) -> list[str]:
    """The runtime classpath of the RocketMQ 5 Java client ``rocketmq-client-java`` ``version`` (jar paths)."""
    return _classpath(V5_CLIENT_POM_DIR, f"rocketmq-client-java-{version}", version, False)


def pulsar_classpath(version: str, *, progress: Progress | None = None) -> list[str]:
    """The runtime classpath of Apache Pulsar's broker ``pulsar-broker`` ``version`` (the standalone's jars)."""
    return _classpath(PULSAR_POM_DIR, f"pulsar-{version}", version, False, progress, prop="pulsar.version")


def pulsar_client_classpath(version: str, *, progress: Progress | None = None) -> list[str]:
    """The runtime classpath of Apache Pulsar's Java client ``pulsar-client`` ``version`` (jar paths)."""
    return _classpath(PULSAR_CLIENT_POM_DIR, f"pulsar-client-{version}", version, False, progress,
                      prop="pulsar.version")


def comet_classpath(version: str) -> list[str]:
    """The jar of Apache DataFusion Comet ``version`` for Spark 4.1 (``mqtck audit --engine comet``)."""
    return _classpath(COMET_POM_DIR, f"comet-spark4.1-{version}", version, False, prop="comet.version")


def _classpath(pom_dir: Path, label: str, version: str, refresh: bool, progress: Progress | None = None,
               prop: str = "rocketmq.version") -> list[str]:
    cached = cache_dir() / f"{label}.classpath"
    if cached.exists() and not refresh:
        jars = cached.read_text(encoding="utf-8").strip().split(os.pathsep)
        if jars and all(Path(j).exists() for j in jars):
            return jars
    mvn = require_tool("mvn", "Maven resolves the peer's jars from Maven Central")
    cached.parent.mkdir(parents=True, exist_ok=True)
    # Per process: CI's interop and gate lanes may resolve the same peer at once on a fresh machine.
    out = cached.with_suffix(f".{os.getpid()}.tmp")
    # Quiet unless someone watches: Maven's "Downloaded from" lines are the progress.
    cmd = [mvn, *([] if progress else ["-q"]), "-B", "-f", str(pom_dir / "pom.xml"), f"-D{prop}={version}",
           "dependency:build-classpath", f"-Dmdep.outputFile={out}"]
    run_build(cmd, step=f"Maven's resolution of {label}", timeout_s=RESOLVE_TIMEOUT_S, first_error=_first_error,
              on_line=_download_reader(label, progress) if progress else None)
    if not out.exists():
        raise PeerError(f"Maven's resolution of {label} failed: it wrote no classpath")
    out.replace(cached)
    return cached.read_text(encoding="utf-8").strip().split(os.pathsep)


def _download_reader(label: str, progress: Progress) -> Callable[[str], None]:
    """Announce the resolution at once, then read Maven's lines as they come and report each download."""
    tally = DownloadTally(label)
    progress(tally)

    def on_line(line: str) -> None:
        if tally.feed(line):
            progress(tally)

    return on_line


#: ANSI colour codes, which Maven 3.9 writes even in batch mode when its output is not a terminal.
_ANSI = re.compile(r"\x1b\[[0-9;]*m|\[[0-9;]*m")


def _first_error(text: str) -> str:
    """Maven's first error line, without its colour codes and ``[ERROR]`` tag (at most 300 characters)."""
    text = _ANSI.sub("", text)
    for line in text.splitlines():
        if "ERROR" in line:
            return line.replace("[ERROR]", "").strip()[:300]
    return (text.strip().splitlines() or ["no output"])[-1][:300]
