"""Run a real Apache RocketMQ name server and broker on loopback, the way an operator would.

Each is its own JVM started with RocketMQ's own main class (``NamesrvStartup``, ``BrokerStartup -c FILE``)
on the classpath Maven resolved (:mod:`conformance.peers.maven`), in a fresh temp dir that holds the
config, the store and the logs (``user.home`` and ``ROCKETMQ_HOME`` point there) and is removed on stop.

Facts this launcher encodes (each found running the real thing here):

* JDK 17 needs the ``--add-opens/--add-exports`` of :data:`JDK17_FLAGS` (RocketMQ unmaps mapped files
  through JDK internals);
* the broker refuses writes when the disk is fuller than its thresholds, and a CI disk can be 70 %+ full:
  ``diskMaxUsedSpaceRatio`` and the two ``rocketmq.broker.diskSpace*`` system properties are raised;
* the broker binds ``listenPort``, ``listenPort - 2`` (the VIP channel) and ``listenPort + 1`` (HA), so its
  port is chosen with both neighbours free;
* everything binds and advertises 127.0.0.1 (``brokerIP1``, the name server address);
* the clean service's hours (``deleteWhen``) are in the JVM's time zone: the JVMs run in UTC
  (``-Duser.timezone=UTC``), as the reference reads them;
* the clean service runs every ``cleanResourceInterval`` (10 s by default, set at start only): the peer runs it
  every second, so that retention tests wait seconds, not tens of seconds (its first run stays 60 s after boot,
  fixed in DefaultMessageStore).

The runner owns the processes, so it also offers what the wire cannot: a restart (clean or SIGKILL, data
kept), retention on demand (every closed commit-log segment expired and cleaned now, through RocketMQ's own
admin requests), settings changed at run time (UPDATE_BROKER_CONFIG), a manual delete request
(DELETE_EXPIRED_COMMITLOG) and the store's segment sizes. ``mqtck peer run`` publishes these on the control
channel.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from conformance.peers import PeerError, PeerInfo
from conformance.peers.maven import require_tool, rocketmq_classpath
from reference.net.remoting.command import RequestCode

if TYPE_CHECKING:
    from reference.net.remoting.client import RemotingClient

#: Opens and exports the broker's store needs on JDK 17 (it cleans mapped buffers through JDK internals).
JDK17_FLAGS = (
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
)
#: Heap of each JVM: the broker's defaults (8 GiB) do not fit a CI machine; 512 MiB serves the suite.
HEAP = "-Xmx512m"
#: Disk-usage thresholds above which the broker refuses writes / cleans forcibly (0.90 / 0.85 by default).
DISK_RATIO_PROPERTIES = (
    "-Drocketmq.broker.diskSpaceWarningLevelRatio=0.99",
    "-Drocketmq.broker.diskSpaceCleanForciblyRatio=0.99",
)
#: The magics a RocketMQ commit-log record starts with (MessageDecoder.MESSAGE_MAGIC_CODE and _V2, as unsigned).
ROCKETMQ_MAGICS = frozenset({-626843481 & 0xFFFFFFFF, -626843477 & 0xFFFFFFFF})
#: deleteWhen names hours of the JVM's time zone: UTC, as the reference reads them.
TIMEZONE_PROPERTY = "-Duser.timezone=UTC"
#: Commit-log segment size the peer is started with: small, so retention has closed segments to delete
#: after a few MiB of sends (RocketMQ's default is 1 GiB). Tests learn it from the control channel.
COMMITLOG_SEGMENT_BYTES = 1 << 20
#: Consume-queue segment size in units: RocketMQ's default (300 000 units of 20 bytes).
CONSUMEQUEUE_SEGMENT_UNITS = 300_000
#: How long the broker may take from launch to registered with its name server.
START_TIMEOUT_S = 90.0


class PortRace(PeerError):
    """Ports chosen free for a peer are not usable together (two choices collided)."""


class JvmExited(PeerError):
    """A peer's JVM exited while it started (a port taken between its choice and its bind, among other causes)."""


