"""InProcessGateway: matching held answers, consumer timeouts, refusals, lost replies, closing."""

from __future__ import annotations

import pytest

from reference.broker.protocol import ConsumerData, PullMessageRequest, PullSysFlag
from reference.client.gateway import GatewayError
from reference.client.inprocess import REPLY_LOST, REQUEST_LOST, InProcessGateway
from reference.rules.filter import SubscriptionData

from .conftest import ClientEnv


class FaultyLink:
    """Delays nothing, drops client-bound messages on demand, injects one sync fault."""

    def __init__(self, env: ClientEnv) -> None:
        self.env = env
        self.drop_replies = False
        self.fault: str | None = None

    def to_broker(self, action):  # type: ignore[no-untyped-def]
        action()

    def to_client(self, action):  # type: ignore[no-untyped-def]
        if not self.drop_replies:
            self.env.clock.call_later(0, action)

    def sync_fault(self) -> str | None:
        fault, self.fault = self.fault, None
        return fault

    def unordered(self, items: list[str]) -> list[str]:
        return list(reversed(items))


def request(offset: int = 0, suspend: int = 15_000) -> PullMessageRequest:
    flags = PullSysFlag.SUBSCRIPTION | (PullSysFlag.SUSPEND if suspend else 0)
    return PullMessageRequest("G", "T", 0, offset, 32, int(flags), 0, suspend, "*", 0, "c")


def test_held_answer_reaches_its_callback_and_late_answers_are_dropped(env: ClientEnv) -> None:
    link = FaultyLink(env)
    gateway = InProcessGateway(env.host, env.clock, "k", link)
    got: list = []
    gateway.pull(request(), lambda r, e: got.append((r, e)), 30_000)
    env.clock.advance(100)
    assert got == []
    env.produce(1, queue=0)
    env.clock.advance(0)
    assert got[0][0].messages[0].unique_id == "m-0"
    link.drop_replies = True
    gateway.pull(request(1), lambda r, e: got.append((r, e)), 30_000)
    env.clock.advance(30_000)
    assert got[1][0] is None and isinstance(got[1][1], GatewayError) and got[1][1].code == "TIMEOUT"
    link.drop_replies = False
    env.clock.advance(60_000)
    assert len(got) == 2, "the broker's late answer after the timeout is dropped"


def test_sync_faults_and_refusals(env: ClientEnv) -> None:
    link = FaultyLink(env)
    gateway = InProcessGateway(env.host, env.clock, "k", link)
    sub = SubscriptionData.parse("T", "*")
    link.fault = REQUEST_LOST
    with pytest.raises(GatewayError):
        gateway.heartbeat("c", [ConsumerData("G", (sub,))])
    assert env.broker.consumer_ids("G") == [], "a lost request did nothing"
    link.fault = REPLY_LOST
    with pytest.raises(GatewayError):
        gateway.heartbeat("c", [ConsumerData("G", (sub,))])
    assert env.broker.consumer_ids("G") == ["c"], "a lost reply: the broker acted"
    other = InProcessGateway(env.host, env.clock, "k-other", link)
    other.heartbeat("d", [ConsumerData("G", (sub,))])
    assert gateway.consumer_ids("G") == ["d", "c"], "the list as the link delivers it (here: reversed)"
    with pytest.raises(GatewayError) as err:
        gateway.query_offset("G", "Nope", 0)
    assert err.value.code == "TOPIC_NOT_EXIST"
    assert gateway.topic_queue_nums("T") == 4 and gateway.topic_queue_nums("Nope") is None


def test_close_tells_the_broker_and_abandon_does_not(env: ClientEnv) -> None:
    sub = SubscriptionData.parse("T", "*")
    closing = InProcessGateway(env.host, env.clock, "k1")
    silent = InProcessGateway(env.host, env.clock, "k2")
    closing.heartbeat("c1", [ConsumerData("G", (sub,))])
    silent.heartbeat("c2", [ConsumerData("G", (sub,))])
    got: list = []
    closing.pull(request(), lambda r, e: got.append(e), 30_000)
    closing.close()
    silent.abandon()
    env.clock.advance(40_000)
    assert got == [], "a closed client hears nothing more"
    assert env.broker.consumer_ids("G") == ["c2"], "the broker saw the close, not the silent death"
    env.host.broker = None
    with pytest.raises(GatewayError) as err:
        silent.max_offset("T", 0)
    assert err.value.code == "CONNECTION_REFUSED"


def test_a_held_pull_whose_group_left_is_answered_with_the_refusal(env: ClientEnv) -> None:
    """The broker re-validates a woken request; when the group's subscription is gone the answer is
    SUBSCRIPTION_NOT_EXIST, and the send that woke it does not fail (found by the simulator)."""
    sub = SubscriptionData.parse("T", "*")
    gateway = InProcessGateway(env.host, env.clock, "k")
    gateway.heartbeat("c", [ConsumerData("G", (sub,))])
    registered_only = PullMessageRequest("G", "T", 0, 0, 32, int(PullSysFlag.SUSPEND), 0, 15_000, None, 0, "c")
    got: list = []
    gateway.pull(registered_only, lambda r, e: got.append((r, e)), 30_000)
    env.clock.advance(10)
    gateway.unregister("c", "G")
    env.produce(1, queue=0)
    env.clock.advance(0)
    assert got[0][0] is not None and got[0][0].code.name == "SUBSCRIPTION_NOT_EXIST"
