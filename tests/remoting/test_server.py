"""The remoting name server and broker, driven over loopback TCP with the project's own codec.

Each test runs the real asyncio servers on its own loop with a simulated broker clock: waits on the wire
are bounded by ``wire.TIMEOUT_S`` but nothing here depends on how long anything takes.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from reference.broker.protocol import PullSysFlag
from reference.clock import SimClock
from reference.net.remoting.command import ONEWAY_FLAG, RequestCode
from reference.net.remoting.message_codec import (
    BatchEntry,
    decode_records,
    encode_batch_body,
    encode_properties,
)
from reference.net.remoting.server import RemotingServers
from reference.rules.codes import ResponseCode
from reference.store.message import offset_msg_id, store_host_bytes
from reference.trace import MemorySink
from tests.remoting.conftest import serving
from tests.remoting.wire import TIMEOUT_S, WireClient

Scenario = Callable[[RemotingServers, WireClient, WireClient], Awaitable[None]]


def run(tmp_path: Path, scenario: Scenario, clock: SimClock | None = None, sink: MemorySink | None = None,
        **store: object) -> None:
    async def main() -> None:
        async with serving(tmp_path, clock, sink, **store) as servers:
            ns = await WireClient.connect(servers.namesrv_addr)
            br = await WireClient.connect(servers.broker_addr)
            try:
                await scenario(servers, ns, br)
            finally:
                await ns.close()
                await br.close()

    asyncio.run(main())


@pytest.mark.req("REMOTING-5")
def test_route_lookup_auto_creates_topics_with_the_broker_address(tmp_path: Path) -> None:
    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        routes = {}
        for topic in ("TopicA", "%RETRY%G1", "TBW102"):
            r = await ns.route(topic)
            assert r.code == ResponseCode.SUCCESS and r.is_response
            routes[topic] = json.loads(r.body)
        a = routes["TopicA"]
        assert a["queueDatas"] == [{"brokerName": "broker-a", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6,
                                    "topicSysFlag": 0}]
        host, port = servers.broker_addr
        assert a["brokerDatas"][0]["brokerAddrs"] == {"0": f"{host}:{port}"}
        assert a["orderTopicConf"] is None
        assert routes["%RETRY%G1"]["queueDatas"][0]["readQueueNums"] == 1
        assert servers.broker.store.topics()["TopicA"] == 4
        bad = await ns.route("no/such topic")
        assert bad.code == ResponseCode.TOPIC_NOT_EXIST and bad.remark

    run(tmp_path, scenario)


def go_client_broker_addrs(body: bytes) -> dict[int, str]:
    """How the Go client (rocketmq-client-go v2 internal/route.go, TopicRouteData.decode) reads ``brokerAddrs``:
    the object's text split at ``,`` then at the first ``:``, with the quotes removed and nothing trimmed."""
    text = body.decode()
    start = text.index('"brokerAddrs":') + len('"brokerAddrs":')
    inner = text[start:text.index("}", start) + 1][1:-1]
    addrs = {}
    for part in inner.split(","):
        i = part.index(":")
        addrs[int(part[:i].replace('"', ""))] = part[i + 1:].replace('"', "")
    return addrs


@pytest.mark.req("REMOTING-5")
def test_bodies_are_compact_json_as_fastjson_writes_them(tmp_path: Path) -> None:
    """Found by the Go client (session 16): with a space after ``:`` it read the broker's address as
    " 127.0.0.1:PORT" and never connected. Every JSON body is compact, as RocketMQ's fastjson writes it."""
    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        r = await ns.route("TopicGo")
        assert b": " not in r.body and b", " not in r.body
        host, port = servers.broker_addr
        assert go_client_broker_addrs(r.body) == {0: f"{host}:{port}"}

    run(tmp_path, scenario)


