"""Delay levels, transactions and topic permissions on the remoting wire (issue 41: the reference as a drop-in).

What a producer and ``mqadmin`` observe of a RocketMQ 4.x broker, written as raw requests (capability
``remoting_wire``) so the reference over remoting and a real 4.9.7 or 5.5.0 broker are judged alike. The sources are
upstream's (rocketmq-all-4.9.7): CommitLog.asyncPutMessage and ScheduleMessageService (delay levels),
SendMessageProcessor, TransactionalMessageServiceImpl, TransactionalMessageCheckService and EndTransactionProcessor
(transactions), AdminBrokerProcessor.updateAndCreateTopic and the name server's route (permissions and queue
counts). Real time unless the target has ``clock_control``; the check-back needs it (upstream checks every 60 s).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from conformance.suite import test_remoting_conformance as _wire
from conformance.suite.test_remoting_conformance import (
    Clients,
    absent_for,
    copies,
    route,
    send_fields,
    wait_for_copies,
    wait_until,
)
from conformance.targets import WireTarget
from conformance.targets.patience import PATIENCE_S
from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RequestCode, loads_body
from reference.net.remoting.message_codec import decode_records
from reference.rules.codes import ResponseCode

#: The ``client`` fixture of the wire tests (opens reference-codec clients, closes them after the test).
client = _wire.client

#: Level 2 of "1s 5s 10s ...": long enough to see it absent, short enough for real time.
DELAY_LEVEL = 2
DELAY_S = 5.0
#: How long a delayed message must stay absent (well inside its 5 s, above a scheduler's tick).
ABSENT_S = 3.0
#: MessageSysFlag.TRANSACTION_PREPARED_TYPE, COMMIT and ROLLBACK.
PREPARED, COMMIT, ROLLBACK = 4, 8, 12
#: How long a rolled-back half is watched after its sibling's commit became visible.
ROLLBACK_WATCH_S = 2.0
#: BrokerConfig.transactionCheckInterval, transactionTimeOut, transactionCheckMax (4.9.7 defaults).
CHECK_INTERVAL_MS, CHECK_TIMEOUT_MS, CHECK_MAX = 60_000, 6_000, 15


def _uniq() -> str:
    return uuid.uuid4().hex.upper()


def _java_send_fields(topic: str, props: dict[str, str], sys_flag: int = 0) -> dict[str, Any]:
    """SEND_MESSAGE extFields as the Java client writes them (booleans "false"): delay levels, transactions and
    permissions are what Java producers use, and the C++ client's "0" is judged by the REMOTING tests (rocketmq-rust
    refuses it, which would hide these requirements behind it)."""
    return {**send_fields(topic, 0, props, sys_flag), "unitMode": "false"}


def _send(br: RemotingClient, topic: str, props: dict[str, str], body: bytes, sys_flag: int = 0) -> Any:
    return br.invoke(RequestCode.SEND_MESSAGE, _java_send_fields(topic, props, sys_flag), body, timeout_s=PATIENCE_S)


# -- DELAY-1 -------------------------------------------------------------------------------------------------
@pytest.mark.req("DELAY-1")
@pytest.mark.needs("remoting_wire", "pull")
def test_a_delay_level_holds_the_message_back_for_its_delay(target: WireTarget, client: Clients) -> None:
    br = client(target.broker_addr)
    target.create_topic("DL1", 1)
    topic, group, uniq = target.namespaced("DL1"), target.namespaced("GDL1"), _uniq()
    r = _send(br, topic, {"UNIQ_KEY": uniq, "TAGS": "TagD", "DELAY": str(DELAY_LEVEL), "k": "v"}, b"later")
    sent = time.monotonic()
    assert r.code == ResponseCode.SUCCESS, f"DELAY-1: send: code {r.code} {r.remark}"
    early = copies(br, group, topic)
    if "clock_control" in target.capabilities or time.monotonic() - sent < 0.5:
        assert not early, "DELAY-1: a level-2 message was pullable at once (its level waits 5 s)"
    absent_for(target, br, group, topic, ABSENT_S)
    got = wait_for_copies(target, br, group, topic, 1, DELAY_S - ABSENT_S)
    assert len(got) == 1, f"DELAY-1: {len(got)} messages in the topic, one was sent"
    assert (got[0].body, got[0].msg_id, got[0].tags, got[0].properties.get("k")) == (b"later", uniq, "TagD", "v"), (
        f"DELAY-1: the delivered message {got[0]}")


# -- TXN-1 ---------------------------------------------------------------------------------------------------
def _half(br: RemotingClient, topic: str, group: str, body: bytes) -> tuple[int, int, str]:
    """Send a half message; (its commit-log offset, its queue offset, its UNIQ_KEY)."""
    uniq = _uniq()
    fields = _java_send_fields(topic, {"UNIQ_KEY": uniq, "TRAN_MSG": "true", "PGROUP": group}, PREPARED)
    fields["producerGroup"] = group
    r = br.invoke(RequestCode.SEND_MESSAGE, fields, body, timeout_s=PATIENCE_S)
    assert r.code == ResponseCode.SUCCESS, f"TXN-1: half send: code {r.code} {r.remark}"
    return int(r.ext_fields["msgId"][-16:], 16), int(r.ext_fields["queueOffset"]), uniq


def _end(br: RemotingClient, group: str, half: tuple[int, int, str], kind: int, from_check: bool = False) -> None:
    """END_TRANSACTION as the Java client writes it: oneway."""
    br.oneway(RequestCode.END_TRANSACTION, {
        "producerGroup": group, "tranStateTableOffset": str(half[1]), "commitLogOffset": str(half[0]),
        "commitOrRollback": str(kind), "fromTransactionCheck": "true" if from_check else "false",
        "msgId": half[2], "transactionId": half[2],
    })


@pytest.mark.req("TXN-1")
@pytest.mark.needs("remoting_wire", "pull")
def test_a_half_message_is_delivered_only_when_committed(target: WireTarget, client: Clients) -> None:
    br = client(target.broker_addr)
    target.create_topic("TX1", 1)
    topic, group, producer = target.namespaced("TX1"), target.namespaced("GTX1"), target.namespaced("PTX1")
    kept, dropped = _half(br, topic, producer, b"commit me"), _half(br, topic, producer, b"roll me back")
    absent_for(target, br, group, topic, 1.0)  # TXN-1: invisible until ended
    _end(br, producer, dropped, ROLLBACK)
    _end(br, producer, kept, COMMIT)
    got = wait_for_copies(target, br, group, topic, 1, 0.0)
    assert [(m.body, m.msg_id) for m in got] == [(b"commit me", kept[2])], (
        f"TXN-1: after one commit and one rollback the topic holds {[(m.body, m.msg_id) for m in got]}")
    if "clock_control" in target.capabilities:
        target.advance(int(ROLLBACK_WATCH_S * 1000))
    else:
        time.sleep(ROLLBACK_WATCH_S)
    assert [m.body for m in copies(br, group, topic)] == [b"commit me"], "TXN-1: a rolled-back message was delivered"


# -- TXN-2 ---------------------------------------------------------------------------------------------------
def _producer_heartbeat(br: RemotingClient, producer: str) -> None:
    body = json.dumps({"clientID": "mqtck-txn@1", "consumerDataSet": [], "producerDataSet": [{"groupName": producer}]})
    r = br.invoke(RequestCode.HEART_BEAT, {}, body.encode(), timeout_s=PATIENCE_S)
    assert r.code == ResponseCode.SUCCESS, f"TXN-2: producer heartbeat: code {r.code} {r.remark}"


def _checks(br: RemotingClient, uniq: str) -> list[Any]:
    """The CHECK_TRANSACTION_STATE requests ``br`` got for the half whose UNIQ_KEY is ``uniq`` (by the header's
    ``msgId``: upstream re-puts the half before each check, so its offsets change from check to check)."""
    return [r for r in br.server_requests if r.code == RequestCode.CHECK_TRANSACTION_STATE
            and r.ext_fields.get("msgId") == uniq]


def _first_check_due(target: WireTarget, slow: bool) -> None:
    """Let the first check round after the half's timeout come: simulated, or waited for in the slow profile."""
    if "clock_control" in target.capabilities:
        target.advance(CHECK_INTERVAL_MS + CHECK_TIMEOUT_MS)
    elif not slow:
        pytest.skip(f"not applicable: the first check comes up to {(CHECK_INTERVAL_MS + CHECK_TIMEOUT_MS) // 1000} s "
                    "after the send on real time (transactionCheckInterval 60 s); the slow profile (--slow) waits")


