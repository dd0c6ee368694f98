"""STORE, QOFF, OFFSET, CGRP and LPOLL requirements a broker shows through the Target interface in real time.

Each test claims only what a correct Apache RocketMQ broker (4.9.7, 5.x) shows over the wire as well as the
reference does in-process: how tags are matched (by Java hash code), what a send's offset message id holds,
where a new group's offset query starts, how many messages one pull returns at most, how far a filtered pull
that finds nothing moves, that a closed channel leaves its group. Apache builds the consume queue after a send is
acknowledged, so tests that pull right after sending wait until the queue's max offset shows the sends.
"""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from conformance.suite.support import BIG_BODY, IN_MEMORY_BIG, IN_MEMORY_COUNT, batch_queues
from conformance.targets import (
    ChannelCloseTarget,
    KillRestartTarget,
    StoreLayoutTarget,
    Target,
    TargetError,
    WireTarget,
)
from conformance.targets.patience import PATIENCE_S, visible
from reference.broker.protocol import PullSysFlag
from reference.net.remoting.message_codec import decode_records

#: CGRP-6: slack beyond channelExpiredTimeout and two housekeeping scans before a silent channel must be gone.
EXPIRY_SLACK_S = 5.0
#: OFFSET-12: one pull scans at most max(16000, maxMsgNums x 20) bytes of 20-byte consume-queue units.
MAX_FILTER_BYTES, CQ_UNIT_BYTES = 16_000, 20
#: Tags whose Java String.hashCode() is the same (2112): a broker filtering by hash code cannot tell them apart.
COLLIDING_TAGS = ("Aa", "BB")


# -- STORE ------------------------------------------------------------------------------------------------
@pytest.mark.req("STORE-2")
@pytest.mark.needs("pull")
def test_tag_subscriptions_are_matched(target: Target) -> None:
    """A subscription to one tag gets the messages with that tag, and none with another tag or none."""
    target.create_topic("ST2M", 1)
    for tag in ("A", "C", None, "A"):
        target.send("ST2M", 0, f"tag {tag}".encode(), tag)
    visible(target, "ST2M", 0, 4)
    got = target.start_pull("G", "ST2M", 0, 0, expression="A").result()
    assert got.status == "FOUND" and [m.tags for m in got.messages] == ["A", "A"]


@pytest.mark.req("STORE-25")
@pytest.mark.needs("pull")
def test_tag_subscriptions_are_matched_by_java_hash_code(target: Target) -> None:
    """"Aa" and "BB" share a Java hash code: the broker answers a subscription to one with both (the client
    re-checks the string); an untagged message (hash 0) and another tag are not matched."""
    target.create_topic("ST2", 1)
    for tag in (*COLLIDING_TAGS, "C", None):
        target.send("ST2", 0, f"tag {tag}".encode(), tag)
    visible(target, "ST2", 0, 4)
    got = target.start_pull("G", "ST2", 0, 0, expression="Aa").result()
    assert got.status == "FOUND" and [m.tags for m in got.messages] == list(COLLIDING_TAGS), (
        "the broker matches by hash code: 'BB' collides with 'Aa' and must be returned too"
    )
    everything = target.start_pull("G", "ST2", 0, 0, expression="*").result()
    assert [m.tags for m in everything.messages] == [*COLLIDING_TAGS, "C", None]


