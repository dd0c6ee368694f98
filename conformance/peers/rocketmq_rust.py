"""rocketmq-rust, an independent Rust reimplementation of the RocketMQ name server and broker, as a broker peer.

It is installed the way its users install it, by name and version from crates.io: ``cargo install rocketmq-namesrv
--version V --locked`` and the same for ``rocketmq-broker`` (their published Cargo.lock pins every dependency), into
the peer cache (``~/.cache/mqtck/peers/rocketmq-rust-V/bin``), the two builds sharing one target directory so that
the second reuses the first's dependencies. A first build compiles some 480 crates: tens of minutes on two cores
(docs/third-party/rocketmq-rust.md has the measured time); later installs find the binaries and return at once.

It then runs like the Apache peers (:mod:`conformance.peers.rocketmq`, whose runner this one extends): the name server
and one master broker on loopback, in a fresh temp dir, with a broker configuration written here in the Java
properties syntax the Rust broker reads (``-c broker.properties``; it refuses keys it does not know, by name).
``start()`` returns once the name server routes the broker, as a client would find it. The control channel offers
what this runner can do from outside the process (restarts); what needs the broker's own admin requests is offered
only where rocketmq-rust answers them (see :meth:`RustBrokerPeer.describe`).

Facts this launcher encodes (each found running the real thing here):

* both binaries refuse to start without ``ROCKETMQ_HOME``: it points at the temp dir;
* ``diskMaxUsedSpaceRatio`` 85 or 90 is refused at start (the Apache peer sets 95 for full CI disks) and the
  refusal names no key (``ERROR core.service.failed: Service lifecycle operation failed``; the binary prints no
  cause): its default, 75, is kept;
* the broker binds ``listenPort``, ``listenPort - 2`` (the fast listener) and ``haListenPort``, which defaults to a
  fixed 10912 rather than ``listenPort + 1`` as Java's BrokerStartup sets it: it is set here.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from conformance.peers import PeerError, PeerInfo
from conformance.peers.build import ERROR_LINE_CHARS, run_build
from conformance.peers.maven import cache_dir, require_tool
from conformance.peers.rocketmq import (
    CLEAN_INTERVAL_MS,
    COMMITLOG_SEGMENT_BYTES,
    CONSUMEQUEUE_SEGMENT_UNITS,
    START_TIMEOUT_S,
    RocketMQPeer,
    _Jvm,
    await_route,
    free_port,
)

#: The crates and the binary each installs (their ``[[bin]]`` entries), name server first: the broker needs it.
CRATES = (("rocketmq-namesrv", "rocketmq-namesrv-rust"), ("rocketmq-broker", "rocketmq-broker-rust"))
#: How long one ``cargo install`` may take: a cold build of the broker is the longest step of any peer.
BUILD_TIMEOUT_S = 3 * 3600.0
#: Parallel rustc jobs: the machines mqtck runs on have two cores.
BUILD_JOBS = "2"
#: A line the process prints that no healthy start prints; the launcher waits on the network instead.
NO_MARKER = "\0"


def is_rust(info: PeerInfo) -> bool:
    """Whether ``info`` is a rocketmq-rust peer (its artifacts are crates)."""
    return bool(info.artifacts) and info.artifacts[0].startswith("crates:")


def install_root(info: PeerInfo) -> Path:
    """Where ``cargo install --root`` puts this version's binaries (``bin/`` under it)."""
    return cache_dir() / info.name


def target_dir() -> Path:
    """The cargo target directory the builds share (kept, so that another version reuses what it can)."""
    return cache_dir() / "rocketmq-rust-target"


def binary(info: PeerInfo, crate: str) -> Path:
    return install_root(info) / "bin" / dict(CRATES)[crate]


def installed(info: PeerInfo) -> bool:
    """Both binaries are in the peer cache: a gate needs no build."""
    return all(binary(info, crate).is_file() for crate, _ in CRATES)