#: How often a peer whose JVM exits at its start (a port taken between its choice and its bind) is started again.
START_ATTEMPTS = 3
#: How long a JVM may take to stop after SIGTERM (RocketMQ's shutdown hook flushes and unregisters).
STOP_TIMEOUT_S = 20.0
#: Line BrokerStartup / NamesrvStartup print on stdout once started.
BOOT_SUCCESS = "boot success"
#: RocketMQ's consumer-channel housekeeping: channelExpiredTimeout and the scan's interval (ms).
CHANNEL_EXPIRED_TIMEOUT_MS = 120_000
CHANNEL_SCAN_INTERVAL_MS = 10_000
#: What ``mqtck gate`` sets RocketMQ 5's channelExpiredTimeout to (BrokerConfig, read once at start), so that a
#: silent channel's expiry (CGRP-6) is judged within a test's usual wait; 4.x's is fixed, and judged with --slow.
#: Only the gate sets it: a real client beats every 30 s, and would be dropped between its heartbeats.
GATE_CHANNEL_EXPIRED_TIMEOUT_MS = 20_000
#: How often the peer's clean service runs (cleanResourceInterval; RocketMQ's default is 10 000 ms).
CLEAN_INTERVAL_MS = 1_000
#: An expire makes every hour a clean hour and keeps nothing reserved, until the deletion is seen.
EVERY_HOUR = ";".join(f"{h:02d}" for h in range(24))
#: The clean service's first run is 60 s after the broker starts, then every cleanResourceInterval: an
#: expire request waits at most this long for the deletion.
EXPIRE_TIMEOUT_S = 90.0

