"""A raw Pulsar connection for tests: frames written and read with the front's own codec."""

from __future__ import annotations

import socket
import struct

from reference.net.pulsar import frame
from reference.net.pulsar.schema import pb


class RawConnection:
    def __init__(self, url: str, timeout: float = 5.0) -> None:
        host, port = url.removeprefix("pulsar://").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, command: object, entry: bytes = b"") -> None:
        """Send ``command`` even when it lacks required fields (the bad input under test)."""
        cmd = command.SerializePartialToString()  # type: ignore[attr-defined]
        self.sock.sendall(struct.pack(">II", 4 + len(cmd) + len(entry), len(cmd)) + cmd + entry)

    def _exactly(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the broker")
            out += chunk
        return out

    def read(self) -> tuple[object, bytes]:
        (total,) = struct.unpack(">I", self._exactly(4))
        return frame.decode(self._exactly(total))

    def closed_by_peer(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionError:
            return True

    def connect(self) -> object:
        cmd = pb.BaseCommand(type=pb.Type_.CONNECT)
        cmd.connect.client_version = "mqtck-test"
        cmd.connect.protocol_version = 20
        self.send(cmd)
        return self.read()[0]

    def ping(self) -> object:
        cmd = pb.BaseCommand(type=pb.Type_.PING)
        cmd.ping.SetInParent()
        self.send(cmd)
        return self.read()[0]

    def close(self) -> None:
        self.sock.close()
