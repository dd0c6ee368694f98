"""Helpers for the interop tests: the broker as a subprocess, blocking admin requests over the codec, and
polling with generous deadlines (the real client's timers are real; nothing here asserts on timing)."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.audit.class_archive import cache_dir
from conformance.targets.launch import launch_broker
from reference.net.remoting.command import RemotingCommand, RequestCode
from reference.net.remoting.frame import FrameDecoder, encode_frame

ROOT = Path(__file__).resolve().parents[2]


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 60.0, step_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(step_s)


class BrokerProcess:
    """``mqtck broker --remoting 127.0.0.1:0`` recording ``traces/<name>.jsonl``; a crash of a client
    cannot take it down, and a crash of it cannot take the test process down."""

    def __init__(self, workdir: Path, traces: Path, name: str, *extra: str) -> None:
        self.name = name
        self.trace = traces / f"{name}.jsonl"
        self._stderr = (workdir / f"{name}.stderr").open("w")
        try:
            self.launched = launch_broker("remoting", workdir / name, "--trace", str(self.trace), *extra,
                                          stderr=self._stderr, cwd=ROOT)
        except RuntimeError:
            self._stderr.close()
            raise
        self.proc = self.launched.proc
        self.namesrv = self.launched.address
        route = self.request(self.namesrv, 105, {"topic": "TBW102"})
        host, port = json.loads(route.body)["brokerDatas"][0]["brokerAddrs"]["0"].split(":")
        self.broker_addr = (host, int(port))

    @staticmethod
    def request(addr: str | tuple[str, int], code: int, ext: dict[str, Any] | None = None,
                body: bytes = b"") -> RemotingCommand:
        if isinstance(addr, str):
            host, port = addr.rsplit(":", 1)
            addr = (host, int(port))
        with socket.create_connection(addr, timeout=10) as sock:
            sock.sendall(encode_frame(RemotingCommand(code, opaque=1, language="PYTHON",
                                                      ext_fields={k: str(v) for k, v in (ext or {}).items()},
                                                      body=body)))
            decoder = FrameDecoder()
            while True:
                data = sock.recv(65536)
                if not data:
                    raise ConnectionError("closed")
                for cmd in decoder.feed(data):
                    if cmd.is_response:
                        return cmd

    def broker(self, code: int, ext: dict[str, Any] | None = None, body: bytes = b"") -> RemotingCommand:
        return self.request(self.broker_addr, code, ext, body)

    def consumer_ids(self, group: str) -> list[str]:
        r = self.broker(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group})
        return json.loads(r.body)["consumerIdList"] if r.code == 0 else []

    def stop(self) -> None:
        """SIGTERM (the trace is closed on the way out), then kill if it hangs."""
        self.launched.stop()
        self._stderr.close()

    def rows(self) -> list[dict[str, Any]]:
        with self.trace.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]


def home_for_client(path: Path) -> None:
    """The C++ client writes logs and broadcasting offsets under $HOME: keep them in the test's tmp dir. The
    audit's class archive stays in the user's cache (else every run would write a new one into the tmp dir)."""
    os.environ.setdefault("MQTCK_CACHE_DIR", str(cache_dir()))
    os.environ["HOME"] = str(path)
