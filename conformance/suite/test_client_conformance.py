"""Client behaviour (CLIENT, REBAL, CONSUME, ALO) through fixed, seeded simulations.

A target with the ``client_simulation`` capability runs a scenario of ``reference.sim`` with its
client (the reference target: the reference client, or a seeded fault's client components) and
returns the trace rows; each test checks the rows with ``reference.sim.judges``. The scenarios are
fixed and seeded, so a verdict is reproducible; each is chosen to exercise one rule hard (a join
while slow listeners are busy, a stream of small bursts under slow out-of-order listeners, three
consumers rebalancing, ...).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest

from conformance.targets import SimulationTarget
from reference.broker.send_back import DELAY_LEVELS_MS, FIRST_RETRY_DELAY_LEVEL
from reference.client.config import MessageModel
from reference.rules.topics import retry_topic
from reference.rules.trace_schema import missing_columns
from reference.sim.judges import check_trace
from reference.sim.network import NetworkConfig
from reference.sim.scenario import Scenario, SimConfig
from reference.sim.steps import (
    BrokerRestart,
    Crash,
    FailPercent,
    Join,
    Leave,
    Produce,
    Retention,
    SlowConsumer,
    timeline,
)

pytestmark = pytest.mark.needs("client_simulation")

#: A join while the first consumer's slow listeners are busy, then more membership changes.
DROP = Scenario(
    SimConfig(seed=7, consumers=1, busy_max_ms=2_000),
    timeline(Produce(40), 300, Join(), 3_000, Produce(20), Join(), 5_000, Leave(0), Produce(20),
     2_000, Crash(1), Produce(10)),
)
#: A stream of small bursts consumed out of order by slow listeners, with commits all along.
STREAM = Scenario(
    SimConfig(seed=3, consumers=2, busy_max_ms=3_000),
    timeline(*(step for _ in range(30) for step in (Produce(5), 300))),
)
#: Three consumers and membership changes: ownership must converge to one owner per queue.
OWNERSHIP = tuple(
    Scenario(
        SimConfig(seed=seed, consumers=3, queues=4),
        timeline(Produce(20), 25_000, Join(), 25_000, Leave(1), Produce(20), 25_000),
    )
    for seed in (1, 2, 3)
)
#: Everything at once on a lossy network.
STORM = Scenario(
    SimConfig(seed=11, consumers=3, network=NetworkConfig(drop_rate=0.05, sync_fault_rate=0.05), busy_max_ms=500),
    timeline(Produce(30), 1_000, Crash(0), Produce(20), FailPercent(1, 30), Join(), 5_000,
     Crash(1, silent=True), Produce(20), Retention(), BrokerRestart(crash=True, down_ms=2_000), 3_000,
     Join(revive=True), Produce(20), Leave(0), SlowConsumer(1, 2_000), Produce(20), 20_000),
)
#: Retry and dead letter: two messages always fail (max 2 reconsumes), others fail now and then; a
#: fifth of the synchronous calls (send-backs among them) fail, and the broker restarts meanwhile.
RETRY = Scenario(
    SimConfig(seed=5, consumers=2, fail_percent=30, always_fail=frozenset({"p-3", "p-8"}), max_reconsume_times=2,
              network=NetworkConfig(sync_fault_rate=0.2)),
    timeline(Produce(20), 5_000, BrokerRestart(crash=False, down_ms=1_000), 1_500, Produce(10)),
)
#: Retention deletes messages the consumer has not reached: its offset is illegal and moves.
MOVED = Scenario(
    SimConfig(seed=9, consumers=1, busy_max_ms=4_000, commit_log_segment_bytes=8 * 1024),
    timeline(Produce(60), 10, Produce(60), 10, Retention(), 40_000, Produce(10)),
)
#: Broadcasting consumers that crash and come back with their client id.
BROADCAST = Scenario(
    SimConfig(seed=4, consumers=3, model=MessageModel.BROADCASTING, busy_max_ms=300, fail_percent=20),
    timeline(Produce(30), 2_000, Crash(0), Produce(20), 11_000, Join(revive=True), Produce(20),
     Crash(2, silent=True), Join(), Produce(10)),
)


def _simulate(target: SimulationTarget, scenario: Scenario) -> list[dict[str, Any]]:
    rows = target.simulate(scenario)
    assert rows, "the simulation recorded no rows"
    return rows


def _clean(rows: list[dict[str, Any]], checks: tuple[str, ...], requirements: tuple[str, ...]) -> None:
    report = check_trace(rows, only=checks)
    findings = [f for f in report.findings if f.requirement in requirements]
    assert not findings, report.summary()


@pytest.mark.req("CLIENT-1", "CLIENT-6")
def test_pull_loop_and_trace_rows(target: SimulationTarget) -> None:
    rows = _simulate(target, STORM)
    bad = [(r["event"], missing_columns(r)) for r in rows if missing_columns(r)]
    assert not bad, f"rows lacking required columns: {bad[:5]}"
    client_rows = [r for r in rows if r["source"].startswith("client:")]
    events = {r["event"] for r in client_rows}
    assert {"SUBSCRIBE", "ASSIGN", "REVOKE", "PULL_REQ", "PULL_RESP", "DELIVER", "CONSUME", "COMMIT", "CRASH"} <= events
    in_flight: dict[tuple[str, str | None, int | None], int] = {}
    for row in client_rows:
        key = (row["source"], row.get("topic"), row.get("queue_id"))
        if row["event"] == "PULL_REQ":
            assert row["max_nums"] == 32 and row["suspend_ms"] == 15_000, row
            sent = in_flight.get(key)
            # One pull per queue at a time: the next follows an answer, or a failure (not traced: a
            # timeout after 30 s, a refusal or a lost connection) and the 3 s exception delay.
            assert sent is None or row["ts"] - sent >= 3_000_000, f"two pulls of one queue in flight: {row}"
            in_flight[key] = row["ts"]
        elif row["event"] == "PULL_RESP":
            in_flight.pop(key, None)
        elif row["event"] in ("REVOKE", "CRASH"):
            for k in [k for k in in_flight if k[0] == row["source"]]:
                del in_flight[k]


@pytest.mark.req("REBAL-4")
def test_a_dropped_queue_is_not_pulled(target: SimulationTarget) -> None:
    rows = _simulate(target, DROP)
    assert any(r["event"] == "REVOKE" for r in rows), "the scenario must take queues away"
    _clean(rows, ("drop",), ("REBAL-4",))


@pytest.mark.req("REBAL-5")
def test_in_flight_results_of_a_dropped_queue_are_not_committed(target: SimulationTarget) -> None:
    rows = _simulate(target, DROP)
    discarded = [r for r in rows if r["event"] == "CONSUME" and '"dropped"' in (r.get("detail") or "")]
    assert discarded, "the scenario must drop queues while their listeners run"
    _clean(rows, ("drop",), ("REBAL-5",))


@pytest.mark.req("REBAL-6")
def test_new_owner_starts_from_the_committed_offset(target: SimulationTarget) -> None:
    for scenario in (DROP, STORM):
        _clean(_simulate(target, scenario), ("start",), ("REBAL-6",))


@pytest.mark.req("REBAL-2")
def test_each_queue_ends_with_one_owner(target: SimulationTarget) -> None:
    for scenario in OWNERSHIP:
        _clean(_simulate(target, scenario), ("ownership",), ("REBAL-2",))


@pytest.mark.req("REBAL-1")
def test_members_rebalance_at_start_and_when_the_group_changes(target: SimulationTarget) -> None:
    rows = _simulate(target, OWNERSHIP[0])
    subscribed = {r["client_id"]: r["ts"] for r in rows
                  if r["event"] == "SUBSCRIBE" and r["source"].startswith("client")}
    first_assign: dict[str, int] = {}
    epochs = defaultdict(list)
    for r in rows:
        if r["event"] in ("ASSIGN", "REVOKE") and r["source"].startswith("client"):
            first_assign.setdefault(r["client_id"], r["ts"])
            epochs[r["client_id"]].append(r["epoch"])
    assert all(e == sorted(e) for e in epochs.values()), "a later round has a higher epoch"
    assert all(first_assign[c] - subscribed[c] <= 1_000_000 for c in first_assign), "a round at start"
    # A join and a leave are announced (NOTIFY_CONSUMER_IDS_CHANGED): every member rebalances at once, so a second
    # later each queue has exactly one owner again, not at the next 20 s round.
    joined = max(subscribed.values())
    left = next(r["ts"] for r in rows if r["event"] == "UNSUBSCRIBE" and r["source"].startswith("client"))
    queues = {r["queue_id"] for r in rows if r["event"] == "ASSIGN"}
    for change, at in (("a join", joined), ("a leave", left)):
        owners = _owners_at(rows, at + 1_000_000)
        assert {q: len(owners.get(q, ())) for q in queues} == dict.fromkeys(queues, 1), (
            f"1 s after {change} the queues' owners are {owners}: the group did not rebalance at once")


def _owners_at(rows: list[dict[str, Any]], ts: int) -> dict[int, set[str]]:
    """Which clients own which queue at ``ts``, from the clients' ASSIGN and REVOKE rows up to then."""
    owners: dict[int, set[str]] = defaultdict(set)
    for r in rows:
        if r["ts"] > ts or not r["source"].startswith("client"):
            continue
        if r["event"] == "ASSIGN":
            owners[r["queue_id"]].add(r["client_id"])
        elif r["event"] == "REVOKE":
            owners[r["queue_id"]].discard(r["client_id"])
    return dict(owners)


