"""The gRPC front's FIFO path over a real channel: a group made FIFO as an operator makes it (mqadmin updateSubGroup
with consumeMessageOrderly, over the remoting front of the same broker) gets ``subscription.fifo`` in its settings,
per-queue assignments, ordered receives (one batch in flight per queue, the same batch again after its invisibility
with the proxy's delivery_attempt), and ordered acks and changes of invisible time; bad handles are refused naming
the field. Time is the broker's SimClock."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from reference.net.grpc import codes
from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RequestCode
from reference.rules.topics import pop_retry_topic
from tests.v5.front import D, Front, S, messages, receive_now, receive_request, run, status_of

OK, NOT_FOUND = codes.OK, codes.MESSAGE_NOT_FOUND
G, T = "FifoG", "FifoT"
#: Every message of the tests in one queue: FIFO messages of one message group (the front hashes the group).
MESSAGE_GROUP = "order-1"


def create_group(f: Front, group: str, orderly: bool) -> None:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP over the broker's remoting port (mqadmin updateSubGroup -o)."""
    client = RemotingClient(f"{f.servers.broker_addr[0]}:{f.servers.broker_addr[1]}")
    try:
        body = json.dumps({"groupName": group, "consumeEnable": True, "consumeMessageOrderly": orderly}).encode()
        assert client.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body).code == 0
    finally:
        client.close()


async def fifo_topic(f: Front, n: int, orderly: bool = True) -> None:
    """The FIFO group, and ``n`` FIFO messages of one message group sent to the topic (all in one queue)."""
    await asyncio.to_thread(create_group, f, G, orderly)
    await f.route(T)
    for i in range(n):
        sent = await f.send(T, b"%d" % i, message_group=MESSAGE_GROUP, message_type=D.FIFO)
        assert sent.status.code == OK


def offsets(got: list[Any]) -> list[int]:
    return [m.system_properties.queue_offset for m in got]


def ack_request(*handles: str) -> Any:
    return S.AckMessageRequest(group=D.Resource(name=G), topic=D.Resource(name=T),
                               entries=[S.AckMessageEntry(message_id="m", receipt_handle=h) for h in handles])


