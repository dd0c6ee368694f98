"""Round-trips and refusals of the remoting codec (frame, command header, message layouts)."""

from __future__ import annotations

import contextlib
import json
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.net.remoting.command import RemotingCommand, RequestCode
from reference.net.remoting.frame import MAX_FRAME_BYTES, FrameDecoder, FrameError, encode_frame
from reference.net.remoting.message_codec import (
    MESSAGE_MAGIC_V1,
    RECORD_FIXED_BYTES,
    BatchEntry,
    CodecError,
    body_crc,
    decode_batch_body,
    decode_properties,
    decode_records,
    encode_batch_body,
    encode_properties,
    encode_stored_record,
    inflate_body,
)
from reference.rules.codes import ResponseCode
from reference.store.message import StoredMessage, offset_msg_id, store_host_bytes

text = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=20)
prop_names = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1,
                     max_size=12)
properties = st.dictionaries(prop_names, text, max_size=6)
int32 = st.integers(-(2**31), 2**31 - 1)
ext_values = st.one_of(text, st.integers(-(2**40), 2**40), st.booleans())

commands = st.builds(
    RemotingCommand,
    code=int32, opaque=int32, flag=st.integers(0, 3), language=st.sampled_from(["CPP", "JAVA"]),
    version=st.integers(0, 500), remark=st.none() | text, ext_fields=st.dictionaries(text, text, max_size=5),
    body=st.binary(max_size=64),
)


@pytest.mark.req("REMOTING-1")
@given(st.lists(commands, max_size=5), st.integers(1, 7))
def test_frames_round_trip_whatever_the_chunking(cmds: list[RemotingCommand], chunk: int) -> None:
    stream = b"".join(encode_frame(c) for c in cmds)
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    for i in range(0, len(stream), chunk):
        out += decoder.feed(stream[i:i + chunk])
    assert out == cmds
    assert decoder.buffered == 0


@pytest.mark.req("REMOTING-1")
def test_frame_layout_is_length_then_json_header_with_serialize_type_zero() -> None:
    frame = encode_frame(RemotingCommand(105, opaque=7, ext_fields={"topic": "T"}, body=b"xy"))
    (length, word) = struct.unpack_from(">II", frame)
    assert length == len(frame) - 4
    assert word >> 24 == 0
    header = json.loads(frame[8:8 + (word & 0xFFFFFF)])
    assert header["code"] == 105 and header["opaque"] == 7 and header["extFields"] == {"topic": "T"}
    assert frame.endswith(b"xy")


@pytest.mark.req("REMOTING-2")
@given(st.dictionaries(text, ext_values, max_size=6), int32)
def test_request_ext_fields_of_any_json_type_decode_to_strings_and_responses_write_strings(
    ext: dict[str, object], opaque: int,
) -> None:
    header = json.dumps({"code": 11, "opaque": opaque, "flag": 0, "extFields": ext}).encode()
    frame = struct.pack(">II", 4 + len(header), len(header)) + header
    (cmd,) = FrameDecoder().feed(frame)
    assert all(isinstance(v, str) for v in cmd.ext_fields.values())
    for key, value in ext.items():
        expected = ("true" if value else "false") if isinstance(value, bool) else str(value)
        assert cmd.ext_fields[key] == expected
    response = cmd.make_response(ResponseCode.PULL_NOT_FOUND, ext_fields={"nextBeginOffset": 5, "minOffset": 0})
    wire = json.loads(encode_frame(response)[8:])
    assert wire["flag"] & 1 and wire["opaque"] == opaque
    assert wire["extFields"] == {"nextBeginOffset": "5", "minOffset": "0"}


@pytest.mark.req("REMOTING-3")
@pytest.mark.parametrize(
    "frame, reason",
    [
        (struct.pack(">I", MAX_FRAME_BYTES + 1), "exceeds the maximum"),
        (struct.pack(">I", 2) + b"\0\0", "shorter than"),
        (struct.pack(">II", 4, 1 << 24), "serialize type 1"),
        (struct.pack(">II", 8, 50) + b"{}{}", "header length 50"),
        (struct.pack(">II", 6, 2) + b"[]", "not a JSON object"),
        (struct.pack(">II", 6, 2) + b"\xff\xfe", "bad JSON header"),
        (struct.pack(">II", 17, 12) + b'{"code":"a"}x', "'code' must be an integer"),
    ],
)
def test_malformed_frames_raise_frame_error(frame: bytes, reason: str) -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError, match=reason):
        decoder.feed(frame)
    with pytest.raises(FrameError, match="already failed"):
        decoder.feed(b"")


@pytest.mark.req("REMOTING-3")
def test_frames_decoded_before_a_bad_one_are_kept_on_the_error() -> None:
    good = encode_frame(RemotingCommand(int(RequestCode.HEART_BEAT), opaque=1))
    with pytest.raises(FrameError) as info:
        FrameDecoder().feed(good + struct.pack(">I", MAX_FRAME_BYTES + 1))
    assert [c.opaque for c in info.value.commands] == [1]


@given(properties)
def test_properties_round_trip(props: dict[str, str]) -> None:
    encoded = encode_properties(props)
    assert encoded == "" or encoded.endswith("\x02")
    assert decode_properties(encoded) == props


def test_property_pieces_without_exactly_two_parts_are_dropped_as_the_client_does() -> None:
    assert decode_properties("A\x011\x02B\x02C\x01x\x01y\x02D\x01\x02") == {"A": "1", "D": ""}