@pytest.mark.req("REMOTING-1", "REMOTING-2", "REMOTING-6")
def test_send_then_pull_returns_v1_records_with_string_headers(tmp_path: Path) -> None:
    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        props = encode_properties({"KEYS": "k1 k2", "TAGS": "TagA", "UNIQ_KEY": "U1", "WAIT": "true", "my": "p"})
        sent = await br.send("T", 2, b"hello", props)
        assert sent.code == ResponseCode.SUCCESS
        assert sent.ext_fields == {"msgId": offset_msg_id(store_host_bytes(servers.broker_addr), 0),
                                   "queueId": "2", "queueOffset": "0"}
        await br.send("T", 2, b"world")
        response = await br.pull("G", "T", 2, 0, sys_flag=PullSysFlag.SUBSCRIPTION)
        assert response.code == ResponseCode.SUCCESS
        assert response.ext_fields == {"nextBeginOffset": "2", "minOffset": "0", "maxOffset": "2",
                                       "suggestWhichBrokerId": "0"}
        first, second = decode_records(response.body)
        assert (first.body, first.queue_id, first.queue_offset, first.tags, first.keys) == (
            b"hello", 2, 0, "TagA", "k1 k2")
        assert first.properties["UNIQ_KEY"] == "U1" and first.properties["my"] == "p"
        assert first.msg_id == "U1" and second.queue_offset == 1
        assert first.commit_log_offset != second.commit_log_offset
        assert first.store_host == store_host_bytes(servers.broker_addr)
        not_found = await br.pull("G", "T", 2, 2, sys_flag=PullSysFlag.SUBSCRIPTION)
        assert not_found.code == ResponseCode.PULL_NOT_FOUND and not not_found.body
        assert not_found.ext_fields["nextBeginOffset"] == "2"

    run(tmp_path, scenario)


@pytest.mark.req("REMOTING-8")
def test_batch_and_compressed_sends_store_one_message_per_record(tmp_path: Path) -> None:
    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        entries = [BatchEntry(f"batch-{i}".encode(), {"TAGS": "TagC", "UNIQ_KEY": f"B{i}", "WAIT": "true"})
                   for i in range(3)]
        r = await br.send("T", 1, encode_batch_body(entries), encode_properties({"WAIT": "true"}), batch="1")
        assert r.code == ResponseCode.SUCCESS and r.ext_fields["queueOffset"] == "0"
        assert len(r.ext_fields["msgId"].split(",")) == 3
        big = b"x" * 5000
        z = await br.send("T", 1, zlib.compress(big, 5), sysFlag=1)
        assert z.ext_fields["queueOffset"] == "3"
        records = decode_records((await br.pull("G", "T", 1, 0, sys_flag=PullSysFlag.SUBSCRIPTION)).body)
        assert [(m.queue_offset, m.body, m.msg_id) for m in records[:3]] == [
            (i, f"batch-{i}".encode(), f"B{i}") for i in range(3)]
        assert records[3].body == big and records[3].sys_flag == 0
        refused = await br.send("T", 1, b"not zlib", sysFlag=1)
        assert refused.code == ResponseCode.MESSAGE_ILLEGAL and "zlib" in refused.remark

    run(tmp_path, scenario)


def test_a_java_batch_with_the_v2_header_is_stored(tmp_path: Path) -> None:
    """SEND_BATCH_MESSAGE as the Java client sends it (``send(Collection)``): the one-letter V2 header, ``b`` the
    topic, ``m`` the batch flag, as RocketMQ's broker decodes code 320 (the C++ client's full names work too)."""

    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        entries = [BatchEntry(f"java-{i}".encode(), {"UNIQ_KEY": f"J{i}"}) for i in range(2)]
        fields = {"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "2", "f": "0", "g": "1", "h": "0",
                  "i": encode_properties({"WAIT": "true"}), "j": "0", "k": "false", "m": "true"}
        r = await br.request(RequestCode.SEND_BATCH_MESSAGE, fields, encode_batch_body(entries))
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert r.ext_fields["queueId"] == "2" and len(r.ext_fields["msgId"].split(",")) == 2
        records = decode_records((await br.pull("G", "T", 2, 0, sys_flag=PullSysFlag.SUBSCRIPTION)).body)
        assert [m.body for m in records] == [b"java-0", b"java-1"]

    run(tmp_path, scenario)