_LOGBACK = """<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5level %logger{{30}} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


#: The kernel's range of ephemeral ports, which every outgoing connection takes its local port from.
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: How many ports below the ephemeral range a server port is drawn from.
LISTEN_SPAN = 12_000


def listen_ports() -> range:
    """Where a peer's server ports are drawn from: just below the ephemeral range. A peer is restarted on the same
    ports (its clients and name server know them), and a port of the ephemeral range can be taken by any client's
    outgoing connection while the peer is down: a proxy restarted during a diff once failed to bind its own port."""
    try:
        low = int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32_768  # Linux's default
    return range(max(1_100, low - LISTEN_SPAN), max(1_100 + LISTEN_SPAN, low))


def free_port(host: str = "127.0.0.1", *, neighbours: tuple[int, ...] = ()) -> int:
    """A port free on ``host``, outside the ephemeral range (:func:`listen_ports`), whose ``port + n`` for each n
    in ``neighbours`` is free too."""
    ports = listen_ports()
    for _ in range(200):
        port = random.randrange(ports.start - min(neighbours, default=0), ports.stop - max(neighbours, default=0))
        if port_free(host, port) and all(port_free(host, port + n) for n in neighbours):
            return port
    raise PeerError(f"no free loopback port found for the broker in {ports.start}-{ports.stop - 1}")


def port_free(host: str, port: int) -> bool:
    if not 0 < port < 65536:
        return False
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


@dataclass
class _Jvm:
    """One started JVM and the lines it printed (RocketMQ's start-up report goes to stdout)."""

    proc: subprocess.Popen[str]
    #: The line that says it started (the proxy prints its own; its broker's boot line goes to its log).
    marker: str = BOOT_SUCCESS
    lines: list[str] = field(default_factory=list)
    booted: threading.Event = field(default_factory=threading.Event)

    def pump(self, echo: IO[str] | None) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if self.marker in line:
                self.booted.set()
            if echo is not None:
                echo.write(line)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class RocketMQPeer:
    """Name server + one master broker of Apache RocketMQ ``info.version`` on loopback.

    ``start()`` returns once the broker has registered with the name server; ``target`` is then the
    ``remoting://`` address of the name server. ``stop()`` ends both JVMs and removes the temp dir.
    """

    def __init__(self, info: PeerInfo, namesrv_port: int = 0, *, log: IO[str] | None = None,
                 keep_dir: bool = False, acl_file: Path | None = None,
                 channel_expired_timeout_ms: int | None = None) -> None:
        self.info = info
        #: RocketMQ 5's channelExpiredTimeout, when the runner sets it (4.x has no such setting: PeerError).
        if channel_expired_timeout_ms is not None and not self.settable_channel_expiry(info):
            raise PeerError(f"{info.name}: channelExpiredTimeout is fixed at {CHANNEL_EXPIRED_TIMEOUT_MS} ms in 4.x")
        self.channel_expired_timeout_ms = channel_expired_timeout_ms
        #: ACL 1.0: the broker runs with ``aclEnable=true`` and this file as its ``conf/plain_acl.yml``. The
        #: runner's own admin requests are then refused unless the file white-lists loopback.
        self.acl_file = acl_file
        self.host = "127.0.0.1"
        if namesrv_port and not port_free(self.host, namesrv_port):
            raise PeerError(f"port {namesrv_port} on {self.host} is busy")
        self.namesrv_port = namesrv_port or free_port(self.host)
        self._namesrv_port_given = bool(namesrv_port)
        self.broker_port = 0
        self.log = log
        self.keep_dir = keep_dir
        self.dir: Path | None = None
        self._namesrv: _Jvm | None = None
        self._broker: _Jvm | None = None
        self._java = ""
        self._classpath = ""

    # -- life cycle ------------------------------------------------------------------------------
    @property
    def target(self) -> str:
        return f"remoting://{self.host}:{self.namesrv_port}"

    @property
    def broker_address(self) -> str:
        return f"{self.host}:{self.broker_port}"

    def start(self) -> RocketMQPeer:
        """Start the name server and the broker. The ports are chosen free and then bound by JVMs seconds later, so
        another process (a CI lane beside this one) can take one in between: a JVM that exits at its start is
        started again on new ports, up to START_ATTEMPTS times (ports the caller named are kept)."""
        self._java = require_tool("java", "the RocketMQ peers run on the JVM")
        self._classpath = os.pathsep.join(self._jars())
        for _ in range(START_ATTEMPTS - 1):
            try:
                return self._start_once()
            except (PortRace, JvmExited):
                self._choose_ports_again()
        return self._start_once()

    def _start_once(self) -> RocketMQPeer:
        """One start on the ports chosen now; everything started is stopped again if it fails."""
        self.dir = Path(tempfile.mkdtemp(prefix=f"mqtck-{self.info.name}-"))
        self.broker_port = free_port(self.host, neighbours=(-2, 1))
        try:
            self._write_config()
            self._namesrv = self._launch("org.apache.rocketmq.namesrv.NamesrvStartup", "-c", "namesrv.properties")
            self._await_boot(self._namesrv, "name server")
            self._broker = self._launch_broker()
            self._await_registered()
        except BaseException:
            self.stop()
            raise
        return self

    def _choose_ports_again(self) -> None:
        """New free ports for a start that failed (the name server's unless the caller named it)."""
        if not self._namesrv_port_given:
            self.namesrv_port = free_port(self.host)

    def _jars(self) -> list[str]:
        """The runtime classpath the JVMs start on (a subclass that runs another main class resolves its own)."""
        return rocketmq_classpath(self.info.version)

    def stop(self) -> None:
        """End both JVMs and remove the store. When the store goes, nothing RocketMQ's shutdown hook would flush
        or unregister outlives it, and the hook takes 10-19 s (every gate and ``peer run`` paid it at its end):
        SIGKILL. A kept store gets SIGTERM, so that the hook leaves it consistent."""
        sig = signal.SIGTERM if self.keep_dir else signal.SIGKILL
        for jvm in (self._broker, self._namesrv):
            if jvm is not None:
                jvm.stop(sig)
        self._broker = self._namesrv = None
        if self.dir is not None and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> RocketMQPeer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what the owner of the process can do (the control channel) -------------------------------
    def describe(self) -> dict[str, object]:
        assert self.dir is not None, "not started"
        usage = shutil.disk_usage(self.dir)
        return {
            "implementation": self.info.name,
            "capabilities": ["restart", "retention_expire", "store_layout", "broker_config", "manual_delete",
                             "torn_restart", "fresh_store"],
            "store": {"commitlog_segment_bytes": COMMITLOG_SEGMENT_BYTES,
                      "consumequeue_segment_units": CONSUMEQUEUE_SEGMENT_UNITS,
                      "clean_interval_ms": CLEAN_INTERVAL_MS,
                      "disk_used_ratio": round(usage.used / usage.total, 4) if usage.total else 1.0},
            # ClientHousekeepingService: every 10 s, channels silent for 120 s (fixed in 4.x; 5.x's default).
            "registry": {"channel_expired_timeout_ms": self.channel_expired_timeout_ms or CHANNEL_EXPIRED_TIMEOUT_MS,
                         "channel_scan_interval_ms": CHANNEL_SCAN_INTERVAL_MS},
        }

    def configure(self, settings: dict[str, object]) -> dict[str, object]:
        """Change broker settings with RocketMQ's UPDATE_BROKER_CONFIG; the values they replace are read first
        with GET_BROKER_CONFIG, typed as the control channel's settings are."""
        with self._admin() as client:
            current = self._broker_config(client)
            previous = {name: _typed(name, current.get(name, "")) for name in settings}
            self._update_config(client, {k: _property(v) for k, v in settings.items()})
        return previous

    def tear_and_restart(self, commit_log_offset: int) -> None:
        """SIGKILL the broker, tear the record at ``commit_log_offset`` in its commit log (the magic overwritten, as
        a write cut short leaves it) and start it again: RocketMQ recovers abnormally (the abort file is left)."""
        from reference.store.record import tear_record

        assert self._broker is not None and self.dir is not None, "not started"
        self._broker.stop(signal.SIGKILL)
        try:
            tear_record(self.dir / "store" / "commitlog", COMMITLOG_SEGMENT_BYTES, commit_log_offset, ROCKETMQ_MAGICS)
        finally:
            self._relaunch_broker()

    def fresh_restart(self) -> None:
        """SIGKILL the broker, remove its store (commit log, consume queues, topics, offsets) and start it again:
        the next message sent is the commit log's first record."""
        assert self._broker is not None and self.dir is not None, "not started"
        self._broker.stop(signal.SIGKILL)
        try:
            shutil.rmtree(self.dir / "store", ignore_errors=True)
        finally:
            self._relaunch_broker()

    def manual_delete(self) -> None:
        """DELETE_EXPIRED_COMMITLOG: the next 20 clean runs delete expired segments at any hour."""
        with self._admin() as client:
            response = client.invoke(RequestCode.DELETE_EXPIRED_COMMITLOG, {}, timeout_s=10.0)
        if response.code != 0:
            raise PeerError(f"DELETE_EXPIRED_COMMITLOG refused: {response.code} {response.remark}")

    def restart(self, kill: bool = False) -> None:
        """Stop the broker (SIGTERM: its shutdown hook flushes; SIGKILL: nothing runs) and start it again on the
        same store and port; returns once it has registered again."""
        assert self._broker is not None, "not started"
        self._broker.stop(signal.SIGKILL if kill else signal.SIGTERM)
        self._relaunch_broker()

    def _relaunch_broker(self) -> None:
        """Start the stopped broker again on the same store and port; return once it has registered."""
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while not port_free(self.host, self.broker_port) and time.monotonic() < deadline:
            time.sleep(0.1)
        self._broker = self._launch_broker()
        self._await_registered()

    def expire_and_clean(self) -> int:
        """Every closed commit-log segment counts as expired and is deleted now (RocketMQ's own clean service:
        ``fileReservedTime=0`` and every hour a ``deleteWhen`` hour); then both are put back. Returns how many
        commit-log segments were deleted. No manual delete request is used: it would go on forcing the next 20
        clean runs, which tests of the hour and disk triggers must not inherit.

        Done when the broker's runtime info shows ``commitLogMinOffset`` at the start of the segment being
        written (RocketMQ keeps a pre-created next file, so counting files says nothing), plus one more clean
        interval: the consume queues' min offsets are corrected on the run after the deletion (5.x)."""
        with self._admin() as client:
            before = self._commitlog_bounds(client)[0]
            current = self._broker_config(client)
            restore = {"fileReservedTime": current.get("fileReservedTime", "72"),
                       "deleteWhen": current.get("deleteWhen", "04")}
            self._update_config(client, {"fileReservedTime": "0", "deleteWhen": EVERY_HOUR})
            try:
                deadline = time.monotonic() + EXPIRE_TIMEOUT_S
                while True:
                    lo, hi = self._commitlog_bounds(client)
                    # An empty commit log (RocketMQ answers min -1, max 0) has nothing to expire.
                    if hi <= 0 or lo >= hi // COMMITLOG_SEGMENT_BYTES * COMMITLOG_SEGMENT_BYTES:
                        break
                    if time.monotonic() > deadline:
                        raise PeerError(f"retention did not reach the segment being written within "
                                        f"{EXPIRE_TIMEOUT_S} s (commit log [{lo}, {hi}))")
                    time.sleep(0.2)
                time.sleep(2 * CLEAN_INTERVAL_MS / 1000)
            finally:
                with contextlib.suppress(Exception):
                    self._update_config(client, restore)
        return (lo - before) // COMMITLOG_SEGMENT_BYTES

    def _commitlog_bounds(self, client: object) -> tuple[int, int]:
        """(commitLogMinOffset, commitLogMaxOffset) from GET_BROKER_RUNTIME_INFO; when the broker cannot answer
        it (4.9.7 fails on some runtime statistics), from the segment files on disk: the oldest file's name and,
        as the written end, the start of the newest file but one (the newest may be pre-created and empty)."""
        from reference.net.remoting.command import loads_body

        response = client.invoke(RequestCode.GET_BROKER_RUNTIME_INFO, {}, timeout_s=10.0)  # type: ignore[attr-defined]
        if response.code == 0:
            table = loads_body(response.body)["table"]
            return int(table["commitLogMinOffset"]), int(table["commitLogMaxOffset"])
        assert self.dir is not None
        files = sorted(int(p.name) for p in (self.dir / "store" / "commitlog").iterdir() if p.name.isdigit())
        if not files:
            return 0, 0
        return files[0], files[-2] if len(files) > 1 else files[0]

    # -- plumbing ----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _admin(self) -> Iterator[RemotingClient]:
        """A remoting connection to the broker for the runner's admin requests, closed after the block."""
        from reference.net.remoting.client import RemotingClient

        client = RemotingClient(self.broker_address)
        try:
            yield client
        finally:
            client.close()

    @staticmethod
    def _broker_config(client: object) -> dict[str, str]:
        """GET_BROKER_CONFIG: every setting, from the properties text of the answer's body."""
        response = client.invoke(RequestCode.GET_BROKER_CONFIG, {}, timeout_s=10.0)  # type: ignore[attr-defined]
        if response.code != 0:
            raise PeerError(f"GET_BROKER_CONFIG refused: {response.code} {response.remark}")
        pairs = (line.split("=", 1) for line in response.body.decode("utf-8", "replace").splitlines() if "=" in line)
        return {k.strip(): v.strip() for k, v in pairs}

    @staticmethod
    def _update_config(client: object, props: dict[str, str]) -> None:
        body = "".join(f"{k}={v}\n" for k, v in props.items()).encode("utf-8")
        response = client.invoke(RequestCode.UPDATE_BROKER_CONFIG, {}, body, timeout_s=10.0)  # type: ignore[attr-defined]
        if response.code != 0:
            raise PeerError(f"UPDATE_BROKER_CONFIG {props} refused: {response.code} {response.remark}")

    @staticmethod
    def settable_channel_expiry(info: PeerInfo) -> bool:
        """RocketMQ 5's BrokerConfig has channelExpiredTimeout; 4.x's ConsumerManager fixes it at 120 s. rocketmq-rust
        (a crates.io peer) has it too."""
        from_crates = info.artifacts[:1] == (f"crates:rocketmq-namesrv@{info.version}",)
        return from_crates or int(info.version.split(".")[0]) >= 5

    def _write_config(self) -> None:
        assert self.dir is not None
        conf = self.dir / "conf"
        (self.dir / "logs").mkdir(parents=True)
        conf.mkdir()
        for name in ("namesrv", "broker"):
            (conf / f"logback_{name}.xml").write_text(_LOGBACK.format(log=self.dir / "logs" / f"{name}.log"))
        (self.dir / "namesrv.properties").write_text(f"listenPort={self.namesrv_port}\n")
        store = self.dir / "store"
        settings = {
            "brokerClusterName": "mqtck", "brokerName": "broker-a", "brokerId": "0",
            "brokerIP1": self.host, "namesrvAddr": f"{self.host}:{self.namesrv_port}",
            "listenPort": str(self.broker_port), "storePathRootDir": str(store),
            "storePathCommitLog": str(store / "commitlog"), "autoCreateTopicEnable": "true",
            "autoCreateSubscriptionGroup": "true", "diskMaxUsedSpaceRatio": "95",
            "mappedFileSizeCommitLog": str(COMMITLOG_SEGMENT_BYTES),
            "mappedFileSizeConsumeQueue": str(CONSUMEQUEUE_SEGMENT_UNITS * 20),
            "cleanResourceInterval": str(CLEAN_INTERVAL_MS),
        }
        if self.channel_expired_timeout_ms is not None:
            settings["channelExpiredTimeout"] = str(self.channel_expired_timeout_ms)
        if self.acl_file is not None:
            settings["aclEnable"] = "true"
            shutil.copyfile(self.acl_file, conf / "plain_acl.yml")
        (self.dir / "broker.conf").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))

    def _launch(self, main: str, *args: str, marker: str = BOOT_SUCCESS) -> _Jvm:
        assert self.dir is not None
        env = dict(os.environ, ROCKETMQ_HOME=str(self.dir))
        cmd = [self._java, HEAP, *JDK17_FLAGS, *DISK_RATIO_PROPERTIES, TIMEZONE_PROPERTY, f"-Duser.home={self.dir}",
               "-cp", self._classpath, main, *args]
        proc = subprocess.Popen(cmd, cwd=self.dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        jvm = _Jvm(proc, marker)
        threading.Thread(target=jvm.pump, args=(self.log,), daemon=True).start()
        return jvm

    def _launch_broker(self) -> _Jvm:
        return self._launch("org.apache.rocketmq.broker.BrokerStartup", "-c", "broker.conf")

    def _await_boot(self, jvm: _Jvm, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not jvm.booted.wait(0.1):
            if jvm.proc.poll() is not None:
                tail = " | ".join(jvm.lines[-3:]) or "no output"
                raise JvmExited(f"{self.info.name} {what} exited with {jvm.proc.returncode}: {tail}"[:400])
            if time.monotonic() > deadline:
                raise PeerError(f"{self.info.name} {what} did not start within {START_TIMEOUT_S:.0f} s")

    def _await_registered(self) -> None:
        """The broker printed its boot line and the name server routes TBW102 to it."""
        assert self._broker is not None
        self._await_boot(self._broker, "broker")
        await_route(self.info.name, f"{self.host}:{self.namesrv_port}", self.broker_address)


def await_route(peer: str, namesrv: str, broker_address: str, alive: Callable[[], None] = lambda: None) -> None:
    """Wait until the name server ``namesrv`` routes TBW102 to ``broker_address``: the broker has registered.
    ``alive`` raises PeerError when the broker process has died meanwhile (checked before every look-up)."""
    from conformance.targets.http import UnreachableTarget
    from conformance.targets.remoting import discover_broker

    deadline = time.monotonic() + START_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline:
        alive()
        try:
            if discover_broker(namesrv) == broker_address:
                return
        except UnreachableTarget as exc:
            last = str(exc)
        time.sleep(0.2)
    raise PeerError(f"{peer} broker never registered with its name server within {START_TIMEOUT_S:.0f} s ({last})")


def _property(value: object) -> str:
    """A control-channel setting as a RocketMQ property value (booleans lower case, as Java prints them)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _typed(name: str, text: str) -> object:
    """A RocketMQ property value typed as the control channel's setting ``name`` is."""
    from conformance.targets.control import BOOLEAN_SETTINGS

    if name in BOOLEAN_SETTINGS:
        return text.lower() == "true"
    if name == "deleteWhen":
        return text
    try:
        return int(text)
    except ValueError:
        raise PeerError(f"GET_BROKER_CONFIG: {name}={text!r} is not an integer") from None


@contextlib.contextmanager
def served(info: PeerInfo, namesrv_port: int = 0, *, log: IO[str] | None = None,
           channel_expired_timeout_ms: int | None = None,
           peer_class: type[RocketMQPeer] = RocketMQPeer) -> Iterator[str]:
    """The peer running with its control channel, for as long as the block runs: yields the target
    (``remoting://127.0.0.1:PORT?control=127.0.0.1:CPORT``; ``peer_class`` a subclass with its own target); both
    are stopped and the data removed on the way out. PeerError if the peer cannot start. What ``mqtck peer run``
    serves and ``mqtck gate`` gates."""
    from conformance.targets.control import serve_control

    if info.kind not in ("broker", "proxy"):
        raise PeerError(f"{info.name} is not a broker and cannot be served: `mqtck gate {info.name}` checks it")
    peer = peer_class(info, namesrv_port, log=log, channel_expired_timeout_ms=channel_expired_timeout_ms).start()
    try:
        control = serve_control(peer)
    except BaseException:
        peer.stop()
        raise
    try:
        yield f"{peer.target}{'&' if '?' in peer.target else '?'}control={control.address}"
    finally:
        control.stop()
        peer.stop()
