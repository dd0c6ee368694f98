"""The front's auto-renew (RENEW-1, reference/net/grpc/renewal.py), on the broker's simulated clock: an auto-renew
receive of a live client stays invisible past its 60 s; once the client is gone (terminated, or expired by the
registry for want of heartbeats) its messages come back within seconds; a receive without auto_renew is not renewed;
an ack with the handle the client received acks the renewed delivery."""

from __future__ import annotations

from pathlib import Path

import pytest

from reference.net.grpc import codes, renewal
from reference.net.grpc.receive import DEFAULT_INVISIBLE_MS
from reference.rules.topics import dlq_topic
from tests.v5.front import D, Front, S, messages, receive_now, receive_request, run

OK = codes.OK
GROUP, TOPIC = "GR", "TR"
HOLDER, OTHER = "holder@1@0@push", "other@1@0@push"
#: The v5 client's heartbeat interval.
HEARTBEAT_MS = 10_000


async def heartbeat(f: Front, client_id: str) -> None:
    beat = await f.call("Heartbeat", S.HeartbeatRequest(group=D.Resource(name=GROUP), client_type=D.PUSH_CONSUMER),
                        client_id=client_id)
    assert beat.status.code == OK


def auto_renew_request() -> S.ReceiveMessageRequest:
    request = receive_request(GROUP, TOPIC, invisible_s=None)
    request.auto_renew = True
    return request


async def hold_one(f: Front, request: S.ReceiveMessageRequest | None = None) -> D.Message:
    """HOLDER (registered) receives the one message sent; returns it."""
    await f.route(TOPIC)
    await heartbeat(f, HOLDER)
    await heartbeat(f, OTHER)
    await f.send(TOPIC, b"slow")
    (got,) = messages(await f.receive(request or auto_renew_request(), HOLDER))
    return got