@pytest.mark.req("CONSUME-2")
def test_commits_never_pass_a_message_in_flight(target: SimulationTarget) -> None:
    for scenario in (STREAM, DROP, STORM):
        _clean(_simulate(target, scenario), ("commit_safety",), ("CONSUME-2",))


@pytest.mark.req("CLIENT-3")
def test_each_pull_continues_from_the_answer(target: SimulationTarget) -> None:
    rows = [r for r in _simulate(target, STORM) if r["source"].startswith("client:")]
    last_answer: dict[tuple[str, str | None, int | None], dict[str, Any]] = {}
    checked = 0
    for row in rows:
        key = (row["source"], row.get("topic"), row.get("queue_id"))
        if row["event"] == "PULL_RESP":
            last_answer[key] = row
        elif row["event"] in ("REVOKE", "ASSIGN"):
            last_answer.pop(key, None)
        elif row["event"] == "PULL_REQ" and key in last_answer:
            answer = last_answer.pop(key)
            if answer["status"] not in ("OFFSET_TOO_SMALL", "OFFSET_OVERFLOW_BADLY", "NO_MESSAGE_IN_QUEUE"):
                assert row["offset"] == answer["next_offset"], f"pulled {row['offset']} after {answer}"
                checked += 1
    assert checked > 10