@pytest.mark.req("STORE-3")
@pytest.mark.needs("pull", "remoting_wire")
def test_offset_message_id_is_store_host_port_and_commit_log_offset(target: WireTarget) -> None:
    """The send's msgId is 32 upper-case hex digits: the store host's IPv4 address, its port, the commit-log
    offset; the pulled record's store host and PHYSICALOFFSET give the same id."""
    from reference.net.remoting.client import RemotingClient
    from reference.net.remoting.command import RequestCode
    from reference.net.remoting.message_codec import encode_properties
    from reference.rules.codes import ResponseCode

    target.create_topic("ST3", 1)
    topic = target.namespaced("ST3")
    client = RemotingClient(target.broker_addr)
    try:
        ids = []
        for i in range(3):
            r = client.invoke(RequestCode.SEND_MESSAGE, {
                "producerGroup": "mqtck-wire", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
                "queueId": 0, "sysFlag": 0, "bornTimestamp": str(int(time.time() * 1000)), "flag": 0,
                "properties": encode_properties({"UNIQ_KEY": f"{i:032X}", "WAIT": "true"}), "reconsumeTimes": "0",
                "unitMode": "false", "batch": "false",
            }, b"body %d" % i, timeout_s=30)
            assert r.code == ResponseCode.SUCCESS, (r.code, r.remark)
            ids.append(r.ext_fields.get("msgId", ""))
        visible(target, "ST3", 0, 3)
        pulled = client.invoke(RequestCode.PULL_MESSAGE, {
            "consumerGroup": target.namespaced("G"), "topic": topic, "queueId": 0, "queueOffset": "0",
            "maxMsgNums": 32, "sysFlag": int(PullSysFlag.SUBSCRIPTION), "commitOffset": "0",
            "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
        }, timeout_s=30)
        records = decode_records(pulled.body)
    finally:
        client.close()
    host, port = target.broker_addr.rsplit(":", 1)
    prefix = "".join(f"{int(x):02X}" for x in host.split(".")) + f"{int(port):08X}"
    for msg_id, record in zip(ids, records, strict=True):
        assert len(msg_id) == 32 and msg_id == msg_id.upper(), f"offset msgId {msg_id!r}: 32 upper-case hex digits"
        assert msg_id.startswith(prefix), f"offset msgId {msg_id!r} does not start with the store host {prefix}"
        assert int(msg_id[16:], 16) == record.commit_log_offset and msg_id == record.offset_msg_id


# -- QOFF ---------------------------------------------------------------------------------------------------
@pytest.mark.req("QOFF-12")
@pytest.mark.needs("query_offset")
def test_a_new_group_starts_at_zero_on_a_hot_queue_from_zero(target: Target) -> None:
    """No committed offset, min offset 0, and the message at 0 in memory (a few fresh messages): 0."""
    target.create_topic("QT", 1)
    assert target.query_offset("NewG", "QT", 0) == ("SUCCESS", 0), "empty queue: nothing at 0 is in disk"
    for i in range(3):
        target.send("QT", 0, b"m%d" % i, "A")
    visible(target, "QT", 0, 3)
    assert target.query_offset("NewG", "QT", 0) == ("SUCCESS", 0), "min offset 0 and in memory: start at 0"


@pytest.mark.req("QOFF-1")
@pytest.mark.needs("query_offset", "commit_offset")
def test_a_commit_replaces_the_stored_offset_per_group_and_queue(target: Target) -> None:
    """The table holds one next offset per topic@group and queue: a commit replaces it (also with a smaller
    one), and neither another group nor another queue sees it."""
    target.create_topic("QT", 2)
    for i in range(10):
        target.send("QT", 0, b"m%d" % i, "A")
    visible(target, "QT", 0, 10)
    target.commit_offset("G", "QT", 0, 7)
    assert target.query_offset("G", "QT", 0) == ("SUCCESS", 7)
    target.commit_offset("G", "QT", 0, 3)
    assert target.query_offset("G", "QT", 0) == ("SUCCESS", 3), "a commit replaces the stored value"
    # Never committed: "none" in the table, which a query answers by QOFF-12/13 (0 from a queue whose first
    # message is hot, or QUERY_NOT_FOUND), never with another group's or queue's offset.
    none = {("SUCCESS", 0), ("QUERY_NOT_FOUND", -1)}
    assert target.query_offset("OtherG", "QT", 0) in none and target.query_offset("G", "QT", 1) in none


# -- OFFSET -------------------------------------------------------------------------------------------------
@pytest.mark.req("OFFSET-10.in-memory")
@pytest.mark.needs("pull")
def test_one_pull_of_in_memory_messages_returns_at_most_32_and_256_kib(target: Target) -> None:
    batch_queues(target, "OT")
    big = target.start_pull("G", "OT", 1, 0, max_nums=64).result()
    assert len(big.messages) == IN_MEMORY_BIG, (
        f"maxTransferBytesOnMessageInMemory: {len(big.messages)} bodies of {BIG_BODY} bytes in one pull")
    got = target.start_pull("G", "OT", 0, 0, max_nums=64).result()
    assert got.status == "FOUND" and len(got.messages) == IN_MEMORY_COUNT, (
        f"maxTransferCountOnMessageInMemory: {len(got.messages)} messages in one pull"
    )
    assert got.next_begin_offset == IN_MEMORY_COUNT
    one = target.start_pull("G", "OT", 0, 0, max_nums=1).result()
    assert len(one.messages) == 1, "the first message is always returned"