def cargo_error(text: str) -> str:
    """The first ``error`` line of cargo's output (rustc's or cargo's own), else its last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("error"):
            return line[:ERROR_LINE_CHARS]
    return (lines[-1] if lines else "no output")[:ERROR_LINE_CHARS]


def install(info: PeerInfo, say: IO[str] | None = None) -> list[Path]:
    """Build the crates of ``info`` that are not in the peer cache yet; the binaries. PeerError (one line) when cargo
    is missing, crates.io cannot be reached or the build fails. ``say`` gets a line per crate and its wall time."""
    missing = [crate for crate, _ in CRATES if not binary(info, crate).is_file()]
    if missing:
        cargo = require_tool("cargo", "rocketmq-rust is built from crates.io with cargo (https://rustup.rs)")
        for crate in missing:
            started = time.monotonic()
            if say is not None:
                say.write(f"building {crate} {info.version} from crates.io with cargo (a first build compiles "
                          f"hundreds of crates: tens of minutes on 2 cores)\n")
                say.flush()
            run_build([cargo, "install", crate, "--version", info.version, "--locked", "--root",
                       str(install_root(info)), "--target-dir", str(target_dir()), "-j", BUILD_JOBS, "--quiet"],
                      step=f"cargo install {crate} {info.version}", timeout_s=BUILD_TIMEOUT_S,
                      first_error=cargo_error)
            if not binary(info, crate).is_file():
                raise PeerError(f"cargo install {crate} {info.version} left no {binary(info, crate).name} in "
                                f"{install_root(info) / 'bin'}")
            if say is not None:
                say.write(f"built {crate} {info.version} in {time.monotonic() - started:.0f} s\n")
                say.flush()
    return [binary(info, crate) for crate, _ in CRATES]


class RustBrokerPeer(RocketMQPeer):
    """rocketmq-rust's name server + one master broker on loopback; the Apache runner's life cycle and admin
    requests, with native processes instead of JVMs."""

    def __init__(self, info: PeerInfo, namesrv_port: int = 0, *, log: IO[str] | None = None,
                 keep_dir: bool = False, acl_file: Path | None = None,
                 channel_expired_timeout_ms: int | None = None) -> None:
        if acl_file is not None:
            raise PeerError(f"{info.name}: this runner does not configure ACL")
        super().__init__(info, namesrv_port, log=log, keep_dir=keep_dir,
                         channel_expired_timeout_ms=channel_expired_timeout_ms)

    @staticmethod
    def settable_channel_expiry(info: PeerInfo) -> bool:
        """BrokerConfig.channel_expired_timeout exists in rocketmq-rust's broker configuration."""
        return True

    def start(self) -> RustBrokerPeer:
        if not installed(self.info):
            raise PeerError(f"{self.info.name} is not built: run `mqtck peer install {self.info.name}` (cargo, "
                            "tens of minutes the first time)")
        self.dir = Path(tempfile.mkdtemp(prefix=f"mqtck-{self.info.name}-"))
        self.broker_port = free_port(self.host, neighbours=(-2, 1))
        self._write_config()
        try:
            self._namesrv = self._spawn(binary(self.info, "rocketmq-namesrv"), "--listenPort", str(self.namesrv_port),
                                        "--bindAddress", self.host)
            self._await_port(self._namesrv, self.namesrv_port, "name server")
            self._broker = self._launch_broker()
            self._await_registered()
        except BaseException:
            self.stop()
            raise
        return self

    def describe(self) -> dict[str, object]:
        doc = super().describe()
        doc["capabilities"] = ["restart"]
        return doc

    def _write_config(self) -> None:
        assert self.dir is not None
        (self.dir / "logs").mkdir(parents=True)
        (self.dir / "conf").mkdir()
        store = self.dir / "store"
        settings = {
            "brokerClusterName": "mqtck", "brokerName": "broker-a", "brokerId": "0",
            "brokerIP1": self.host, "namesrvAddr": f"{self.host}:{self.namesrv_port}",
            "listenPort": str(self.broker_port), "haListenPort": str(self.broker_port + 1),
            "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"),
            "autoCreateTopicEnable": "true", "autoCreateSubscriptionGroup": "true",
            "cleanResourceInterval": str(CLEAN_INTERVAL_MS),
            "mappedFileSizeCommitLog": str(COMMITLOG_SEGMENT_BYTES),
            "mappedFileSizeConsumeQueue": str(CONSUMEQUEUE_SEGMENT_UNITS * 20),
        }
        if self.channel_expired_timeout_ms is not None:
            settings["channelExpiredTimeout"] = str(self.channel_expired_timeout_ms)
        (self.dir / "broker.properties").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))

    def _spawn(self, program: Path, *args: str) -> _Jvm:
        """Start ``program`` in the temp dir with ``ROCKETMQ_HOME`` there; its output is kept (and echoed)."""
        assert self.dir is not None
        env = dict(os.environ, ROCKETMQ_HOME=str(self.dir), HOME=str(self.dir), TZ="UTC")
        proc = subprocess.Popen([str(program), *args], cwd=self.dir, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
        process = _Jvm(proc, NO_MARKER)
        threading.Thread(target=process.pump, args=(self.log,), daemon=True).start()
        return process

    def _launch_broker(self) -> _Jvm:
        return self._spawn(binary(self.info, "rocketmq-broker"), "-c", "broker.properties")

    def _await_port(self, process: _Jvm, port: int, what: str) -> None:
        """Until ``port`` accepts connections; PeerError with the process's last lines if it exits first."""
        import socket

        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            self._check_alive(process, what)
            with socket.socket() as s:
                s.settimeout(0.5)
                if s.connect_ex((self.host, port)) == 0:
                    return
            time.sleep(0.1)
        raise PeerError(f"{self.info.name} {what} did not listen on {self.host}:{port} within {START_TIMEOUT_S:.0f} s")

    def _check_alive(self, process: _Jvm, what: str) -> None:
        if process.proc.poll() is not None:
            time.sleep(0.2)  # let the pump read the last lines
            tail = " | ".join(line.strip() for line in process.lines[-3:] if line.strip()) or "no output"
            raise PeerError(f"{self.info.name} {what} exited with {process.proc.returncode}: {tail}"[:400])

    def _await_registered(self) -> None:
        """The broker listens, and the name server routes TBW102 to its address. The port first: after a SIGKILL
        the name server may still hold the killed broker's route for a moment, and a route alone once let a gate's
        test connect before the new broker listened (connection refused, STORE-8 and STORE-26 failed once)."""
        broker = self._broker
        assert broker is not None
        self._await_port(broker, self.broker_port, "broker")
        await_route(self.info.name, f"{self.host}:{self.namesrv_port}", self.broker_address,
                    lambda: self._check_alive(broker, "broker"))