@pytest.mark.req("GRPC-7")
def test_a_fifo_groups_settings_say_fifo_and_its_assignment_names_every_queue(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await asyncio.to_thread(create_group, f, G, True)
        route = await f.route(T)
        settings = D.Settings(client_type=D.PUSH_CONSUMER, subscription=D.Subscription(
            group=D.Resource(name=G), subscriptions=[D.SubscriptionEntry(
                topic=D.Resource(name=T), expression=D.FilterExpression(type=D.TAG, expression="*"))]))

        async def commands() -> Any:
            yield S.TelemetryCommand(settings=settings)

        (reply,) = [r async for r in f.stub.Telemetry(commands(), metadata=f.md("c@1"))]
        assert reply.status.code == OK and reply.settings.subscription.fifo is True
        assignment = await f.call("QueryAssignment", S.QueryAssignmentRequest(
            topic=D.Resource(name=T), group=D.Resource(name=G)), client_id="c@1")
        assert assignment.status.code == OK
        assert [a.message_queue.id for a in assignment.assignments] == [q.id for q in route.message_queues]
        await asyncio.to_thread(create_group, f, G, False)  # the operator turns it off: the next answer says so
        (reply,) = [r async for r in f.stub.Telemetry(commands(), metadata=f.md("c@1"))]
        assert reply.settings.subscription.fifo is False

    run(tmp_path, scenario)


@pytest.mark.req("POP-13.blocked", "POP-13.again", "POP-14.count")
def test_a_fifo_receive_blocks_its_queue_then_delivers_the_batch_again_with_the_next_attempt(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await fifo_topic(f, 3)
        first = messages(await f.receive(receive_request(G, T, batch=2, invisible_s=30)))
        assert offsets(first) == [0, 1]
        assert [m.system_properties.delivery_attempt for m in first] == [1, 1]
        blocked = await receive_now(f, receive_request(G, T, invisible_s=30, poll_s=5))
        assert status_of(blocked).code == NOT_FOUND and messages(blocked) == []
        f.clock.advance(30_000)  # the batch's invisibility has ended (25 s after the held receive's 5 s)
        again = messages(await f.receive(receive_request(G, T, batch=2, invisible_s=30)))
        assert offsets(again) == [0, 1], "the same batch, from the queue, in order"
        assert [m.system_properties.delivery_attempt for m in again] == [2, 2]
        assert f.broker.store.topics().get(pop_retry_topic(G, T)) is None, "nothing went through a retry topic"

    run(tmp_path, scenario)


@pytest.mark.req("POP-14.ack")
def test_acknowledging_a_fifo_batch_frees_its_queue_at_once(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await fifo_topic(f, 4)
        first = messages(await f.receive(receive_request(G, T, batch=2, invisible_s=60)))
        acked = await f.call("AckMessage", ack_request(*(m.system_properties.receipt_handle for m in first)))
        assert acked.status.code == OK
        nxt = messages(await f.receive(receive_request(G, T, batch=2, invisible_s=60)))
        assert offsets(nxt) == [2, 3]
        assert [m.system_properties.delivery_attempt for m in nxt] == [1, 1]

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-5")
def test_a_change_of_invisible_duration_keeps_a_fifo_message_in_its_batch(tmp_path: Path) -> None:
    """The proxy passes it to the broker's ordered path: a new handle, the queue blocked until the new time, the new
    handle acknowledges and frees the queue."""
    async def scenario(f: Front) -> None:
        await fifo_topic(f, 2)
        (got,) = messages(await f.receive(receive_request(G, T, batch=1, invisible_s=10)))
        old = got.system_properties.receipt_handle
        changed = await f.call("ChangeInvisibleDuration", S.ChangeInvisibleDurationRequest(
            group=D.Resource(name=G), topic=D.Resource(name=T), receipt_handle=old,
            invisible_duration={"seconds": 60}, message_id=got.system_properties.message_id))
        assert changed.status.code == OK and changed.receipt_handle != old
        f.clock.advance(20_000)  # past the batch's own 10 s
        blocked = await receive_now(f, receive_request(G, T, invisible_s=10, poll_s=5))
        assert messages(blocked) == [], "the changed message keeps its queue blocked"
        assert (await f.call("AckMessage", ack_request(changed.receipt_handle))).status.code == OK
        assert offsets(messages(await f.receive(receive_request(G, T, invisible_s=10)))) == [1]

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-8")
def test_bad_fifo_handles_are_refused_naming_the_receipt_handle(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await fifo_topic(f, 3)
        (got,) = messages(await f.receive(receive_request(G, T, batch=1, invisible_s=10)))
        handle = got.system_properties.receipt_handle
        fields = handle.split(" ")
        fields[-1] = "2"  # an offset of the queue that is not in the batch in flight
        outside = " ".join(fields)
        for bad, rule in ((outside, "not part of the queue's ordered batch"), ("999 junk", "")):
            refused = await f.call("AckMessage", ack_request(bad))
            assert refused.status.code == codes.INVALID_RECEIPT_HANDLE
            assert refused.entries[0].status.message.startswith("receiptHandle: ") and rule in refused.status.message
        assert (await f.call("AckMessage", ack_request(handle))).status.code == OK
        again = await f.call("AckMessage", ack_request(handle))
        assert again.status.code == codes.INVALID_RECEIPT_HANDLE and "already acknowledged" in again.status.message
        dlq = await f.call("ForwardMessageToDeadLetterQueue", S.ForwardMessageToDeadLetterQueueRequest(
            group=D.Resource(name=G), topic=D.Resource(name=T), receipt_handle=outside, message_id="m",
            delivery_attempt=1, max_delivery_attempts=16))
        assert dlq.status.code == codes.INVALID_RECEIPT_HANDLE and dlq.status.message.startswith("receiptHandle: ")

    run(tmp_path, scenario)


@pytest.mark.req("POP-13.no-retry")
def test_a_fifo_receive_never_reads_the_retry_topic_an_unordered_one_does(tmp_path: Path) -> None:
    """A message revived into the group's retry topic while the group was not FIFO: once an operator makes the
    group FIFO its receives never return it; made unordered again, a receive gets it."""
    async def scenario(f: Front) -> None:
        await fifo_topic(f, 1, orderly=False)
        (got,) = messages(await f.receive(receive_request(G, T, invisible_s=10)))
        for _ in range(30):  # past the invisible time and the revive delay, on the broker's clock
            f.clock.advance(1_000)
        assert f.broker.store.topics().get(pop_retry_topic(G, T)), "revived into the retry topic"
        await asyncio.to_thread(create_group, f, G, True)
        for _ in range(10):  # an unordered receive would read the retry topic first in one of five, or to fill
            ordered = await receive_now(f, receive_request(G, T, invisible_s=10, poll_s=5))
            assert messages(ordered) == [], "a FIFO receive read the retry topic"
        await asyncio.to_thread(create_group, f, G, False)
        (again,) = messages(await receive_now(f, receive_request(G, T, invisible_s=10, poll_s=5)))
        assert again.system_properties.message_id == got.system_properties.message_id
        assert again.system_properties.delivery_attempt == 2

    run(tmp_path, scenario)