@pytest.mark.req("OFFSET-12")
@pytest.mark.needs("pull")
def test_a_filter_matching_nothing_advances_by_the_units_scanned(target: StoreLayoutTarget) -> None:
    """900 messages tagged A, a pull for tag B from 0: one pull scans max(16000, 32 x 20) bytes = 800 units (or
    up to the end of the consume-queue segment, when that comes first), answers NO_MATCHED_MESSAGE and moves
    nextBeginOffset past what it scanned; the next pull moves on from there."""
    target.create_topic("OT", 1)
    for i in range(900):
        target.send("OT", 0, b"a%d" % i, "A")
    visible(target, "OT", 0, 900)
    window = max(MAX_FILTER_BYTES, 32 * CQ_UNIT_BYTES) // CQ_UNIT_BYTES
    if "store_layout" in target.capabilities:
        window = min(window, target.store_layout().consumequeue_segment_units)
    first = target.start_pull("G", "OT", 0, 0, expression="B").result()
    assert first.status == "NO_MATCHED_MESSAGE" and not first.messages, (first.code, first.status)
    assert first.next_begin_offset == window, f"scanned {first.next_begin_offset} units, expected {window}"
    second = target.start_pull("G", "OT", 0, first.next_begin_offset, expression="B").result()
    assert second.status == "NO_MATCHED_MESSAGE" and second.next_begin_offset == min(900, 2 * window)


