"""Issue 41 part A on the remoting wire, in process on a simulated clock: END_TRANSACTION, the broker's
CHECK_TRANSACTION_STATE on the producer's own connection, a producer connection closed before its check, topic
perms in the route and on sends, and the refused read/write queue pair."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from reference.broker.protocol import PullSysFlag
from reference.clock import SimClock
from reference.net.remoting.command import RequestCode, loads_body
from reference.net.remoting.message_codec import decode_records, encode_properties
from reference.net.remoting.server import RemotingServers
from reference.rules.codes import ResponseCode
from tests.remoting.test_server import run
from tests.remoting.wire import WireClient

CHECK_ROUND_MS = 60_000


async def half(br: WireClient, body: bytes, group: str = "PG") -> tuple[int, int]:
    props = encode_properties({"TRAN_MSG": "true", "PGROUP": group, "UNIQ_KEY": body.hex()})
    sent = await br.send("T", 0, body, props, producerGroup=group, sysFlag=4)
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    return int(sent.ext_fields["msgId"][-16:], 16), int(sent.ext_fields["queueOffset"])


async def bodies(br: WireClient) -> list[bytes]:
    r = await br.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": "G", "topic": "T", "queueId": 0, "queueOffset": 0, "maxMsgNums": 32,
        "sysFlag": int(PullSysFlag.SUBSCRIPTION), "commitOffset": 0, "suspendTimeoutMillis": 0, "subscription": "*",
        "subVersion": "1"})
    return [m.body for m in decode_records(r.body)] if r.code == ResponseCode.SUCCESS else []


def end_fields(offsets: tuple[int, int], kind: int, group: str = "PG") -> dict[str, object]:
    return {"producerGroup": group, "commitLogOffset": offsets[0], "tranStateTableOffset": offsets[1],
            "commitOrRollback": kind, "fromTransactionCheck": "false"}


@pytest.mark.req("TXN-1", "TXN-2.checked")
def test_end_transaction_and_the_check_on_the_producers_connection(tmp_path: Path) -> None:
    clock = SimClock()

    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        beat = {"clientID": "p1", "consumerDataSet": [], "producerDataSet": [{"groupName": "PG"}]}
        assert (await br.request(RequestCode.HEART_BEAT, body=json.dumps(beat).encode())).code == ResponseCode.SUCCESS
        kept, dropped, unknown = await half(br, b"kept"), await half(br, b"dropped"), await half(br, b"unknown")
        assert await bodies(br) == []
        wrong = await br.request(RequestCode.END_TRANSACTION, end_fields(kept, 8, group="other"))
        assert (wrong.code, wrong.remark) == (ResponseCode.SYSTEM_ERROR, "The producer group wrong")
        assert (await br.request(RequestCode.END_TRANSACTION, end_fields(dropped, 12))).code == ResponseCode.SUCCESS
        assert (await br.request(RequestCode.END_TRANSACTION, end_fields(kept, 8))).code == ResponseCode.SUCCESS
        with pytest.raises(asyncio.TimeoutError):  # UNKNOWN is not answered, as upstream returns null
            await br.request(RequestCode.END_TRANSACTION, end_fields(unknown, 0), timeout=0.3)
        assert await bodies(br) == [b"kept"]
        clock.advance(CHECK_ROUND_MS)
        check = await asyncio.wait_for(br.notifications.get(), 5)
        assert check.code == RequestCode.CHECK_TRANSACTION_STATE and check.is_oneway
        assert (int(check.ext_fields["commitLogOffset"]), int(check.ext_fields["tranStateTableOffset"])) == unknown
        (record,) = decode_records(check.body)
        assert (record.topic, record.body, record.properties["PGROUP"]) == ("T", b"unknown", "PG")
        assert br.notifications.empty(), "only the unended half is checked"
        answer = {**end_fields(unknown, 8), "fromTransactionCheck": "true"}
        assert (await br.request(RequestCode.END_TRANSACTION, answer)).code == ResponseCode.SUCCESS
        assert await bodies(br) == [b"kept", b"unknown"]

    run(tmp_path, scenario, clock=clock)


@pytest.mark.req("TXN-2.max")
def test_a_half_whose_producer_left_is_not_checked_and_not_delivered(tmp_path: Path) -> None:
    clock = SimClock()

    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        producer = await WireClient.connect(servers.broker_addr)
        beat = {"clientID": "p1", "consumerDataSet": [], "producerDataSet": [{"groupName": "PG"}]}
        await producer.request(RequestCode.HEART_BEAT, body=json.dumps(beat).encode())
        await half(producer, b"orphan")
        await producer.close()
        await asyncio.sleep(0.1)
        clock.advance(CHECK_ROUND_MS * 20)
        assert await bodies(br) == []
        assert servers.broker.transactions.is_done(0), "discarded after transactionCheckMax rounds"

    run(tmp_path, scenario, clock=clock)


@pytest.mark.req("PERM-1", "PERM-2", "PERM-3")
def test_perm_in_the_route_refused_sends_and_the_refused_queue_pair(tmp_path: Path) -> None:
    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        def topic(read: int, write: int, perm: int | str) -> dict[str, object]:
            return {"topic": "T", "readQueueNums": read, "writeQueueNums": write, "perm": perm}

        assert (await br.request(RequestCode.UPDATE_AND_CREATE_TOPIC, topic(2, 2, 4))).code == ResponseCode.SUCCESS
        (queue,) = loads_body((await ns.route("T")).body)["queueDatas"]
        assert (queue["perm"], queue["readQueueNums"], queue["writeQueueNums"]) == (4, 2, 2)
        refused = await br.send("T", 0, b"x")
        assert (refused.code, refused.remark) == (
            ResponseCode.NO_PERMISSION, "topic: the topic[T] sending message is forbidden")
        pair = await br.request(RequestCode.UPDATE_AND_CREATE_TOPIC, topic(2, 4, 6))
        assert pair.code == ResponseCode.SYSTEM_ERROR and pair.remark.startswith(
            "writeQueueNums: must equal readQueueNums (2), got 4")
        bad = await br.request(RequestCode.UPDATE_AND_CREATE_TOPIC, topic(2, 2, 7))
        assert bad.code == ResponseCode.SYSTEM_ERROR and bad.remark.startswith("perm: must be one of [2, 4, 6]")
        (queue,) = loads_body((await ns.route("T")).body)["queueDatas"]
        assert (queue["perm"], queue["readQueueNums"]) == (4, 2), "a refused update changed the topic"
        assert (await br.request(RequestCode.UPDATE_AND_CREATE_TOPIC, topic(2, 2, 6))).code == ResponseCode.SUCCESS
        assert (await br.send("T", 0, b"x")).code == ResponseCode.SUCCESS

    run(tmp_path, scenario)


@pytest.mark.req("DELAY-1")
def test_a_delayed_send_is_answered_with_the_queue_it_asked_for_and_arrives_there(tmp_path: Path) -> None:
    clock = SimClock()

    async def scenario(servers: RemotingServers, ns: WireClient, br: WireClient) -> None:
        await ns.route("T")
        sent = await br.send("T", 0, b"later", encode_properties({"DELAY": "3", "UNIQ_KEY": "U3"}))
        assert (sent.code, sent.ext_fields["queueId"]) == (ResponseCode.SUCCESS, "0")
        clock.advance(9_999)
        assert await bodies(br) == []
        clock.advance(1)
        assert await bodies(br) == [b"later"]

    run(tmp_path, scenario, clock=clock)