@pytest.mark.req("CONSUME-1")
def test_a_dropped_queues_waiting_batches_never_reach_the_listener(target: SimulationTarget) -> None:
    """Seed 001 lines 777-780: a batch whose queue was dropped before its call is skipped: no listener call
    (DELIVER) of a queue after its REVOKE, until it is assigned again."""
    rows = _simulate(target, DROP)
    dropped: set[tuple[str, str | None, int | None]] = set()
    for row in rows:
        if not row["source"].startswith("client:"):
            continue
        key = (row["source"], row.get("topic"), row.get("queue_id"))
        if row["event"] == "REVOKE":
            dropped.add(key)
        elif row["event"] == "ASSIGN":
            dropped.discard(key)
        elif row["event"] == "DELIVER":
            assert key not in dropped, f"a listener call for a dropped queue: {row}"
    skipped = [r for r in rows if r["event"] == "CONSUME" and '"dropped"' in (r.get("detail") or "")]
    assert skipped, "the scenario must drop queues with batches waiting"


@pytest.mark.req("CONSUME-7")
def test_at_most_20_listener_calls_at_once(target: SimulationTarget) -> None:
    rows = _simulate(target, STREAM)
    running: dict[str, int] = defaultdict(int)
    peak: dict[str, int] = defaultdict(int)
    for row in rows:
        if row["event"] == "DELIVER":
            running[row["client_id"]] += 1
            peak[row["client_id"]] = max(peak[row["client_id"]], running[row["client_id"]])
        elif row["event"] == "CONSUME":
            running[row["client_id"]] -= 1
    assert peak and max(peak.values()) <= 20, f"concurrent listener calls per consumer: {dict(peak)}"
    assert max(peak.values()) > 1, "slow listeners run side by side"