async def run_for(f: Front, ms: int, beating: tuple[str, ...]) -> None:
    """Move the broker's clock ``ms`` forward in 1 s steps, the clients in ``beating`` heartbeating every 10 s."""
    for step in range(ms // 1_000):
        if step % (HEARTBEAT_MS // 1_000) == 0:
            for client_id in beating:
                await heartbeat(f, client_id)
        f.clock.advance(1_000)


async def other_receives(f: Front) -> list[D.Message]:
    return messages(await receive_now(f, receive_request(GROUP, TOPIC, invisible_s=30)))


def ack(handle: str) -> S.AckMessageRequest:
    return S.AckMessageRequest(group=D.Resource(name=GROUP), topic=D.Resource(name=TOPIC),
                               entries=[S.AckMessageEntry(message_id="x", receipt_handle=handle)])


@pytest.mark.req("RENEW-1.renewed")
def test_an_auto_renew_receive_of_a_live_client_stays_invisible_past_its_invisible_time(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        got = await hold_one(f)
        assert got.system_properties.invisible_duration.seconds == DEFAULT_INVISIBLE_MS // 1000
        await run_for(f, 15 * 60_000, (HOLDER, OTHER))  # 15 min: renewed at 1, 3, 5, 10 min steps
        assert f.front.state.renewals.renewals >= 3
        assert await other_receives(f) == [], "redelivered while its client lives and holds it"
        # The client acks with the handle it received: the front acks the renewed delivery.
        assert (await f.call("AckMessage", ack(got.system_properties.receipt_handle), HOLDER)).status.code == OK
        assert f.front.state.renewals.groups.get((HOLDER, GROUP)) == {}
        await run_for(f, 5 * 60_000, (OTHER,))
        assert await other_receives(f) == []

    run(tmp_path, scenario)


@pytest.mark.req("RENEW-1.renewed")
def test_a_change_with_the_received_handle_acts_on_the_renewed_delivery_and_ends_the_renewal(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        got = await hold_one(f)
        await run_for(f, 70_000, (HOLDER, OTHER))  # renewed once (at 50-55 s)
        assert f.front.state.renewals.renewals == 1
        changed = await f.call("ChangeInvisibleDuration", S.ChangeInvisibleDurationRequest(
            group=D.Resource(name=GROUP), topic=D.Resource(name=TOPIC),
            receipt_handle=got.system_properties.receipt_handle, invisible_duration={"seconds": 2},
            message_id=got.system_properties.message_id), HOLDER)
        assert changed.status.code == OK
        await run_for(f, 10_000, (HOLDER, OTHER))  # visible again 2 s later, revived: not renewed any more
        (again,) = await other_receives(f)
        assert again.system_properties.delivery_attempt == 2

    run(tmp_path, scenario)


@pytest.mark.req("RENEW-1.renewed")
def test_a_receive_without_auto_renew_is_not_renewed(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await hold_one(f, receive_request(GROUP, TOPIC, invisible_s=60))
        await run_for(f, 70_000, (HOLDER, OTHER))
        assert f.front.state.renewals.renewals == 0
        (again,) = await other_receives(f)
        assert again.system_properties.delivery_attempt == 2

    run(tmp_path, scenario)


@pytest.mark.req("RENEW-1.released")
def test_a_terminated_clients_messages_come_back_within_seconds(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await hold_one(f)
        await run_for(f, 20_000, (HOLDER, OTHER))
        bye = await f.call("NotifyClientTermination", S.NotifyClientTerminationRequest(
            group=D.Resource(name=GROUP)), HOLDER)
        assert bye.status.code == OK
        await run_for(f, 5_000, (OTHER,))  # visible after 1 s, then revived (the reference's revive delay)
        (again,) = await other_receives(f)
        assert again.system_properties.delivery_attempt == 2 and again.body == b"slow"

    run(tmp_path, scenario)


@pytest.mark.req("RENEW-1.released")
def test_a_silent_clients_messages_come_back_once_the_registry_expires_it_and_not_before(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await hold_one(f)  # the holder's last heartbeat: now
        expiry = f.broker.config.channel_expired_timeout_ms
        scan = f.broker.config.channel_scan_interval_ms
        await run_for(f, expiry, (OTHER,))  # renewed while the registry still lists it (at 50 s, at 100 s)
        assert f.front.state.renewals.renewals == 2
        assert await other_receives(f) == [], "back before the registry considered its client gone"
        # The registry drops it at its next scan; the front gives the message back at its next renewal scan (5 s),
        # visible 1 s later, revived within the reference's revive delay.
        await run_for(f, scan + renewal.RENEW_SCHEDULE_PERIOD_MS + 5_000, (OTHER,))
        (again,) = await other_receives(f)
        assert again.system_properties.delivery_attempt == 2

    run(tmp_path, scenario)


@pytest.mark.req("RENEW-1.renewed")
def test_dead_lettering_with_the_received_handle_acts_on_the_renewed_delivery(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        got = await hold_one(f)
        await run_for(f, 70_000, (HOLDER, OTHER))
        assert f.front.state.renewals.renewals == 1
        forwarded = await f.call("ForwardMessageToDeadLetterQueue", S.ForwardMessageToDeadLetterQueueRequest(
            group=D.Resource(name=GROUP), topic=D.Resource(name=TOPIC),
            receipt_handle=got.system_properties.receipt_handle, message_id=got.system_properties.message_id,
            delivery_attempt=1, max_delivery_attempts=16), HOLDER)
        assert forwarded.status.code == OK
        assert len(f.broker.store.get_message(GROUP, dlq_topic(GROUP), 0, 0, 8, None).messages) == 1
        await run_for(f, 5 * 60_000, (HOLDER, OTHER))
        assert await other_receives(f) == []

    run(tmp_path, scenario)


@pytest.mark.req("RENEW-1.renewed")
def test_renewal_stops_three_hours_after_the_receive_and_the_message_comes_back_after_the_retry_delay(
        tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        f.broker.config.channel_expired_timeout_ms = 24 * 3_600_000  # the holder stays registered without beats
        await hold_one(f)
        # Renewed 10 s before each visible time: at 50 s (for 1 min), 100 s (3 min), 270 s (5), 560 s (10),
        # 1150 s (30), 2940 s, 6530 s and 10120 s (1 h each), the last visible at 13720 s. Past 3 h, the scan that
        # finds it due (13710 s) renews it no more: it is visible again after the group's retry delay (10 s).
        for _ in range(13_700_000 // renewal.RENEW_SCHEDULE_PERIOD_MS):
            f.clock.advance(renewal.RENEW_SCHEDULE_PERIOD_MS)
        assert f.front.state.renewals.renewals == 8
        assert await other_receives(f) == [], "given back before its last renewal ran out"
        f.clock.advance(renewal.retry_delay_ms(0) + 20_000)
        (again,) = await other_receives(f)
        assert again.system_properties.delivery_attempt == 2
        assert f.front.state.renewals.groups[(HOLDER, GROUP)] == {}

    run(tmp_path, scenario)


@pytest.mark.req("RENEW-1.released")
def test_a_client_that_leaves_a_group_with_other_members_is_cleared_at_once(tmp_path: Path) -> None:
    async def scenario(f: Front) -> None:
        await hold_one(f)
        holder = f.front.state.registry.clients[HOLDER]
        f.broker.unregister_client(holder, GROUP)  # what the registry's expiry does, here without moving the clock
        assert (HOLDER, GROUP) not in f.front.state.renewals.groups  # the remaining member was told: cleared
        await run_for(f, 3_000, (OTHER,))  # visible after 1 s, then revived
        (again,) = await other_receives(f)
        assert again.system_properties.delivery_attempt == 2

    run(tmp_path, scenario)
