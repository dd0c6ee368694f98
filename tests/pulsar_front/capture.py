"""A recording TCP proxy: what a real client and the front say to each other, frame by frame."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading


class FrameCapture:
    """Listens on a free loopback port and forwards every connection to ``upstream`` (``host:port``), keeping the
    bytes of each direction. ``url`` is the service URL to give the client."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"pulsar://127.0.0.1:{self.listener.getsockname()[1]}"
        self.to_broker = bytearray()
        self.to_client = bytearray()
        self._threads: list[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            broker = socket.create_connection(self.upstream)
            for src, dst, buf in ((client, broker, self.to_broker), (broker, client, self.to_client)):
                t = threading.Thread(target=self._pump, args=(src, dst, buf), daemon=True)
                t.start()
                self._threads.append(t)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, buf: bytearray) -> None:
        try:
            while data := src.recv(65536):
                buf += data
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()


def frames(stream: bytes) -> list[bytes]:
    """The frames of one direction: each is everything after its totalSize."""
    out, at = [], 0
    while at + 4 <= len(stream):
        (total,) = struct.unpack_from(">I", stream, at)
        if at + 4 + total > len(stream):
            break
        out.append(bytes(stream[at + 4:at + 4 + total]))
        at += 4 + total
    return out
