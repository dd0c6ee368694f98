"""Framing fuzz: whatever bytes a client sends, the servers keep serving everyone else.

Random byte strings, good frames cut short, frames with random JSON headers (any code, any extFields,
any body) and oversized length fields go to the name server and the broker over fresh connections; after
each one a well-formed request on another connection must still get its answer.
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.net.remoting.command import RemotingCommand, RequestCode
from reference.net.remoting.frame import MAX_FRAME_BYTES, FrameDecoder, encode_frame
from reference.rules.codes import ResponseCode
from tests.remoting.conftest import ServerThread

SOCKET_TIMEOUT_S = 5.0

json_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.text(max_size=10)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
known_codes = st.sampled_from([int(c) for c in RequestCode] + [0, -1, 329, 2**31 - 1])
ext_keys = st.sampled_from(["topic", "queueId", "queueOffset", "consumerGroup", "sysFlag", "commitOffset",
                            "maxMsgNums", "suspendTimeoutMillis", "batch", "offset", "group", "properties",
                            "timestamp", "delayLevel", "subscription"]) | st.text(max_size=6)
headers = st.fixed_dictionaries(
    {"code": known_codes | json_values, "opaque": st.integers(0, 2**31 - 1) | json_values},
    optional={"flag": st.integers(0, 3) | json_values, "extFields": st.dictionaries(ext_keys, json_values, max_size=6)
              | json_values, "remark": json_values, "language": json_values, "version": json_values},
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    with ServerThread(Path(tmp_path_factory.mktemp("fuzz"))) as running:
        yield running


def exchange(addr: tuple[str, int], data: bytes, read: bool = True) -> None:
    """Send ``data``, half-close, and drain whatever comes back until the server is done with us."""
    with socket.create_connection(addr, timeout=SOCKET_TIMEOUT_S) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            while read and sock.recv(65536):
                pass
        except OSError:
            pass  # the server may reset a connection it refused


def answered(addr: tuple[str, int], cmd: RemotingCommand) -> RemotingCommand:
    with socket.create_connection(addr, timeout=SOCKET_TIMEOUT_S) as sock:
        sock.sendall(encode_frame(cmd))
        decoder = FrameDecoder()
        while True:
            data = sock.recv(65536)
            assert data, "the server closed the connection instead of answering"
            for reply in decoder.feed(data):
                if reply.is_response and reply.opaque == cmd.opaque:
                    return reply


def assert_serving(server: ServerThread) -> None:
    route = answered(server.namesrv_addr, RemotingCommand(int(RequestCode.GET_ROUTEINFO_BY_TOPIC), opaque=41,
                                                          ext_fields={"topic": "Fuzzed"}))
    assert route.code == ResponseCode.SUCCESS
    offset = answered(server.broker_addr, RemotingCommand(int(RequestCode.GET_MAX_OFFSET), opaque=42,
                                                          ext_fields={"topic": "Fuzzed", "queueId": "0"}))
    assert offset.code == ResponseCode.SUCCESS


def frame_with(header: object, body: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack(">II", 4 + len(raw) + len(body), len(raw)) + raw + body


@pytest.mark.req("REMOTING-3")
@given(data=st.binary(max_size=300), to_broker=st.booleans())
def test_random_bytes_leave_the_servers_serving(server: ServerThread, data: bytes, to_broker: bool) -> None:
    exchange(server.broker_addr if to_broker else server.namesrv_addr, data)
    assert_serving(server)


@pytest.mark.req("REMOTING-3")
@given(code=known_codes, cut=st.integers(0, 200), body=st.binary(max_size=40))
def test_truncated_frames_leave_the_servers_serving(server: ServerThread, code: int, cut: int, body: bytes) -> None:
    frame = encode_frame(RemotingCommand(code, opaque=7, ext_fields={"topic": "Fuzzed", "queueId": "0"}, body=body))
    exchange(server.broker_addr, frame[:min(cut, len(frame) - 1)])
    assert_serving(server)


@pytest.mark.req("REMOTING-3", "REMOTING-4")
@given(header=headers, body=st.binary(max_size=120), to_broker=st.booleans())
def test_random_headers_get_an_answer_or_a_close_never_a_crash(
    server: ServerThread, header: dict, body: bytes, to_broker: bool
) -> None:
    exchange(server.broker_addr if to_broker else server.namesrv_addr, frame_with(header, body))
    assert_serving(server)


@pytest.mark.req("REMOTING-3")
@pytest.mark.parametrize("length", [MAX_FRAME_BYTES + 1, 2**32 - 1, 0, 3])
def test_oversized_and_undersized_length_fields_close_the_connection(server: ServerThread, length: int) -> None:
    with socket.create_connection(server.broker_addr, timeout=SOCKET_TIMEOUT_S) as sock:
        sock.sendall(struct.pack(">I", length) + b"\0" * 16)
        assert sock.recv(65536) == b""  # closed without an answer: the frame boundary is lost
    assert_serving(server)
