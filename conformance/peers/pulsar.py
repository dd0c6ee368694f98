"""Run a real Apache Pulsar standalone on loopback, the way ``bin/pulsar standalone`` would, without its functions
worker and stream storage.

One JVM started with Pulsar's own ``org.apache.pulsar.PulsarStandaloneStarter`` on the classpath Maven resolved
for ``pulsar-broker`` (:func:`conformance.peers.maven.pulsar_classpath`), in a fresh temp dir holding its
``standalone.conf``, its log4j2 configuration, the RocksDB metadata store, the bookie's journal and ledgers and
the log; the dir is removed on stop.

Facts this launcher encodes (each found running 4.0.7 here, or read in its ``PulsarStandalone`` /
``BKCluster`` sources):

* with no ZooKeeper data dir, the standalone keeps its metadata in RocksDB (``--metadata-dir``, PIP-117) and
  starts one bookie through ``BKCluster``, which takes a free port of its own: no ZooKeeper or bookie port to
  choose. The bookie binds every interface unless ``listeningInterface`` is set: ``lo`` with ``allowLoopback``
  keeps it on 127.0.0.1;
* the broker binds ``bindAddress`` and advertises ``advertisedAddress`` (both 127.0.0.1) on the two ports the
  launcher picks (``brokerServicePort``, ``webServicePort``); the HTTP lookup answers with
  ``pulsar://127.0.0.1:PORT`` once ``public/default`` exists, which is what "ready" waits for;
* JDK 17 needs the ``--add-opens`` of :data:`JDK17_FLAGS` (``bin/pulsar`` passes the same; without
  ``jdk.internal.platform`` the load manager logs an access error);
* the bookie's caches default to a quarter of the direct memory each: :data:`SETTINGS` makes them 16 MiB and the
  managed-ledger cache 64 MiB, and the JVM gets :data:`HEAP` and :data:`DIRECT_MEMORY`;
* the dispatcher's settings are Pulsar's defaults (``dispatcherMaxReadBatchSize`` 100,
  ``maxUnackedMessagesPerConsumer`` 50000): what the FLOW family judges is what a default deployment does; only
  ``activeConsumerFailoverDelayTimeMillis`` (a delay no requirement times) is 0.

Stopping SIGKILLs the JVM: the store is deleted with the temp dir, and the shutdown hook would only close it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from conformance.peers import PeerError, PeerInfo
from conformance.peers.maven import pulsar_classpath, require_tool
from conformance.peers.rocketmq import free_port, port_free

#: The standalone's main class (``bin/pulsar standalone`` runs it).
MAIN_CLASS = "org.apache.pulsar.PulsarStandaloneStarter"
#: Opens ``bin/pulsar`` passes on JDK 17 (Netty's direct buffers, the load manager's container metrics).
JDK17_FLAGS = (
    "--add-opens", "java.base/java.io=ALL-UNNAMED",
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.platform=ALL-UNNAMED",
    "--add-opens", "java.management/sun.management=ALL-UNNAMED",
    "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
)
#: Heap and direct memory of the one JVM (broker and bookie): measured RSS ~0.4 GiB once ready.
HEAP = "-Xmx1g"
DIRECT_MEMORY = "-XX:MaxDirectMemorySize=512m"
#: The standalone's arguments: no functions worker, no stream storage (the FLOW family needs neither).
STANDALONE_FLAGS = ("--no-functions-worker", "--no-stream-storage")
#: standalone.conf beyond the ports and addresses: one bookie (ensemble, quorums 1), small caches, no functions,
#: websocket or transactions; the bookie on loopback; a CI disk 70 %+ full still accepted.
SETTINGS = {
    "clusterName": "standalone",
    "managedLedgerDefaultEnsembleSize": "1",
    "managedLedgerDefaultWriteQuorum": "1",
    "managedLedgerDefaultAckQuorum": "1",
    "managedLedgerCacheSizeMB": "64",
    "functionsWorkerEnabled": "false",
    "webSocketServiceEnabled": "false",
    "transactionCoordinatorEnabled": "false",
    "dbStorage_writeCacheMaxSizeMb": "16",
    "dbStorage_readAheadCacheMaxSizeMb": "16",
    "dbStorage_rocksDB_blockCacheSize": str(16 << 20),
    "journalSyncData": "false",
    "diskUsageThreshold": "0.99",
    "diskUsageWarnThreshold": "0.98",
    "listeningInterface": "lo",
    "allowLoopback": "true",
    # A failover subscription's new active consumer is sent the unacknowledged messages this long after the change
    # (1000 ms by default): no requirement times it, and the suite reads what was dispatched once the wire is quiet.
    "activeConsumerFailoverDelayTimeMillis": "0",
}
#: How long the standalone may take from launch to answering a lookup (measured 16 s on 2 loaded cores).
START_TIMEOUT_S = 120.0
#: The topic whose HTTP lookup says the broker serves ``public/default``.
READY_TOPIC = "persistent/public/default/mqtck-ready"

_LOG4J2 = """status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss.SSS}} %-5level %c{{1}} - %msg%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = FILE
"""


class PulsarPeer:
    """Apache Pulsar ``info.version`` standalone on loopback: ``start()`` returns once the binary port accepts and an
    HTTP topic lookup names it; ``target`` is then ``pulsar://127.0.0.1:PORT`` and ``admin_url`` the REST API
    (topic stats: the permits and dispatch counters the observations read). ``stop()`` kills it and removes the
    temp dir."""

    def __init__(self, info: PeerInfo, port: int = 0, *, log: IO[str] | None = None) -> None:
        self.info = info
        self.host = "127.0.0.1"
        if port and not port_free(self.host, port):
            raise PeerError(f"port {port} on {self.host} is busy")
        self.port = port
        self.web_port = 0
        self.log = log
        self.dir: Path | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._lines: list[str] = []
        #: Seconds from launch to ready, and the JVM's resident set then (bytes): what ``peer run`` reports.
        self.ready_after_s = 0.0
        self.rss_bytes = 0

    @property
    def target(self) -> str:
        return f"pulsar://{self.host}:{self.port}"

    @property
    def admin_url(self) -> str:
        return f"http://{self.host}:{self.web_port}"

    def start(self) -> PulsarPeer:
        java = require_tool("java", "the Pulsar standalone runs on the JVM")
        classpath = os.pathsep.join(pulsar_classpath(self.info.version))
        self.dir = Path(tempfile.mkdtemp(prefix=f"mqtck-{self.info.name}-"))
        self.port = self.port or free_port(self.host)
        self.web_port = free_port(self.host)
        while self.web_port == self.port:
            self.web_port = free_port(self.host)
        conf = self._write_config()
        cmd = [java, HEAP, DIRECT_MEMORY, *JDK17_FLAGS, f"-Dlog4j.configurationFile={self.dir / 'log4j2.properties'}",
               "-Duser.timezone=UTC", "-cp", classpath, MAIN_CLASS, "-c", str(conf), *STANDALONE_FLAGS,
               "--metadata-dir", str(self.dir / "data" / "metadata"),
               "--bookkeeper-dir", str(self.dir / "data" / "bookkeeper"), "-a", self.host]
        launched = time.monotonic()
        self._proc = subprocess.Popen(cmd, cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      start_new_session=True)
        threading.Thread(target=self._pump, daemon=True).start()
        try:
            self._await_ready()
        except BaseException:
            self.stop()
            raise
        self.ready_after_s = time.monotonic() - launched
        self.rss_bytes = _rss_bytes(self._proc.pid)
        return self

    def stop(self) -> None:
        """SIGKILL the JVM (its store goes with the temp dir) and remove the dir."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait()
        self._proc = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> PulsarPeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def topic_stats(self, topic: str) -> dict[str, object]:
        """The broker's stats of ``persistent://TENANT/NS/NAME`` (``GET /admin/v2/persistent/.../stats``): per
        subscription and consumer, ``availablePermits``, ``msgOutCounter``, ``unackedMessages``."""
        path = topic.replace("persistent://", "persistent/", 1)
        with urllib.request.urlopen(f"{self.admin_url}/admin/v2/{path}/stats", timeout=10) as answer:
            stats: dict[str, object] = json.load(answer)
        return stats

    def describe(self) -> dict[str, object]:
        """What ``mqtck peer run`` and the gate report about the running peer."""
        return {"implementation": self.info.name, "target": self.target, "admin": self.admin_url,
                "ready_after_s": round(self.ready_after_s, 1), "rss_mib": self.rss_bytes >> 20}

    # -- plumbing ------------------------------------------------------------------------------------
    def _write_config(self) -> Path:
        assert self.dir is not None
        settings = {**SETTINGS, "bindAddress": self.host, "advertisedAddress": self.host,
                    "brokerServicePort": str(self.port), "webServicePort": str(self.web_port)}
        conf = self.dir / "standalone.conf"
        conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()), encoding="utf-8")
        (self.dir / "log4j2.properties").write_text(_LOG4J2.format(log=self.dir / "pulsar.log"), encoding="utf-8")
        return conf

    def _pump(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        for line in proc.stdout:
            self._lines.append(line.rstrip("\n"))
            if self.log is not None:
                self.log.write(line)

    def _await_ready(self) -> None:
        """The binary port accepts and the HTTP lookup of :data:`READY_TOPIC` names :attr:`target`."""
        assert self._proc is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        last = "nothing answered"
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise PeerError(f"{self.info.name} exited with {self._proc.returncode}: {self._tail()}"[:400])
            if _accepts(self.host, self.port):
                try:
                    with urllib.request.urlopen(f"{self.admin_url}/lookup/v2/topic/{READY_TOPIC}", timeout=5) as r:
                        if json.load(r).get("brokerUrl") == self.target:
                            return
                        last = "the lookup named another broker"
                except (urllib.error.URLError, OSError, ValueError) as exc:
                    last = f"lookup: {exc}"
            time.sleep(0.25)
        raise PeerError(f"{self.info.name} did not answer a topic lookup within {START_TIMEOUT_S:.0f} s ({last})")

    def _tail(self) -> str:
        """The last error lines of its log (or its output), for a PeerError."""
        log = self.dir / "pulsar.log" if self.dir is not None else None
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines() if log and log.exists() else []
        errors = [line for line in lines if " ERROR " in line] or self._lines or ["no output"]
        return " | ".join(errors[-2:])


def _accepts(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
        return True
    return False


def _rss_bytes(pid: int) -> int:
    """The resident set of ``pid`` (Linux ``/proc``), 0 where it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def served(info: PeerInfo, port: int = 0, *, log: IO[str] | None = None) -> Iterator[PulsarPeer]:
    """The standalone running for as long as the block runs (killed and its data removed on the way out); PeerError
    if it cannot start. What ``mqtck peer run`` serves and ``mqtck gate`` gates."""
    if info.kind != "broker":
        raise PeerError(f"{info.name} is not a broker and cannot be served: `mqtck gate {info.name}` checks it")
    peer = PulsarPeer(info, port, log=log).start()
    try:
        yield peer
    finally:
        peer.stop()