@pytest.mark.req("CONSUME-4")
def test_a_failed_send_back_is_consumed_again_locally(target: SimulationTarget) -> None:
    rows = _simulate(target, RETRY)
    local = [r for r in rows if r["event"] == "CONSUME" and r.get("detail") == '{"retry": "local"}']
    assert local, "the scenario must make a send-back fail"
    for failed in local:
        again = next(r for r in rows if r["event"] == "DELIVER" and r["msg_id"] == failed["msg_id"]
                     and r["client_id"] == failed["client_id"] and r["ts"] > failed["ts"])
        assert again["ts"] - failed["ts"] >= 5_000_000
        before = [r["reconsume_times"] for r in rows if r["event"] == "DELIVER" and r["msg_id"] == failed["msg_id"]
                  and r["ts"] <= failed["ts"]]
        assert again["reconsume_times"] == before[-1] + 1
    _clean(rows, ("commit_safety",), ("CONSUME-2",))


@pytest.mark.req("CONSUME-9")
def test_offsets_persist_every_5s(target: SimulationTarget) -> None:
    """Split from the shutdown test below: the period is upstream's (CONSUME-9), not seed 001's."""
    rows = _simulate(target, DROP)
    gone = {r["source"] for r in rows if r["event"] in ("UNSUBSCRIBE", "CRASH") and r["source"].startswith("client:")}
    keeper = next(r["source"] for r in rows if r["event"] == "SUBSCRIBE" and r["source"].startswith("client:")
                  and r["source"] not in gone)
    kept = [r for r in rows if r["source"] == keeper]
    started = next(r["ts"] for r in kept if r["event"] == "SUBSCRIBE")
    # Other commits: a pull piggybacks its queue's offset; a queue given away is persisted first.
    other = {r["ts"] for r in kept if r["event"] in ("PULL_REQ", "REVOKE")}
    persists = sorted({r["ts"] for r in kept if r["event"] == "COMMIT"} - other)
    assert len(persists) >= 3, "a consumer that stays persists periodically"
    assert all((t - started) % 5_000_000 == 0 and t - started >= 10_000_000 for t in persists), (
        "persisted every 5 s from 10 s after start"
    )


@pytest.mark.req("CONSUME-5")
def test_a_leaver_persists_gives_up_and_unregisters_and_the_rest_take_over(target: SimulationTarget) -> None:
    rows = _simulate(target, DROP)
    leaver = next(r for r in rows if r["event"] == "UNSUBSCRIBE" and r["source"].startswith("client:"))
    mine = [r for r in rows if r["source"] == leaver["source"]]
    revoked = [r for r in mine if r["event"] == "REVOKE" and '"shutdown"' in r["detail"]]
    assert revoked and all(r["ts"] == leaver["ts"] for r in revoked)
    committed_at_leave = {r["queue_id"]: r["offset"] for r in mine
                          if r["event"] == "COMMIT" and r["ts"] == leaver["ts"]}
    assert set(committed_at_leave) >= {r["queue_id"] for r in revoked if r["topic"] == "T"}
    broker_saw = [r for r in rows if r["event"] == "UNSUBSCRIBE" and r["source"].startswith("broker")
                  and r["client_id"] == leaver["client_id"]]
    assert broker_saw and broker_saw[0]["ts"] == leaver["ts"], "unregistered at once"
    taken: dict[int, dict[str, Any]] = {}
    after_leave = [r for r in rows if r["event"] == "ASSIGN" and r["ts"] > leaver["ts"] and r["topic"] == "T"]
    for r in after_leave:
        if r["queue_id"] in committed_at_leave:
            taken.setdefault(r["queue_id"], r)
    assert set(taken) == set(committed_at_leave), "someone takes each queue over"
    assert all(r["ts"] - leaver["ts"] < 1_000_000 for r in taken.values()), "the rest rebalance at once"
    assert all(r["offset"] == committed_at_leave[q] for q, r in taken.items()), "from the offset persisted at leave"
    _clean(rows, ("start",), ("REBAL-6",))