def _stored(draw_props: dict[str, str], body: bytes, tags: str | None, keys: str | None, queue_offset: int,
            phy: int) -> StoredMessage:
    return StoredMessage(
        topic="TopicTest", queue_id=3, queue_offset=queue_offset, commit_log_offset=phy, size=0, body=body,
        tags=tags, keys=keys, properties=draw_props, store_timestamp=1_700_000_000_123,
        born_timestamp=1_700_000_000_001, reconsume_times=2, msg_id="", unique_id="",
    )


@given(
    st.lists(st.tuples(properties, st.binary(max_size=100), st.none() | st.just("TagA"),
                       st.none() | st.just("k1 k2")), max_size=4),
    st.integers(0, 2**40),
)
def test_stored_records_round_trip_field_by_field(items: list, first_offset: int) -> None:
    host = store_host_bytes(("127.0.0.1", 20911))
    msgs = [_stored({k: v for k, v in p.items() if k not in ("TAGS", "KEYS")}, b, t, k, first_offset + i, 1000 * i)
            for i, (p, b, t, k) in enumerate(items)]
    data = b"".join(encode_stored_record(m, host, flag=5) for m in msgs)
    decoded = decode_records(data)
    assert len(decoded) == len(msgs)
    for m, d in zip(msgs, decoded, strict=True):
        assert d.magic == MESSAGE_MAGIC_V1 and d.body_crc == body_crc(m.body) and d.flag == 5
        assert (d.topic, d.queue_id, d.queue_offset, d.commit_log_offset, d.body) == (
            m.topic, m.queue_id, m.queue_offset, m.commit_log_offset, m.body)
        assert (d.born_timestamp, d.store_timestamp, d.reconsume_times) == (
            m.born_timestamp, m.store_timestamp, m.reconsume_times)
        assert d.store_host == host == d.born_host and d.sys_flag == 0 and d.prepared_transaction_offset == 0
        assert d.tags == m.tags and d.keys == m.keys
        assert {k: v for k, v in d.properties.items() if k not in ("TAGS", "KEYS")} == dict(m.properties)
        assert d.offset_msg_id == offset_msg_id(host, m.commit_log_offset)


def test_record_layout_is_exactly_the_v1_ipv4_layout() -> None:
    host = store_host_bytes(("127.0.0.1", 20911))
    record = encode_stored_record(_stored({}, b"hello", None, None, 7, 0x1AF), host)
    assert len(record) == RECORD_FIXED_BYTES + 5 + len("TopicTest") == 91 + 14
    assert struct.unpack_from(">iI", record) == (len(record), 0xDAA320A7)
    assert struct.unpack_from(">q", record, 20) == (7,)  # QUEUEOFFSET
    assert struct.unpack_from(">q", record, 28) == (0x1AF,)  # PHYSICALOFFSET
    assert record[64:72] == host  # STOREHOST
    assert struct.unpack_from(">i", record, 84) == (5,) and record[88:93] == b"hello"
    assert record[93] == len("TopicTest")
    assert decode_records(record)[0].offset_msg_id == "7F000001000051AF00000000000001AF"


def test_records_refuse_long_topics_and_ipv6_flags() -> None:
    host = store_host_bytes(("127.0.0.1", 1))
    long_topic = StoredMessage("T" * 128, 0, 0, 0, 0, b"", None, None, {}, 0, 0, 0, "", "")
    with pytest.raises(CodecError, match="topic"):
        encode_stored_record(long_topic, host)
    with pytest.raises(CodecError, match="IPv6"):
        encode_stored_record(_stored({}, b"", None, None, 0, 0), host, sys_flag=0x10)


@given(st.binary(max_size=300))
def test_decode_records_never_raises_anything_but_codec_error(data: bytes) -> None:
    with contextlib.suppress(CodecError):
        decode_records(data)


@given(st.lists(st.builds(BatchEntry, body=st.binary(max_size=50), properties=properties,
                          flag=st.integers(0, 2**31 - 1)), max_size=5))
def test_batch_bodies_round_trip(entries: list[BatchEntry]) -> None:
    assert decode_batch_body(encode_batch_body(entries)) == entries


def test_batch_body_matches_the_observed_record() -> None:
    props = {"KEYS": "bk0", "TAGS": "TagC", "UNIQ_KEY": "0" * 32, "WAIT": "true"}
    data = encode_batch_body([BatchEntry(b"batch-0", props)])
    assert struct.unpack_from(">iiiii", data) == (20 + 7 + 2 + len(encode_properties(props)), 0, 0, 0, 7)


@given(st.binary(max_size=200))
def test_decode_batch_body_never_raises_anything_but_codec_error(data: bytes) -> None:
    with contextlib.suppress(CodecError):
        decode_batch_body(data)


def test_inflate_body_bounds_and_refusals() -> None:
    assert inflate_body(zlib.compress(b"x" * 5000, 5), 5000) == b"x" * 5000
    with pytest.raises(CodecError, match="inflates past"):
        inflate_body(zlib.compress(b"x" * 5001), 5000)
    with pytest.raises(CodecError, match="not a zlib"):
        inflate_body(b"nope", 10)
    with pytest.raises(CodecError, match="truncated"):
        inflate_body(zlib.compress(b"y" * 100)[:-3], 1000)