# -- CGRP ---------------------------------------------------------------------------------------------------
@pytest.mark.req("CGRP-6.closed")
@pytest.mark.needs("consumer_registry", "channel_close")
def test_a_closed_channel_leaves_its_group_and_the_others_are_told(target: ChannelCloseTarget) -> None:
    target.create_topic("RT", 1)
    target.heartbeat("c1", "client-1", "G", {"RT": "*"})
    target.heartbeat("c2", "client-2", "G", {"RT": "*"})
    assert target.consumer_ids("G") == ["client-1", "client-2"]
    before = len(target.notifications("c1"))
    target.close_conn("c2")
    deadline = time.monotonic() + PATIENCE_S
    while target.consumer_ids("G") != ["client-1"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert target.consumer_ids("G") == ["client-1"], "a closed channel must leave its group"
    assert target.notifications("c1")[before:] == ["G"], "the remaining member must be told"


#: A silent channel's expiry is waited for over the wire only when it comes within this long, unless the run is in
#: the slow profile (``--slow``): RocketMQ 4.x's fixed 120 s timeout plus a 10 s scan is then waited for too.
MAX_EXPIRY_WAIT_MS = 30_000
SLOW_EXPIRY_WAIT_MS = 200_000
#: How often the test keeps its live member's channel fresh.
KEEPALIVE_S = 0.5


def _expire_a_silent_member(target: WireTarget, slow: bool) -> tuple[float, list[str]]:
    """Two members of GX; one keeps sending heartbeats, the other falls silent. Returns once only the live one is
    left: (seconds the silent one lasted, the notifications the live one got meanwhile). Not applicable when the
    target does not say when channels expire, or when that is longer than the run may wait."""
    expiry = target.channel_expiry()  # remoting_wire: a remoting target
    if expiry is None:
        pytest.skip("not applicable: the target does not say when silent channels expire")
    timeout_ms, scan_ms = expiry
    bound_ms = timeout_ms + scan_ms
    cap_ms = SLOW_EXPIRY_WAIT_MS if slow else MAX_EXPIRY_WAIT_MS
    if bound_ms > cap_ms:
        pytest.skip(f"not applicable: a silent channel expires after up to {bound_ms / 1000:.0f} s here, longer than "
                    f"this run waits ({cap_ms / 1000:.0f} s); the slow profile (--slow) waits for it")
    target.create_topic("RX", 1)
    target.heartbeat("x1", "client-live", "GX", {"RX": "*"})
    target.heartbeat("x2", "client-silent", "GX", {"RX": "*"})
    before = len(target.notifications("x1"))
    silent_since = time.monotonic()
    deadline = silent_since + (bound_ms + 2 * scan_ms) / 1000 + EXPIRY_SLACK_S
    while target.consumer_ids("GX") != ["client-live"]:
        assert time.monotonic() < deadline, (
            f"a channel silent for {time.monotonic() - silent_since:.1f} s is still registered "
            f"(channelExpiredTimeout {timeout_ms} ms, scan every {scan_ms} ms): {target.consumer_ids('GX')}")
        time.sleep(KEEPALIVE_S)
        target.heartbeat("x1", "client-live", "GX", {"RX": "*"})
    lasted = time.monotonic() - silent_since
    assert lasted >= timeout_ms / 1000 - 0.5, "removed before channelExpiredTimeout"
    time.sleep(1.0)  # a notification sent with the removal has crossed loopback
    return lasted, target.notifications("x1")[before:]


@pytest.mark.req("CGRP-6.expiry")
@pytest.mark.needs("consumer_registry", "remoting_wire")
def test_a_silent_channel_expires_and_a_live_one_stays(target: WireTarget, slow: bool) -> None:
    """After channelExpiredTimeout and the next housekeeping scan only the live member is left."""
    _expire_a_silent_member(target, slow)


@pytest.mark.req("CGRP-8")
@pytest.mark.needs("consumer_registry", "remoting_wire")
def test_the_live_member_is_told_when_a_silent_one_expires(target: WireTarget, slow: bool) -> None:
    """The strict rule: the expiry notifies the group's remaining members, as a close does."""
    _, told = _expire_a_silent_member(target, slow)
    assert told == ["GX"], f"the live member got {told} when the silent one expired, not one notification of GX"


# -- LPOLL --------------------------------------------------------------------------------------------------
@pytest.mark.req("LPOLL-8")
@pytest.mark.needs("long_poll")
def test_non_matching_growth_never_answers_a_held_pull_early(target: Target) -> None:
    """A pull for tag A held 12 s; only B messages arrive: it must still be held past a periodic check (RocketMQ
    checks every 5 s), and a matching arrival then answers it."""
    target.create_topic("LT", 1)
    pending = target.start_pull("G", "LT", 0, 0, expression="A", suspend_ms=12_000)
    assert not pending.done()
    target.send("LT", 0, b"b", "B")
    target.advance(6_500)
    assert not pending.done(), "growth by non-matching messages answered the held pull before its hold time"
    target.send("LT", 0, b"a", "A")
    reply = pending.result()
    assert reply.status == "FOUND" and [m.tags for m in reply.messages] == ["A"]



# -- STORE: a kill while appending -------------------------------------------------------------------------
@pytest.mark.req("STORE-20", "STORE-7")
@pytest.mark.needs("kill_restart", "pull")
def test_a_kill_while_appending_loses_no_acknowledged_message(target: KillRestartTarget) -> None:
    """A sender appends to two queues while the broker is killed (SIGKILL): after the restart every message whose
    send was acknowledged is read back at its queue offset with its bytes, each queue's offsets are contiguous
    from 0, and the next append takes the next offset. Sends in flight at the kill may or may not be there."""
    target.create_topic("KT", 2)
    acked: list[tuple[int, int, bytes]] = []
    stop = threading.Event()

    def append() -> None:
        i = 0
        while not stop.is_set():
            body = (f"k{i}:".encode() * (1 + i % 300))[: 40 + (i * 37) % 4_000]
            try:
                receipt = target.send("KT", i % 2, body, "A")
            except Exception:  # noqa: BLE001 - the broker went away mid-send: this one is not acknowledged
                return
            acked.append((receipt.queue_id, receipt.queue_offset, body))
            i += 1

    sender = threading.Thread(target=append, daemon=True)
    sender.start()
    time.sleep(1.5)
    target.restart(kill=True)
    stop.set()
    sender.join(timeout=30)
    assert len(acked) >= 10, f"only {len(acked)} sends were acknowledged before the kill"
    for queue_id in (0, 1):
        mine = sorted((o, b) for q, o, b in acked if q == queue_id)
        if not mine:
            continue
        visible(target, "KT", queue_id, mine[-1][0] + 1)
        lo, hi = target.min_max("KT", queue_id)
        read: dict[int, bytes] = {}
        offset = lo
        while offset < hi:
            reply = target.start_pull("G", "KT", queue_id, offset).result()
            assert reply.status == "FOUND" and reply.messages, f"queue {queue_id} offset {offset}: {reply.code}"
            for m in reply.messages:
                read[m.queue_offset] = m.body
            offset = reply.next_begin_offset
        assert lo == 0 and sorted(read) == list(range(hi)), f"queue {queue_id}: offsets not contiguous from 0"
        for queue_offset, body in mine:
            assert read.get(queue_offset) == body, f"acknowledged message {queue_id}@{queue_offset} lost or changed"
        assert target.send("KT", queue_id, b"after", "A").queue_offset == hi, "the next append takes the next offset"


# -- STORE: refused appends, segment boundaries -------------------------------------------------------------
#: STORE-9: maxMessageSize, RocketMQ's default (4 MiB).
MAX_MESSAGE_SIZE = 4 * 1024 * 1024


@pytest.mark.req("STORE-9")
@pytest.mark.needs("pull")
def test_appends_past_the_queues_or_over_max_message_size_are_refused(target: Target) -> None:
    target.create_topic("ST9", 2)
    target.send("ST9", 0, b"kept", "A")
    visible(target, "ST9", 0, 1)
    for queue_id, body in ((2, b"past the queues"), (0, b"x" * (MAX_MESSAGE_SIZE + 1))):
        with pytest.raises(TargetError):
            target.send("ST9", queue_id, body, "A")
    time.sleep(0.5)  # what a refused send might have written would show by now
    assert (target.min_max("ST9", 0), target.min_max("ST9", 1)) == ((0, 1), (0, 0)), "a refused send wrote"


@pytest.mark.req("STORE-21")
@pytest.mark.needs("pull")
def test_malformed_appends_are_refused_naming_the_field(target: Target) -> None:
    target.create_topic("ST9", 1)
    for topic, tags, field in (("ST9", "a b", "tags"), ("ST9", "a||b", "tags"), ("ST9", "t" * 256, "tags"),
                               ("NoSuchTopic", "A", "topic")):
        with pytest.raises(TargetError) as err:
            target.send(topic, 0, b"bad", tags)
        assert err.value.field == field, (topic, tags, err.value)
    assert target.min_max("ST9", 0) == (0, 0), "a refused send wrote"


@pytest.mark.req("STORE-4")
@pytest.mark.needs("pull", "store_layout", "remoting_wire")
def test_no_record_spans_two_commit_log_segments(target: StoreLayoutTarget) -> None:
    """Records of an eighth of a segment (less the header), past two segment boundaries: each lies within one
    segment file, and the one that did not fit starts the next segment (the rest was left blank)."""
    segment = target.store_layout().commitlog_segment_bytes
    if segment > 16 << 20:
        pytest.skip(f"not applicable: {segment}-byte commit-log segments are too large to fill in a test")
    target.create_topic("ST4", 1)
    count = 20
    for i in range(count):
        target.send("ST4", 0, bytes([65 + i % 26]) * (segment // 8 - 300), "A")
    visible(target, "ST4", 0, count)
    starts: list[int | None] = []
    offset = 0
    while offset < count:
        reply = target.start_pull("G", "ST4", 0, offset).result()
        assert reply.status == "FOUND", (offset, reply.code)
        starts += [m.commit_log_offset for m in reply.messages]
        offset = reply.next_begin_offset
    offsets = [s for s in starts if s is not None]
    assert offsets == starts and len(starts) == count
    boundaries = 0
    for start, following in itertools.pairwise(offsets):
        if following // segment != start // segment:  # the next record is in a later segment
            assert following % segment == 0, f"a record at {following} does not start its segment"
            boundaries += 1
    assert boundaries >= 2, f"only {boundaries} segment boundaries crossed: the test did not test"