@pytest.mark.req("CONSUME-6")
def test_broadcasting_drops_failed_messages(target: SimulationTarget) -> None:
    rows = _simulate(target, BROADCAST)
    failed = [r for r in rows if r["event"] == "CONSUME" and r["status"] != "OK"
              and '"dropped"' not in (r.get("detail") or "")]
    assert failed and all(json.loads(r["detail"]) == {"discarded": True} for r in failed)
    assert not [r for r in rows if r["event"] == "DELIVER" and "retry_topic" in (r.get("detail") or "")]


@pytest.mark.req("CONSUME-3.client", "CONSUME-3.broker")
def test_failed_messages_are_consumed_again_from_the_retry_topic(target: SimulationTarget) -> None:
    rows = _simulate(target, RETRY)
    consumes = [r for r in rows if r["event"] == "CONSUME"]
    retried_ok = [r for r in consumes if r["status"] == "OK" and "retry_topic" in (r.get("detail") or "")]
    assert retried_ok, "no message was consumed OK from %RETRY%"
    assert all(r["topic"] == "T" for r in retried_ok), (
        f"the listener saw a retried message under another topic: {sorted({r['topic'] for r in retried_ok})}")
    _clean(rows, ("at_least_once", "duplicates"), ("ALO-1", "ALO-3"))


@pytest.mark.req("CONSUME-10.retry", "CONSUME-10.dead-letter", "CONSUME-10.restart")
def test_failed_messages_wait_their_level_and_dead_letter_at_max_reconsume_times(target: SimulationTarget) -> None:
    """The RETRY simulation seen from the broker's side of send-back (CONSUME-10): a copy from %RETRY% waits its
    delay level after the failure that sent it back, a copy sent back before the broker's clean restart is delivered
    after it, and a message failing at maxReconsumeTimes (2 here) goes to %DLQ% instead."""
    rows = _simulate(target, RETRY)
    consumes = [r for r in rows if r["event"] == "CONSUME"]
    dead = {r["msg_id"] for r in consumes if "dead_letter" in (r.get("detail") or "")}
    assert dead == {"p-3", "p-8"}, f"dead-lettered: {dead}"
    delivered: dict[tuple[str, str, int | None], int] = {}
    failed_at: dict[tuple[str, int], tuple[int, int | None]] = {}
    for row in rows:
        if row["event"] in ("DELIVER", "CONSUME"):
            copy = json.loads(row["detail"]).get("retry_offset") if row.get("detail") else None
            key = (row["client_id"], row["msg_id"], copy)
            if row["event"] == "DELIVER":
                delivered[key] = row["reconsume_times"]
            elif '"dead_letter"' in (row.get("detail") or ""):
                assert delivered[key] >= 2, f"dead-lettered before maxReconsumeTimes: {row}"
            elif f'"retry": "{retry_topic("G")}"' in (row.get("detail") or ""):
                assert delivered[key] < 2, f"sent to %RETRY% after maxReconsumeTimes: {row}"
                # The earliest failure: a rebalance may deliver a message twice, and each failure sends a copy.
                failed_at.setdefault((row["msg_id"], delivered[key] + 1), (row["ts"], copy))
    # A copy from %RETRY% (not a local re-consumption after a failed send-back) waits its level: 3 + the
    # reconsumeTimes of the delivery that failed.
    copies = [r for r in rows if r["event"] == "DELIVER" and '"retry_topic"' in (r.get("detail") or "")]
    assert copies, "no copy was delivered from %RETRY%"
    for row in copies:
        sent_back, failed_copy = failed_at.get((row["msg_id"], row["reconsume_times"]), (None, None))
        # The same copy again is a local re-consumption after a send-back that failed (CONSUME-4), not a new one.
        if sent_back is not None and json.loads(row["detail"])["retry_offset"] != failed_copy:
            wait_ms = DELAY_LEVELS_MS[FIRST_RETRY_DELAY_LEVEL + row["reconsume_times"] - 2]
            assert row["ts"] - sent_back >= wait_ms * 1000, (
                f"{row['msg_id']} came back from %RETRY% {(row['ts'] - sent_back) // 1000} ms after it failed, "
                f"before its level's {wait_ms} ms")
    restarted = next(r["ts"] for r in rows if r["event"] == "RESTART")
    assert [r for r in copies if failed_at.get((r["msg_id"], 1), (restarted, None))[0] < restarted < r["ts"]], (
        "no copy sent back before the broker restart was delivered after it")