@pytest.mark.req("TXN-2.checked")
@pytest.mark.needs("remoting_wire", "pull")
def test_an_unended_half_is_checked_back_and_the_answer_ends_it(
        target: WireTarget, client: Clients, slow: bool) -> None:
    br = client(target.broker_addr)
    target.create_topic("TX2", 1)
    topic, group, producer = target.namespaced("TX2"), target.namespaced("GTX2"), target.namespaced("PTX2")
    _producer_heartbeat(br, producer)
    answered = _half(br, topic, producer, b"checked")
    _first_check_due(target, slow)
    wait_s = PATIENCE_S if "clock_control" in target.capabilities else (
        CHECK_INTERVAL_MS + CHECK_TIMEOUT_MS) / 1000 + PATIENCE_S
    assert wait_until(lambda: _checks(br, answered[2]), wait_s), f"TXN-2: no CHECK_TRANSACTION_STATE in {wait_s} s"
    check = _checks(br, answered[2])[0]
    record = decode_records(check.body)[0]
    assert (record.topic, record.body, record.properties.get("UNIQ_KEY")) == (topic, b"checked", answered[2]), (
        f"TXN-2: the check's message {record.topic} {record.body!r} {record.properties}")
    # The producer answers with the check's own offsets (the Java client's checkTransactionState).
    checked = (int(check.ext_fields["commitLogOffset"]), int(check.ext_fields["tranStateTableOffset"]), answered[2])
    _end(br, producer, checked, COMMIT, from_check=True)
    got = wait_for_copies(target, br, group, topic, 1, 0.0)
    assert [m.body for m in got] == [b"checked"], f"TXN-2: after the checked commit {[m.body for m in got]}"


