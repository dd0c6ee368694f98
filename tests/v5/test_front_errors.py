"""Bad input and unsupported RPCs over a real channel: every refusal is the v5 status code the proxy answers,
with a message naming the field and the rule; never a gRPC error, and the channel keeps serving."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reference.net.grpc import codes
from reference.net.grpc.refused import REASONS
from tests.v5.front import D, Front, S, messages, receive_request, run, status_of


def _receive(**changes: Any) -> Any:
    """The good receive request with fields replaced (None: left out)."""
    fields: dict[str, Any] = {
        "group": D.Resource(name="G"), "message_queue": D.MessageQueue(topic=D.Resource(name="T")),
        "filter_expression": D.FilterExpression(type=D.TAG, expression="*"), "batch_size": 16,
        "invisible_duration": {"seconds": 30}, "long_polling_timeout": {"seconds": 5},
    }
    fields.update(changes)
    return S.ReceiveMessageRequest(**{k: v for k, v in fields.items() if v is not None})


RECEIVES = [
    ("no group", _receive(group=None), codes.ILLEGAL_CONSUMER_GROUP, "group: "),
    ("bad group name", _receive(group=D.Resource(name="bad group")), codes.ILLEGAL_CONSUMER_GROUP, "consumerGroup: "),
    ("no topic", _receive(message_queue=D.MessageQueue()), codes.ILLEGAL_TOPIC, "message_queue.topic: "),
    ("unknown topic", _receive(message_queue=D.MessageQueue(topic=D.Resource(name="Nope"))), codes.TOPIC_NOT_FOUND,
     "topic: "),
    ("batch size 0", _receive(batch_size=0), codes.BAD_REQUEST, "batch_size: must be in [1, 32]"),
    ("batch size 33", _receive(batch_size=33), codes.BAD_REQUEST, "batch_size: must be in [1, 32]"),
    ("invisible 5 s", _receive(invisible_duration={"seconds": 5}), codes.ILLEGAL_INVISIBLE_TIME,
     "invisible_duration: must be in [10000, 43200000] ms"),
    ("no invisible time, no auto renew", _receive(invisible_duration=None), codes.ILLEGAL_INVISIBLE_TIME,
     "invisible_duration: must be set"),
    ("negative poll time", _receive(long_polling_timeout={"nanos": -1_000_000}), codes.ILLEGAL_POLLING_TIME,
     "long_polling_timeout: must not be negative, got -1 ms"),
    ("SQL filter", _receive(filter_expression=D.FilterExpression(type=D.SQL, expression="a > 1")),
     codes.ILLEGAL_FILTER_EXPRESSION, "filter_expression.type: "),
    ("bad tag expression", _receive(filter_expression=D.FilterExpression(type=D.TAG, expression="||")),
     codes.ILLEGAL_FILTER_EXPRESSION, "expression: "),
]


@pytest.mark.req("GRPC-8")
@pytest.mark.parametrize(("case", "request_", "code", "message"), RECEIVES, ids=[c[0] for c in RECEIVES])
def test_a_bad_receive_is_its_status_then_the_delivery_timestamp(tmp_path: Path, case: str, request_: Any,
                                                                 code: int, message: str) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        responses = await f.receive(request_)
        assert [r.WhichOneof("content") for r in responses] == ["status", "delivery_timestamp"]
        assert status_of(responses).code == code
        assert status_of(responses).message.startswith(message), status_of(responses).message
        await f.send("T", b"still serving")
        assert [m.body for m in messages(await f.receive(receive_request("G", "T")))] == [b"still serving"]

    run(tmp_path, scenario)


def _message(**system: Any) -> Any:
    fields: dict[str, Any] = {"message_id": "ID1", "message_type": D.NORMAL, **system}
    body = fields.pop("body", b"x")
    topic = fields.pop("topic", "T")
    user = fields.pop("user", {})
    return D.Message(topic=D.Resource(name=topic), body=body, user_properties=user,
                     system_properties=D.SystemProperties(**fields))


SENDS = [
    ("no message", S.SendMessageRequest(), codes.BAD_REQUEST, "messages: "),
    ("no message id", S.SendMessageRequest(messages=[_message(message_id="")]), codes.ILLEGAL_MESSAGE_ID,
     "message_id: "),
    ("empty body", S.SendMessageRequest(messages=[_message(body=b"")]), codes.MESSAGE_BODY_EMPTY, "body: "),
    ("unknown topic", S.SendMessageRequest(messages=[_message(topic="Nope")]), codes.TOPIC_NOT_FOUND, "topic: "),
    ("bad topic name", S.SendMessageRequest(messages=[_message(topic="a b")]), codes.ILLEGAL_TOPIC, "topic: "),
    ("blank tag", S.SendMessageRequest(messages=[_message(tag=" ")]), codes.ILLEGAL_MESSAGE_TAG, "tag: "),
    ("blank key", S.SendMessageRequest(messages=[_message(keys=[""])]), codes.ILLEGAL_MESSAGE_KEY, "keys: "),
    ("system property key", S.SendMessageRequest(messages=[_message(user={"UNIQ_KEY": "x"})]),
     codes.ILLEGAL_MESSAGE_PROPERTY_KEY, "user_properties: "),
    ("FIFO without group", S.SendMessageRequest(messages=[_message(message_type=D.FIFO)]),
     codes.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "message_type: "),
    ("DELAY", S.SendMessageRequest(messages=[_message(message_type=D.DELAY)]), codes.UNSUPPORTED,
     "message_type: DELAY messages are not supported"),
    ("TRANSACTION", S.SendMessageRequest(messages=[_message(message_type=D.TRANSACTION)]), codes.UNSUPPORTED,
     "message_type: TRANSACTION messages are not supported"),
    ("delivery timestamp", S.SendMessageRequest(messages=[_message(delivery_timestamp={"seconds": 1})]),
     codes.UNSUPPORTED, "delivery_timestamp: "),
]


@pytest.mark.req("GRPC-8")
@pytest.mark.parametrize(("case", "request_", "code", "message"), SENDS, ids=[c[0] for c in SENDS])
def test_a_bad_send_stores_nothing(tmp_path: Path, case: str, request_: Any, code: int, message: str) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        answer = await f.call("SendMessage", request_)
        assert answer.status.code == code
        assert answer.status.message.startswith(message), answer.status.message
        assert f.broker.store.get_max_offset_in_queue("T", 0) == 0 and not answer.entries

    run(tmp_path, scenario)


def _handle_request(rpc: str, **fields: Any) -> Any:
    base: dict[str, Any] = {"group": D.Resource(name="G"), "topic": D.Resource(name="T")}
    base.update(fields)
    return getattr(S, f"{rpc}Request")(**base)


OTHERS = [
    ("ack: no entries", "AckMessage", _handle_request("AckMessage"), codes.BAD_REQUEST, "entries: "),
    ("ack: malformed handle", "AckMessage",
     _handle_request("AckMessage", entries=[S.AckMessageEntry(message_id="m", receipt_handle="junk")]),
     codes.INVALID_RECEIPT_HANDLE, "receiptHandle: malformed"),
    ("ack: no group", "AckMessage", _handle_request("AckMessage", group=D.Resource()), codes.ILLEGAL_CONSUMER_GROUP,
     "group: "),
    ("change: zero", "ChangeInvisibleDuration",
     _handle_request("ChangeInvisibleDuration", receipt_handle="junk", invisible_duration={"seconds": 0}),
     codes.ILLEGAL_INVISIBLE_TIME, "invisible_duration: "),
    ("change: bad handle", "ChangeInvisibleDuration",
     _handle_request("ChangeInvisibleDuration", receipt_handle="junk", invisible_duration={"seconds": 5}),
     codes.INVALID_RECEIPT_HANDLE, "receiptHandle: "),
    ("dlq: bad handle", "ForwardMessageToDeadLetterQueue",
     _handle_request("ForwardMessageToDeadLetterQueue", receipt_handle=""), codes.INVALID_RECEIPT_HANDLE,
     "receiptHandle: "),
    ("route: no topic", "QueryRoute", S.QueryRouteRequest(), codes.ILLEGAL_TOPIC, "topic: "),
    ("route: bad topic", "QueryRoute", S.QueryRouteRequest(topic=D.Resource(name="a/b")), codes.ILLEGAL_TOPIC,
     "topic: "),
    ("heartbeat: no client type", "Heartbeat", S.HeartbeatRequest(), codes.UNRECOGNIZED_CLIENT_TYPE, "client_type: "),
    ("heartbeat: consumer without group", "Heartbeat", S.HeartbeatRequest(client_type=D.SIMPLE_CONSUMER),
     codes.ILLEGAL_CONSUMER_GROUP, "group: "),
    ("assignment: unknown topic", "QueryAssignment",
     S.QueryAssignmentRequest(topic=D.Resource(name="Nope"), group=D.Resource(name="G")), codes.TOPIC_NOT_FOUND,
     "topic: "),
]


@pytest.mark.req("GRPC-8")
@pytest.mark.parametrize(("case", "rpc", "request_", "code", "message"), OTHERS, ids=[c[0] for c in OTHERS])
def test_bad_input_to_the_other_rpcs(tmp_path: Path, case: str, rpc: str, request_: Any, code: int,
                                     message: str) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        answer = await f.call(rpc, request_)
        assert answer.status.code == code
        assert answer.status.message.startswith(message), answer.status.message

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-8")
def test_a_call_without_the_client_id_metadata_is_client_id_required(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        answer = await f.stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name="T")))
        assert answer.status.code == codes.CLIENT_ID_REQUIRED
        assert answer.status.message.startswith("x-mq-client-id: ")
        responses = [r async for r in f.stub.ReceiveMessage(receive_request("G", "T"))]
        assert status_of(responses).code == codes.CLIENT_ID_REQUIRED

        async def commands() -> Any:
            yield S.TelemetryCommand(settings=D.Settings(client_type=D.PRODUCER))

        (reply,) = [r async for r in f.stub.Telemetry(commands())]
        assert reply.status.code == codes.CLIENT_ID_REQUIRED and not reply.HasField("settings")

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-8")
def test_bad_settings_are_refused_on_the_stream_which_stays_open(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        bad = D.Settings(client_type=D.SIMPLE_CONSUMER)  # no group
        good = D.Settings(client_type=D.PRODUCER)

        async def commands() -> Any:
            yield S.TelemetryCommand(settings=bad)
            yield S.TelemetryCommand(settings=D.Settings())  # no client type
            yield S.TelemetryCommand(settings=good)

        replies = [r async for r in f.stub.Telemetry(commands(), metadata=f.md())]
        assert [r.status.code for r in replies] == [codes.ILLEGAL_CONSUMER_GROUP, codes.UNRECOGNIZED_CLIENT_TYPE,
                                                    codes.OK]
        assert replies[0].status.message.startswith("settings.subscription.group: ")
        assert replies[2].settings.publishing.max_body_size > 0

    run(tmp_path, scenario)


UNSUPPORTED = [
    ("EndTransaction", S.EndTransactionRequest()), ("RecallMessage", S.RecallMessageRequest()),
    ("SyncLiteSubscription", S.SyncLiteSubscriptionRequest()), ("UpdateOffset", S.UpdateOffsetRequest()),
    ("GetOffset", S.GetOffsetRequest()), ("QueryOffset", S.QueryOffsetRequest()),
]


@pytest.mark.req("GRPC-9")
def test_unsupported_rpcs_are_refused_not_implemented_saying_why(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        for rpc, request in UNSUPPORTED:
            answer = await f.call(rpc, request)
            assert answer.status.code == codes.NOT_IMPLEMENTED
            assert answer.status.message == f"{rpc}: {REASONS[rpc]}"
        pulled = [r async for r in f.stub.PullMessage(S.PullMessageRequest(), metadata=f.md())]
        assert [r.status.code for r in pulled] == [codes.NOT_IMPLEMENTED]
        assert pulled[0].status.message.startswith("PullMessage: ")
        assert set(REASONS) == {rpc for rpc, _ in UNSUPPORTED} | {"PullMessage"}

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-9")
def test_every_rpc_of_the_service_is_served() -> None:
    from reference.net.grpc.service import REFUSED, UNARY, MessagingServicer

    streams = {"ReceiveMessage", "PullMessage", "Telemetry"}
    rpcs = {m.name for m in S.DESCRIPTOR.services_by_name["MessagingService"].methods}
    assert rpcs == set(UNARY) | set(REFUSED) | streams
    assert all(hasattr(MessagingServicer, name) for name in streams)


def test_the_code_table_agrees_with_the_official_enum() -> None:
    for name, value in codes.V5_CODES.items():
        assert D.Code.Value(name) == value, name


@pytest.mark.req("GRPC-8")
def test_a_body_over_the_stores_maximum_is_message_body_too_large_not_a_transport_error(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        limit = f.broker.store.config.max_message_size
        answer = await f.call("SendMessage", S.SendMessageRequest(messages=[_message(body=b"x" * (limit + 1))]))
        assert answer.status.code == codes.MESSAGE_BODY_TOO_LARGE
        assert answer.status.message == f"body: must be at most {limit} bytes, got {limit + 1}"

    run(tmp_path, scenario)


@pytest.mark.req("GRPC-8")
def test_a_receive_whose_deadline_leaves_no_time_to_poll_is_illegal_polling_time(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await f.route("T")
        call = f.stub.ReceiveMessage(receive_request("G", "T"), metadata=f.md(), timeout=3)
        responses = [r async for r in call]
        assert status_of(responses).code == codes.ILLEGAL_POLLING_TIME
        assert status_of(responses).message.startswith("deadline: ")

    run(tmp_path, scenario)