@pytest.mark.req("CLIENT-4")
def test_illegal_offset_moves_to_next_begin(target: SimulationTarget) -> None:
    rows = _simulate(target, MOVED)
    moved = [r for r in rows if r["event"] == "PULL_RESP" and r["source"].startswith("client:")
             and r["status"] == "OFFSET_TOO_SMALL"]
    assert moved, "retention must have left the consumer behind the queue's min offset"
    for resp in moved:
        queue = (resp["topic"], resp["queue_id"])
        later = [r for r in rows if r["ts"] >= resp["ts"] and r["source"] == resp["source"]
                 and (r.get("topic"), r.get("queue_id")) == queue]
        revoke = next(r for r in later if r["event"] == "REVOKE")
        assert '"offset_moved"' in revoke["detail"]
        commits = [r for r in later if r["event"] == "COMMIT" and r["ts"] <= revoke["ts"]]
        assert commits and commits[-1]["offset"] == resp["next_offset"], "nextBeginOffset is committed first"
        assert not [r for r in later if r["event"] == "PULL_REQ" and r["ts"] < revoke["ts"]], "no pull once dropped"
        assign = next(r for r in later if r["event"] == "ASSIGN" and r["ts"] > revoke["ts"])
        assert assign["offset"] >= resp["next_offset"]
    _clean(rows, ("drop", "start", "commit_safety", "at_least_once"), ("REBAL-4", "REBAL-5", "REBAL-6", "CONSUME-2",
                                                                       "ALO-1"))


@pytest.mark.req("ALO-1", "ALO-3")
def test_nothing_lost_under_faults(target: SimulationTarget) -> None:
    for scenario in (STORM, DROP, *OWNERSHIP):
        rows = _simulate(target, scenario)
        report = check_trace(rows, only=("at_least_once", "duplicates"))
        assert not report.of("ALO-1", "ALO-3"), report.summary()


@pytest.mark.req("ALO-2", "REBAL-3")
def test_broadcasting_consumers_each_get_everything(target: SimulationTarget) -> None:
    rows = _simulate(target, BROADCAST)
    _clean(rows, ("at_least_once", "ownership", "commit_safety", "start", "duplicates"),
           ("ALO-2", "ALO-3", "REBAL-3", "CONSUME-2", "REBAL-6"))


@pytest.mark.req("ALO-4")
def test_a_broadcasting_consumer_back_gets_what_was_sent_while_it_was_down(target: SimulationTarget) -> None:
    """Split from the test above: the come-back clause is upstream's (LocalFileOffsetStore), not the seeds'."""
    rows = _simulate(target, BROADCAST)
    assert [r for r in rows if r["event"] == "CRASH" and r["source"].startswith("client:")], "a consumer must crash"
    _clean(rows, ("at_least_once",), ("ALO-4",))