@pytest.mark.req("REMOTING-7")
def test_suspended_pull_is_held_until_a_send_wakes_it(tmp_path: Path) -> None:
    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        held = br.pull("G", "T", 0, 0, sys_flag=PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION)
        other = await WireClient.connect(servers.broker_addr)
        # Another request on the same connection is answered while the pull is held.
        assert (await br.request(RequestCode.GET_MAX_OFFSET, {"topic": "T", "queueId": 0})).code == 0
        assert not held.done()
        await other.send("T", 0, b"wake")
        response = await asyncio.wait_for(held, TIMEOUT_S)
        assert response.code == ResponseCode.SUCCESS
        assert [m.body for m in decode_records(response.body)] == [b"wake"]
        await other.close()

    run(tmp_path, scenario)


@pytest.mark.req("REMOTING-7")
def test_suspended_pull_is_answered_not_found_when_its_suspend_time_runs_out(tmp_path: Path) -> None:
    clock = SimClock()

    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        await br.send("T", 0, b"one")
        held = br.pull("G", "T", 0, 1, sys_flag=PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION, suspend_ms=15_000)
        await br.request(RequestCode.GET_MIN_OFFSET, {"topic": "T", "queueId": 0})  # the pull has been read
        clock.advance(14_000)
        await br.request(RequestCode.GET_MIN_OFFSET, {"topic": "T", "queueId": 0})
        assert not held.done()
        clock.advance(6_000)  # past 15 s and the next 5 s hold check
        response = await asyncio.wait_for(held, TIMEOUT_S)
        assert response.code == ResponseCode.PULL_NOT_FOUND
        assert response.ext_fields["nextBeginOffset"] == "1"

    run(tmp_path, scenario, clock)


@pytest.mark.req("REMOTING-2")
def test_offsets_query_update_piggyback_min_max_and_timestamp(tmp_path: Path) -> None:
    clock = SimClock()

    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        for i in range(3):
            await br.send("T", 0, b"m%d" % i)
            clock.advance(1_000)
        q = {"consumerGroup": "G", "topic": "T", "queueId": 0}
        # A new group on a queue whose offset 0 is still there starts at "0" (the new-group rule, §5.5).
        fresh = await br.request(RequestCode.QUERY_CONSUMER_OFFSET, q)
        assert (fresh.code, fresh.ext_fields) == (ResponseCode.SUCCESS, {"offset": "0"})
        assert (await br.request(RequestCode.UPDATE_CONSUMER_OFFSET, {**q, "commitOffset": "2"})).code == 0
        assert (await br.request(RequestCode.QUERY_CONSUMER_OFFSET, q)).ext_fields == {"offset": "2"}
        # No suspend bit: answered, commit kept.
        await br.pull("G", "T", 0, 3, sys_flag=PullSysFlag.SUBSCRIPTION | PullSysFlag.COMMIT_OFFSET, commit=3)
        assert (await br.request(RequestCode.QUERY_CONSUMER_OFFSET, q)).ext_fields == {"offset": "3"}
        mq = {"topic": "T", "queueId": 0}
        assert (await br.request(RequestCode.GET_MAX_OFFSET, mq)).ext_fields == {"offset": "3"}
        assert (await br.request(RequestCode.GET_MIN_OFFSET, mq)).ext_fields == {"offset": "0"}
        t1 = clock.now_ms() - 2_000
        found = await br.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {**mq, "timestamp": t1})
        assert found.ext_fields == {"offset": "1"}
        bad = await br.request(RequestCode.GET_MAX_OFFSET, {"topic": "T", "queueId": 9})
        assert bad.code == ResponseCode.SYSTEM_ERROR and "queueId" in bad.remark

    run(tmp_path, scenario, clock)