@pytest.mark.req("TXN-2.max")
@pytest.mark.needs("remoting_wire", "pull", "clock_control")
def test_an_unanswered_half_is_checked_at_most_check_max_times(target: WireTarget, client: Clients) -> None:
    """Needs clock control: 15 checks a minute apart are a quarter of an hour of real time."""
    br = client(target.broker_addr)
    target.create_topic("TX3", 1)
    topic, group, producer = target.namespaced("TX3"), target.namespaced("GTX3"), target.namespaced("PTX3")
    _producer_heartbeat(br, producer)
    silent = _half(br, topic, producer, b"never answered")
    target.advance(CHECK_TIMEOUT_MS)
    for _ in range(CHECK_MAX + 2):
        target.advance(CHECK_INTERVAL_MS)
    wait_until(lambda: len(_checks(br, silent[2])) > CHECK_MAX, 1.0)
    assert 1 <= len(_checks(br, silent[2])) <= CHECK_MAX, (
        f"TXN-2: {len(_checks(br, silent[2]))} checks of an unanswered half, at most {CHECK_MAX}")
    assert copies(br, group, topic) == [], "TXN-2: an unanswered half was delivered"


# -- PERM-1, PERM-2, PERM-3 ----------------------------------------------------------------------------------
def _update_topic(br: RemotingClient, topic: str, read: int, write: int, perm: int) -> Any:
    """UPDATE_AND_CREATE_TOPIC as ``mqadmin updateTopic`` / ``updateTopicPerm`` writes it."""
    return br.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": read, "writeQueueNums": write, "perm": perm,
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}, timeout_s=PATIENCE_S)


