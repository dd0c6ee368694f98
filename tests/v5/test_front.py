"""The gRPC front's happy paths over a real channel: route, send, receive (POP with long polling), ack, change of
invisible time, revive, dead-lettering, the Telemetry settings handshake, heartbeat and termination."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from reference.net.grpc import codes
from reference.rules.topics import dlq_topic
from tests.v5.front import D, Front, S, held, messages, receive_now, receive_request, run, status_of

OK, NOT_FOUND = codes.OK, codes.MESSAGE_NOT_FOUND


@pytest.mark.req("GRPC-1")
def test_route_names_the_front_as_every_queues_endpoints(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        route = await f.route("TopicV5")
        assert route.status.code == OK
        assert [q.id for q in route.message_queues] == [0, 1, 2, 3]
        for q in route.message_queues:
            assert q.topic.name == "TopicV5" and q.permission == D.READ_WRITE
            assert q.broker.name == f.broker.config.broker_name and q.broker.id == 0
            assert q.broker.endpoints.scheme == D.IPv4
            assert [(a.host, a.port) for a in q.broker.endpoints.addresses] == [f.front.address]
            assert list(q.accept_message_types) == [D.NORMAL, D.FIFO]
        assert f.broker.store.queue_nums("TopicV5") == 4

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-2")
def test_send_then_receive_carries_the_messages_properties_and_ack_consumes_it(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        message = D.Message(
            topic=D.Resource(name="T"), body=b"hello v5", user_properties={"p1": "v1"},
            system_properties=D.SystemProperties(tag="TagA", keys=["k1", "k2"], message_id="01ABC", message_type=1,
                                                 body_encoding=1, born_host="192.0.2.2"),
        )
        sent = await f.call("SendMessage", S.SendMessageRequest(messages=[message]))
        assert sent.status.code == OK and len(sent.entries) == 1
        assert (sent.entries[0].status.code, sent.entries[0].message_id, sent.entries[0].offset) == (OK, "01ABC", 0)
        responses = await f.receive(receive_request("G", "T", invisible_s=15))
        assert [r.WhichOneof("content") for r in responses] == ["status", "message", "delivery_timestamp"]
        assert status_of(responses).code == OK
        (got,) = messages(responses)
        system = got.system_properties
        assert (got.topic.name, got.body, dict(got.user_properties)) == ("T", b"hello v5", {"p1": "v1"})
        assert (system.message_id, system.tag, list(system.keys), system.born_host) == (
            "01ABC", "TagA", ["k1", "k2"], "192.0.2.2")
        assert system.body_encoding == D.IDENTITY and system.body_digest.type == D.MD5
        assert system.body_digest.checksum == hashlib.md5(b"hello v5").hexdigest().upper()
        assert system.delivery_attempt == 1 and system.invisible_duration.seconds == 15
        assert system.queue_offset == 0 and system.receipt_handle
        acked = await f.call("AckMessage", S.AckMessageRequest(
            group=D.Resource(name="G"), topic=D.Resource(name="T"),
            entries=[S.AckMessageEntry(message_id="01ABC", receipt_handle=system.receipt_handle)]))
        assert acked.status.code == OK and [e.status.code for e in acked.entries] == [OK]
        again = await f.call("AckMessage", S.AckMessageRequest(
            group=D.Resource(name="G"), topic=D.Resource(name="T"),
            entries=[S.AckMessageEntry(message_id="01ABC", receipt_handle=system.receipt_handle)]))
        assert again.status.code == codes.INVALID_RECEIPT_HANDLE
        assert again.status.message.startswith("receiptHandle: ")

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-3")
def test_an_empty_long_poll_ends_message_not_found_at_its_timeout_on_the_brokers_clock(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        task = await held(f, receive_request("G", "T", poll_s=5))
        f.clock.advance(4_999)
        await asyncio.sleep(0.05)
        assert not task.done()
        f.clock.advance(1)
        responses = await task
        assert status_of(responses).code == NOT_FOUND and status_of(responses).message == "no new message"
        assert [r.WhichOneof("content") for r in responses] == ["status", "delivery_timestamp"]

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-3")
def test_a_held_receive_is_woken_by_a_send(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        task = await held(f, receive_request("G", "T", poll_s=20))
        sent = await f.send("T", b"wake")
        assert sent.status.code == OK
        responses = await task
        assert status_of(responses).code == OK and [m.body for m in messages(responses)] == [b"wake"]

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-3")
def test_the_long_polling_timeout_is_clamped_to_the_proxys_range(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        task = await held(f, receive_request("G", "T", poll_s=120))
        f.clock.advance(19_999)
        await asyncio.sleep(0.05)
        assert not task.done()
        f.clock.advance(1)
        assert status_of(await task).code == NOT_FOUND

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-4")
def test_a_tag_filter_receives_only_matching_messages(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        for tag in ("A", "B", "C", "B"):
            await f.send("T", tag.encode(), tag=tag)
        responses = await f.receive(receive_request("G", "T", expression="B || C"))
        assert sorted(m.body for m in messages(responses)) == [b"B", b"B", b"C"]

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-5")
def test_an_unacked_message_is_invisible_then_revived_with_a_new_handle_and_attempt(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        await f.send("T", b"once")
        (first,) = messages(await f.receive(receive_request("G", "T", invisible_s=10)))
        task = await held(f, receive_request("G", "T", poll_s=5))
        f.clock.advance(5_000)
        assert status_of(await task).code == NOT_FOUND  # invisible
        for _ in range(30):  # past the invisible time and the revive delay, on the broker's clock
            f.clock.advance(1_000)
        responses = await f.receive(receive_request("G", "T", invisible_s=10))
        (second,) = messages(responses)
        assert second.body == b"once" and second.system_properties.message_id == first.system_properties.message_id
        assert second.system_properties.delivery_attempt == 2
        assert second.system_properties.receipt_handle != first.system_properties.receipt_handle

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-5")
def test_change_invisible_duration_returns_a_new_handle_and_the_old_one_is_void(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        await f.send("T", b"m")
        (got,) = messages(await f.receive(receive_request("G", "T", invisible_s=60)))
        old = got.system_properties.receipt_handle
        changed = await f.call("ChangeInvisibleDuration", S.ChangeInvisibleDurationRequest(
            group=D.Resource(name="G"), topic=D.Resource(name="T"), receipt_handle=old,
            invisible_duration={"seconds": 2}, message_id=got.system_properties.message_id))
        assert changed.status.code == OK and changed.receipt_handle and changed.receipt_handle != old

        def ack(handle: str) -> S.AckMessageRequest:
            return S.AckMessageRequest(group=D.Resource(name="G"), topic=D.Resource(name="T"),
                                       entries=[S.AckMessageEntry(message_id="x", receipt_handle=handle)])

        assert (await f.call("AckMessage", ack(old))).status.code == codes.INVALID_RECEIPT_HANDLE
        for _ in range(10):  # visible again 2 s from now, revived on the broker's clock
            f.clock.advance(1_000)
        (again,) = messages(await f.receive(receive_request("G", "T")))
        assert again.system_properties.delivery_attempt == 2
        assert (await f.call("AckMessage", ack(again.system_properties.receipt_handle))).status.code == OK

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-5")
def test_ack_answers_per_entry_and_sums_them_up_in_the_top_level_status(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        await f.send("T", b"a")
        (got,) = messages(await f.receive(receive_request("G", "T")))
        entries = [S.AckMessageEntry(message_id="1", receipt_handle=got.system_properties.receipt_handle),
                   S.AckMessageEntry(message_id="2", receipt_handle="not a handle")]
        acked = await f.call("AckMessage", S.AckMessageRequest(group=D.Resource(name="G"), topic=D.Resource(name="T"),
                                                               entries=entries))
        assert acked.status.code == codes.MULTIPLE_RESULTS
        assert [e.status.code for e in acked.entries] == [OK, codes.INVALID_RECEIPT_HANDLE]

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-6")
def test_forward_to_dead_letter_queue_stores_it_in_the_groups_dlq_and_acks_it(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        await f.send("T", b"poison")
        (got,) = messages(await f.receive(receive_request("G", "T")))
        handle = got.system_properties.receipt_handle
        forwarded = await f.call("ForwardMessageToDeadLetterQueue", S.ForwardMessageToDeadLetterQueueRequest(
            group=D.Resource(name="G"), topic=D.Resource(name="T"), receipt_handle=handle,
            message_id=got.system_properties.message_id, delivery_attempt=1, max_delivery_attempts=16))
        assert forwarded.status.code == OK
        dlq = f.broker.store.get_message("G", dlq_topic("G"), 0, 0, 8, None).messages
        assert [m.body for m in dlq] == [b"poison"] and dlq[0].unique_id == got.system_properties.message_id
        acked = await f.call("AckMessage", S.AckMessageRequest(
            group=D.Resource(name="G"), topic=D.Resource(name="T"),
            entries=[S.AckMessageEntry(message_id="x", receipt_handle=handle)]))
        assert acked.status.code == codes.INVALID_RECEIPT_HANDLE  # already acked by the forward

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-7")
def test_telemetry_answers_each_settings_command_with_the_servers_view(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        producer = D.Settings(client_type=D.PRODUCER, request_timeout={"seconds": 3},
                              publishing=D.Publishing(topics=[D.Resource(name="T")], max_body_size=134217728))
        push = D.Settings(client_type=D.PUSH_CONSUMER, subscription=D.Subscription(
            group=D.Resource(name="GP"),
            subscriptions=[D.SubscriptionEntry(topic=D.Resource(name="T"),
                                               expression=D.FilterExpression(type=D.TAG, expression="*"))]))
        await f.route("T")
        for settings, client in ((producer, "p@1"), (push, "c@1")):
            async def commands(s: D.Settings = settings) -> object:
                yield S.TelemetryCommand(settings=s)
                yield S.TelemetryCommand(settings=s)  # the client writes its settings again ~1 s later

            replies = [r async for r in f.stub.Telemetry(commands(), metadata=f.md(client))]
            assert len(replies) == 2
            for reply in replies:
                assert reply.status.code == OK and reply.HasField("settings")
                assert reply.settings.metric.on is False
            answered = replies[0].settings
            if settings.client_type == D.PRODUCER:
                assert answered.publishing.max_body_size == f.broker.store.config.max_message_size
                assert answered.publishing.validate_message_type is True
                assert answered.backoff_policy.max_attempts == 3
                assert answered.backoff_policy.WhichOneof("strategy") == "exponential_backoff"
            else:
                sub = answered.subscription
                assert (sub.long_polling_timeout.seconds, sub.receive_batch_size, sub.fifo) == (20, 32, False)
                assert answered.backoff_policy.max_attempts == 17
                assert [d.seconds for d in answered.backoff_policy.customized_backoff.next][:3] == [1, 5, 10]
                assert f.broker.consumer_ids("GP") == ["c@1"]  # registered by its settings
        assignment = await f.call("QueryAssignment", S.QueryAssignmentRequest(
            topic=D.Resource(name="T"), group=D.Resource(name="GP")), client_id="c@1")
        assert assignment.status.code == OK
        (one,) = assignment.assignments
        assert one.message_queue.id == -1 and one.message_queue.topic.name == "T"
        assert [(a.host, a.port) for a in one.message_queue.broker.endpoints.addresses] == [f.front.address]

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-7")
def test_heartbeat_registers_a_consumer_and_termination_unregisters_it(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        beat = await f.call("Heartbeat", S.HeartbeatRequest(group=D.Resource(name="GS"),
                                                            client_type=D.SIMPLE_CONSUMER), client_id="s@1")
        assert beat.status.code == OK and f.broker.consumer_ids("GS") == ["s@1"]
        producer = await f.call("Heartbeat", S.HeartbeatRequest(client_type=D.PRODUCER), client_id="p@1")
        assert producer.status.code == OK
        bye = await f.call("NotifyClientTermination", S.NotifyClientTerminationRequest(group=D.Resource(name="GS")),
                           client_id="s@1")
        assert bye.status.code == OK and f.broker.consumer_ids("GS") == []

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-5")
def test_messages_popped_for_a_receive_the_client_cancelled_are_given_back_after_the_nack_time(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        task = await held(f, receive_request("G", "T", invisible_s=60, poll_s=20))
        task.cancel()
        holds = f.broker.pop_service.long_polling._table.values()
        await f.until(lambda: all(h.channel.answer.done() for hs in holds for h in hs))  # the server saw it go
        await f.send("T", b"orphan")  # wakes the abandoned hold, which pops it
        assert f.broker.pop_service.long_polling.held_count() == 0
        for _ in range(5):  # the nack time (1 s) and the revive delay, far less than the 60 s invisible time
            f.clock.advance(1_000)
        (again,) = messages(await receive_now(f, receive_request("G", "T")))
        assert again.body == b"orphan" and again.system_properties.delivery_attempt == 2

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-3")
def test_a_receive_takes_at_most_its_batch_size(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        for i in range(5):
            await f.send("T", str(i).encode())
        first = messages(await f.receive(receive_request("G", "T", batch=2)))
        rest = messages(await f.receive(receive_request("G", "T", batch=32)))
        assert len(first) == 2 and len(rest) == 3
        assert sorted(m.body for m in first + rest) == [b"0", b"1", b"2", b"3", b"4"]

    run(tmp_path, scenario)