@pytest.mark.req("REMOTING-6")
def test_pull_below_min_after_retention_is_offset_moved(tmp_path: Path) -> None:
    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        for _ in range(40):
            await br.send("T", 0, b"y" * 200)
        assert (await br.request(RequestCode.DELETE_EXPIRED_COMMITLOG)).code == ResponseCode.SUCCESS
        low = int((await br.request(RequestCode.GET_MIN_OFFSET, {"topic": "T", "queueId": 0})).ext_fields["offset"])
        assert low > 0
        moved = await br.pull("G", "T", 0, 0, sys_flag=PullSysFlag.SUBSCRIPTION)
        assert moved.code == ResponseCode.PULL_OFFSET_MOVED
        assert moved.ext_fields["nextBeginOffset"] == str(low)
        first = decode_records((await br.pull("G", "T", 0, low, sys_flag=PullSysFlag.SUBSCRIPTION)).body)[0]
        assert first.queue_offset == low

    run(tmp_path, scenario, commit_log_segment_bytes=4096, file_reserved_time_hours=0)


@pytest.mark.req("REMOTING-9", "REMOTING-11", "REMOTING-13")
def test_heartbeat_registers_and_members_are_notified_of_joins_and_closes(tmp_path: Path) -> None:
    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        topics = {"T": "*", "%RETRY%G": "*"}
        assert (await br.heartbeat("c1", "G", topics)).code == ResponseCode.SUCCESS
        ids = await br.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G"})
        assert json.loads(ids.body) == {"consumerIdList": ["c1"]}
        second = await WireClient.connect(servers.broker_addr)
        await second.heartbeat("c2", "G", topics)
        note = await asyncio.wait_for(br.notifications.get(), TIMEOUT_S)
        assert (note.code, note.flag & ONEWAY_FLAG, note.ext_fields) == (
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, ONEWAY_FLAG, {"consumerGroup": "G"})
        ids = await br.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G"})
        assert sorted(json.loads(ids.body)["consumerIdList"]) == ["c1", "c2"]
        await second.close()
        note = await asyncio.wait_for(br.notifications.get(), TIMEOUT_S)
        assert note.ext_fields == {"consumerGroup": "G"}
        ids = await br.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G"})
        assert json.loads(ids.body) == {"consumerIdList": ["c1"]}
        r = await br.request(RequestCode.UNREGISTER_CLIENT,
                             {"clientID": "c1", "producerGroup": "", "consumerGroup": "G"})
        assert r.code == ResponseCode.SUCCESS
        empty = await br.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G"})
        assert empty.code == ResponseCode.SYSTEM_ERROR and not empty.body

    run(tmp_path, scenario)


def test_cpp_heartbeat_body_with_integer_enums_and_trailing_newline(tmp_path: Path) -> None:
    body = (b'{"clientID":"8141-127.0.0.1@DEFAULT","consumerDataSet":[{"consumeFromWhere":0,"consumeType":1,'
            b'"groupName":"CG_TEST","messageModel":0,"subscriptionDataSet":[{"codeSet":[0,0],'
            b'"subString":"TagA || TagC","subVersion":"1795305782803","tagsSet":["TagA","TagC"],'
            b'"topic":"TopicTest"}]}],"producerDataSet":[{"groupName":"PG_TEST2"}]}\n')

    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        assert (await br.request(RequestCode.HEART_BEAT, body=body)).code == ResponseCode.SUCCESS
        sub = servers.broker.consumer_manager.find_subscription_data("CG_TEST", "TopicTest")
        assert sub is not None and sub.tags == frozenset({"TagA", "TagC"})
        bad = await br.request(RequestCode.HEART_BEAT, body=b"{not json")
        assert bad.code == ResponseCode.SYSTEM_ERROR and "body" in bad.remark

    run(tmp_path, scenario)