def _queue_data(target: WireTarget, ns: RemotingClient, topic: str) -> dict[str, Any]:
    r = route(ns, topic)
    assert r.code == ResponseCode.SUCCESS, f"route of {topic}: code {r.code} {r.remark}"
    ours = [b["brokerName"] for b in loads_body(r.body)["brokerDatas"]
            if b.get("brokerAddrs", {}).get("0") == target.broker_addr]
    return next(q for q in loads_body(r.body)["queueDatas"] if q["brokerName"] in ours)


@pytest.mark.req("PERM-1")
@pytest.mark.needs("remoting_wire")
def test_a_read_only_topic_shows_perm_4_in_its_route(target: WireTarget, client: Clients) -> None:
    br, ns = client(target.broker_addr), client(target.namesrv)
    target.create_topic("PM1", 2)
    topic = target.namespaced("PM1")
    r = _update_topic(br, topic, 2, 2, 4)
    assert r.code == ResponseCode.SUCCESS, f"PERM-1: updateTopic -p 4: code {r.code} {r.remark}"
    assert wait_until(lambda: _queue_data(target, ns, topic)["perm"] == 4), (
        f"PERM-1: the route still shows {_queue_data(target, ns, topic)}")
    assert _update_topic(br, topic, 2, 2, 6).code == ResponseCode.SUCCESS
    assert wait_until(lambda: _queue_data(target, ns, topic)["perm"] == 6), "PERM-1: perm 6 again not in the route"


@pytest.mark.req("PERM-2")
@pytest.mark.needs("remoting_wire")
def test_a_send_to_a_topic_without_write_permission_is_refused(target: WireTarget, client: Clients) -> None:
    br = client(target.broker_addr)
    target.create_topic("PM2", 1)
    topic = target.namespaced("PM2")
    assert _update_topic(br, topic, 1, 1, 4).code == ResponseCode.SUCCESS
    refused = _send(br, topic, {"UNIQ_KEY": _uniq()}, b"no")
    assert refused.code == ResponseCode.NO_PERMISSION, (
        f"PERM-2: a send to a read-only topic: code {refused.code} {refused.remark}, not NO_PERMISSION (16)")
    assert _update_topic(br, topic, 1, 1, 6).code == ResponseCode.SUCCESS
    again = _send(br, topic, {"UNIQ_KEY": _uniq()}, b"yes")
    assert again.code == ResponseCode.SUCCESS, f"PERM-2: a send after perm 6: code {again.code} {again.remark}"


@pytest.mark.req("PERM-3")
@pytest.mark.needs("remoting_wire")
def test_read_and_write_queue_counts_are_kept_apart_or_refused(target: WireTarget, client: Clients) -> None:
    br, ns = client(target.broker_addr), client(target.namesrv)
    target.create_topic("PM3", 4)
    topic = target.namespaced("PM3")
    r = _update_topic(br, topic, 2, 4, 6)
    if r.code == ResponseCode.SUCCESS:
        shown = wait_until(lambda: (lambda q: (q["readQueueNums"], q["writeQueueNums"]) == (2, 4))(
            _queue_data(target, ns, topic)))
        data = _queue_data(target, ns, topic)
        assert shown, f"PERM-3: updateTopic -r 2 -w 4 answered success, the route shows {data}"
    else:
        data = _queue_data(target, ns, topic)
        assert "QueueNums" in (r.remark or ""), f"PERM-3: the refusal does not name the field: {r.remark!r}"
        assert (data["readQueueNums"], data["writeQueueNums"]) == (4, 4), f"PERM-3: a refusal changed the route {data}"
