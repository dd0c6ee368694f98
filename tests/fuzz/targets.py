"""What the fuzzers feed, and what each decoder promises to do with any input: its contract.

Each target takes bytes and either returns or raises one of its documented refusals; any other exception is
a crash, a call that does not return is a hang. The same functions run under atheris (``tests/fuzz/run.py``,
``tox -e fuzz``: a million executions each) and over every kept input in ``fixtures/fuzz/<target>/`` in the
test suite, so a crash found once stays a regression test.

* ``frame``: the remoting frame and command decoder (``FrameDecoder`` fed in arbitrary chunks):
  commands, or ``FrameError``.
* ``codec``: the message codec (stored records, batch bodies, properties, zlib bodies): values, or
  ``CodecError``.
* ``http``: every request model of the HTTP front, validating a JSON body: a model, or pydantic's
  ``ValidationError`` (which the front answers 422 with the field and the rule).
* ``record``: what ``mqtck record`` does with frames off the wire (the wire recorder, both directions, and
  the route rewriting): rows or counts, never an exception; a route body that does not parse is refused
  with ``ValueError``/``UnicodeDecodeError``/``AttributeError`` (the proxy passes it on unchanged).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from conformance.record.proxy import rewrite_route, route_brokers
from conformance.record.wire import Connection, WireRecorder
from reference.net.http import models
from reference.net.remoting.frame import FrameDecoder, FrameError
from reference.net.remoting.message_codec import (
    CodecError,
    decode_batch_body,
    decode_properties,
    decode_records,
    inflate_body,
)
from reference.trace import MemorySink, Trace

#: The largest body a fuzzed zlib stream may inflate to (a bomb is a refusal, not a hang).
MAX_INFLATE = 1 << 16
#: Every request body the HTTP front validates (the ``Strict`` models).
REQUEST_MODELS: tuple[type[BaseModel], ...] = tuple(
    m for m in vars(models).values()
    if isinstance(m, type) and issubclass(m, models.Strict) and m is not models.Strict
)


def frame(data: bytes) -> None:
    if not data:
        return
    decoder = FrameDecoder()
    cut = data[0] % 8 + 1  # feed in chunks of 1..8 bytes after the first byte: frames split anywhere
    try:
        for at in range(1, len(data), cut):
            decoder.feed(data[at:at + cut])
    except FrameError:
        pass


def codec(data: bytes) -> None:
    for decode in (decode_records, decode_batch_body):
        with contextlib.suppress(CodecError):
            decode(data)
    decode_properties(data.decode("utf-8", "replace"))
    with contextlib.suppress(CodecError):
        inflate_body(data, MAX_INFLATE)


def _document(model: type[BaseModel], data: bytes) -> dict[str, Any]:
    """A JSON object for ``model`` drawn from ``data``: its own field names (and an unknown one) with values of
    every JSON type, so validation goes past the JSON parser into the model's rules."""
    names = [*model.model_fields, "unknownField"]
    doc: dict[str, Any] = {}
    for at in range(0, len(data) - 1, 10):
        chunk = data[at + 2:at + 10]
        number = int.from_bytes(chunk, "big", signed=True)
        values = (None, bool(number & 1), number, number / 7, chunk.decode("utf-8", "replace"),
                  [number, chunk.hex()], {"topic": chunk.hex(), "queueId": number})
        doc[names[data[at] % len(names)]] = values[data[at + 1] % len(values)]
    return doc


def http(data: bytes) -> None:
    if len(data) < 2:
        return
    model = REQUEST_MODELS[data[0] % len(REQUEST_MODELS)]
    if data[1] & 1:  # raw bytes: the JSON parser's refusals
        with contextlib.suppress(ValidationError):
            model.model_validate_json(data[2:])
        return
    with contextlib.suppress(ValidationError):
        model.model_validate_json(json.dumps(_document(model, data[2:])))


def record(data: bytes) -> None:
    if not data:
        return
    recorder = WireRecorder(Trace(MemorySink(), "fuzz"))
    conn = Connection("127.0.0.1:1", "broker-a" if data[0] & 1 else None)
    split = data[0] % max(1, len(data))
    for direction, chunk in ((recorder.from_client, data[1:split]), (recorder.from_server, data[split:])):
        decoder = FrameDecoder()
        try:
            commands = decoder.feed(chunk)
        except FrameError as exc:
            commands = exc.commands
            direction(conn, None)
        for cmd in commands:
            direction(conn, cmd)
    try:
        raw = len(data).to_bytes(4, "big") + b"\x00\x00\x00\x00" + data  # a frame with an empty header
        fronts = {address: "127.0.0.1:2" for address, _ in route_brokers(raw)}
        rewrite_route(raw, fronts)
    except (ValueError, UnicodeDecodeError, AttributeError, TypeError, RecursionError):
        pass


TARGETS: dict[str, Callable[[bytes], None]] = {"frame": frame, "codec": codec, "http": http, "record": record}


def seeds() -> dict[str, list[bytes]]:
    """A few well-formed inputs per target, so the fuzzers start from the shapes the decoders accept."""
    from reference.net.remoting.command import RemotingCommand
    from reference.net.remoting.frame import encode_frame
    from reference.net.remoting.message_codec import BatchEntry, encode_batch_body, encode_properties

    pull = RemotingCommand(11, opaque=7, ext_fields={
        "consumerGroup": "G", "topic": "T", "queueId": "0", "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "3",
        "commitOffset": "0", "suspendTimeoutMillis": "15000", "subscription": "*", "subVersion": "0"})
    heartbeat = RemotingCommand(34, opaque=8, body=json.dumps({"clientID": "c1", "consumerDataSet": [{
        "groupName": "G", "messageModel": "CLUSTERING", "subscriptionDataSet": [{"topic": "T", "subString": "*"}]}]
    }).encode())
    answer = RemotingCommand(0, opaque=7, flag=1, ext_fields={
        "nextBeginOffset": "1", "minOffset": "0", "maxOffset": "1"})
    batch = encode_batch_body([BatchEntry(b"m0", {"TAGS": "A"}), BatchEntry(b"m1", {})])
    route = b'{"brokerDatas":[{"brokerName":"broker-a","brokerAddrs":{0:"127.0.0.1:10911"}}],"queueDatas":[]}'
    return {
        "frame": [encode_frame(pull), encode_frame(heartbeat) + encode_frame(answer)],
        "codec": [batch, encode_properties({"TAGS": "A", "UNIQ_KEY": "u"}).encode(), b"x\x9c\x03\x00\x00\x00\x00\x01"],
        "http": [b"\x00\x01" + json.dumps({"topic": "T", "queues": 4}).encode(), b"\x03\x01{}",
                 b"\x02\x00" + bytes(40)],
        "record": [b"\x03" + encode_frame(pull) + encode_frame(answer), b"\x01" + encode_frame(heartbeat), route],
    }