@pytest.mark.req("REMOTING-10")
def test_send_back_stores_a_retry_copy_found_by_physical_offset(tmp_path: Path) -> None:
    clock = SimClock()

    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        await ns.route("%RETRY%G")
        await br.send("T", 0, b"fail me", encode_properties({"UNIQ_KEY": "U9", "TAGS": "TagA"}))
        (original,) = decode_records((await br.pull("G", "T", 0, 0, sys_flag=PullSysFlag.SUBSCRIPTION)).body)
        r = await br.request(RequestCode.CONSUMER_SEND_MSG_BACK,
                             {"delayLevel": 0, "group": "G", "offset": original.commit_log_offset})
        assert r.code == ResponseCode.SUCCESS
        clock.advance(10_000)  # level 3 = 10 s for a first retry
        retry = await br.pull("G", "%RETRY%G", 0, 0, sys_flag=PullSysFlag.SUBSCRIPTION)
        (copy,) = decode_records(retry.body)
        assert (copy.body, copy.msg_id, copy.reconsume_times, copy.tags) == (b"fail me", "U9", 1, "TagA")
        assert copy.properties["RETRY_TOPIC"] == "T"
        missing = await br.request(RequestCode.CONSUMER_SEND_MSG_BACK, {"delayLevel": 0, "group": "G", "offset": 7})
        assert missing.code == ResponseCode.SYSTEM_ERROR

    run(tmp_path, scenario, clock)


@pytest.mark.req("REMOTING-12")
def test_queue_locks_for_orderly_consumers(tmp_path: Path) -> None:
    clock = SimClock()

    def body(client: str, *queues: int) -> bytes:
        return json.dumps({"clientId": client, "consumerGroup": "CG_ORD", "mqSet": [
            {"brokerName": "broker-a", "queueId": q, "topic": "T"} for q in queues]}).encode()

    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        def held(r: object) -> list[int]:
            return sorted(q["queueId"] for q in json.loads(r.body)["lockOKMQSet"])  # type: ignore[attr-defined]

        assert held(await br.request(RequestCode.LOCK_BATCH_MQ, body=body("a", 0, 1))) == [0, 1]
        assert held(await br.request(RequestCode.LOCK_BATCH_MQ, body=body("b", 1, 2))) == [2]
        assert held(await br.request(RequestCode.LOCK_BATCH_MQ, body=body("a", 1))) == [1]  # renewal
        await br.request(RequestCode.UNLOCK_BATCH_MQ, body=body("a", 1))
        assert held(await br.request(RequestCode.LOCK_BATCH_MQ, body=body("b", 1))) == [1]
        clock.advance(60_001)  # a's lock on queue 0 expired
        assert held(await br.request(RequestCode.LOCK_BATCH_MQ, body=body("b", 0))) == [0]

    run(tmp_path, scenario, clock)


@pytest.mark.req("REMOTING-4")
def test_unknown_request_codes_are_refused_and_the_connection_keeps_serving(tmp_path: Path) -> None:
    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        for client, code in ((br, 9999), (ns, RequestCode.PULL_MESSAGE), (br, RequestCode.GET_ROUTEINFO_BY_TOPIC)):
            r = await client.request(code)
            assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED and str(int(code)) in r.remark
        assert (await ns.route("T")).code == ResponseCode.SUCCESS
        missing = await br.request(RequestCode.PULL_MESSAGE, {"topic": "T"})
        assert missing.code == ResponseCode.SYSTEM_ERROR and "consumerGroup" in missing.remark

    run(tmp_path, scenario)


def test_the_broker_trace_records_sends_pulls_and_commits(tmp_path: Path) -> None:
    sink = MemorySink()

    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        await br.heartbeat("c1", "G", {"T": "*"})
        await br.send("T", 0, b"a", encode_properties({"UNIQ_KEY": "U1"}))
        await br.pull("G", "T", 0, 0, commit=0,
                      sys_flag=PullSysFlag.SUBSCRIPTION | PullSysFlag.COMMIT_OFFSET | PullSysFlag.SUSPEND)
        await br.request(RequestCode.UPDATE_CONSUMER_OFFSET,
                         {"consumerGroup": "G", "topic": "T", "queueId": 0, "commitOffset": 1})

    run(tmp_path, scenario, sink=sink)
    events = [row["event"] for row in sink.rows]
    for event in ("SUBSCRIBE", "SEND", "PULL_REQ", "PULL_RESP", "COMMIT"):
        assert event in events
    (send,) = [r for r in sink.rows if r["event"] == "SEND"]
    assert send["msg_id"] == "U1"
    assert {r["client_id"] for r in sink.rows if r["event"] in ("PULL_REQ", "COMMIT")} == {"c1"}
