"""The simulator: determinism, the faults it injects, and what a run reports."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from reference.client.config import MessageModel
from reference.clock import ProcessClock, SimClock
from reference.rules.trace_schema import missing_columns
from reference.sim.judges import check_trace
from reference.sim.network import NetworkConfig, SimLink
from reference.sim.scenario import Scenario, SimConfig
from reference.sim.simulation import Simulation, run_scenario
from reference.sim.steps import (
    BrokerRestart,
    Crash,
    FailNext,
    FailPercent,
    Join,
    Leave,
    Produce,
    Retention,
    SlowConsumer,
    timeline,
)

BUSY = Scenario(
    SimConfig(seed=21, consumers=2, network=NetworkConfig(drop_rate=0.05, sync_fault_rate=0.05)),
    timeline(Produce(30), 500, Join(), Crash(0), Produce(20), SlowConsumer(0, 500), FailPercent(1, 40),
     3_000, Leave(1), Produce(10)),
)


def strip_run(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "run"} for r in rows]


@pytest.mark.req("TRACE-1")
def test_same_scenario_same_trace_and_every_row_is_well_formed() -> None:
    first = run_scenario(BUSY)
    second = run_scenario(BUSY)
    assert first.rows == second.rows
    assert first.quiet and first.outstanding == 0
    assert all(not missing_columns(r) for r in first.rows or [])
    other = run_scenario(Scenario(SimConfig(**{**BUSY.config.__dict__, "seed": 22}), BUSY.steps))
    assert strip_run(other.rows or []) != strip_run(first.rows or [])
    seqs: dict[str, list[int]] = {}
    for row in first.rows or []:
        seqs.setdefault(row["source"], []).append(row["seq"])
    assert all(s == sorted(set(s)) for s in seqs.values()), "seq strictly increases per source"


@pytest.mark.req("ALO-1")
def test_a_crashed_consumer_does_nothing_more_and_its_work_is_redone() -> None:
    result = run_scenario(Scenario(SimConfig(seed=3, consumers=2, busy_max_ms=2_000),
                                   timeline(Produce(40), 500, Crash(0), 1_000, Produce(10))))
    rows = result.rows or []
    crash = next(r for r in rows if r["event"] == "CRASH")
    after = [r for r in rows if r["source"] == crash["source"] and r["seq"] > crash["seq"]]
    assert [r["event"] for r in after] == ["END"]
    dropped = [r for r in rows if r["event"] == "UNSUBSCRIBE" and r["source"].startswith("broker")]
    assert dropped and dropped[0]["ts"] - crash["ts"] <= 20_000, "the reset connection is noticed at once"
    report = check_trace(rows)
    assert not report.findings, report.summary()
    assert report.duplicates["crash"] > 0, "in-flight work of the crashed consumer is consumed again"


def test_a_silent_crash_is_noticed_when_the_channel_expires() -> None:
    result = run_scenario(Scenario(SimConfig(seed=4, consumers=2), timeline(Produce(8), 100, Crash(0, silent=True))))
    rows = result.rows or []
    crash = next(r for r in rows if r["event"] == "CRASH")
    gone = next(r for r in rows if r["event"] == "UNSUBSCRIBE" and r["source"].startswith("broker"))
    assert 120_000_000 < gone["ts"] - crash["ts"] <= 160_000_000
    assert not check_trace(rows).findings


@pytest.mark.req("ALO-1", "CONSUME-3.client")
@pytest.mark.parametrize("crash", [False, True])
def test_broker_restart_recovers_the_store_and_nothing_is_lost(crash: bool) -> None:
    scenario = Scenario(
        SimConfig(seed=5, consumers=2, fail_percent=30),
        timeline(Produce(30), 2_000, BrokerRestart(crash=crash, down_ms=3_000), Produce(10), 4_000, Produce(10)),
    )
    result = run_scenario(scenario)
    rows = result.rows or []
    events = Counter(r["event"] for r in rows if r["source"].startswith("broker"))
    assert events["RESTART"] == 1 and events["CRASH"] == 1
    (stop,) = [r for r in rows if r["source"].startswith("broker") and r["event"] == "CRASH"]
    assert ('"clean"' in (stop.get("detail") or "")) is not crash, "a clean stop says so; a kill does not"
    assert result.sent == 40, "the burst sent while the broker was down was refused, not lost"
    report = check_trace(rows)
    assert not report.findings, report.summary()
    assert report.stats["consumed_ok"] >= 40


@pytest.mark.req("ALO-1")
def test_retention_expires_unconsumed_messages_without_a_finding() -> None:
    scenario = Scenario(
        SimConfig(seed=6, consumers=1, busy_max_ms=3_000, commit_log_segment_bytes=8 * 1024),
        timeline(Produce(80), Retention(), 1_000, Produce(5)),
    )
    result = run_scenario(scenario)
    rows = result.rows or []
    assert any(r["event"] == "RETENTION" for r in rows)
    report = check_trace(rows)
    assert not report.findings, report.summary()
    assert report.stats["consumed_ok"] < 85, "some messages expired before they were consumed"


@pytest.mark.req("ALO-2", "ALO-4", "REBAL-3")
def test_broadcasting_revived_consumer_catches_up() -> None:
    scenario = Scenario(
        SimConfig(seed=8, consumers=2, model=MessageModel.BROADCASTING),
        timeline(Produce(10), 12_000, Crash(0), Produce(10), 1_000, Join(revive=True), Produce(5)),
    )
    result = run_scenario(scenario)
    report = check_trace(result.rows or [])
    assert not report.findings, report.summary()
    assert result.live_clients and len(result.live_clients) == 2


def test_join_storm_and_leaves_settle_to_one_owner_per_queue() -> None:
    steps = timeline(Produce(20), *(Join() for _ in range(4)), 100, Leave(0), Leave(1), Produce(20), Join(), Leave(2))
    result = run_scenario(Scenario(SimConfig(seed=9, consumers=1), steps))
    assert result.quiet
    assert not check_trace(result.rows or []).findings


def test_a_group_with_nobody_left_gets_a_consumer_to_settle() -> None:
    result = run_scenario(Scenario(SimConfig(seed=10, consumers=1), timeline(Produce(5), Leave(0), Produce(5))))
    assert len(result.live_clients) == 1 and result.quiet
    assert not check_trace(result.rows or []).findings


def test_steps_on_an_empty_group_and_a_down_broker_are_harmless() -> None:
    steps = timeline(Crash(0), Leave(0), SlowConsumer(0, 1), FailPercent(0, 1), BrokerRestart(True, 5_000), Retention(),
             Produce(3), BrokerRestart(False, 10), 6_000, Join())
    result = run_scenario(Scenario(SimConfig(seed=11, consumers=1), steps))
    assert result.sent == 0 and result.quiet


def test_describe_and_timeline() -> None:
    result = run_scenario(Scenario(SimConfig(seed=12, consumers=1), (Produce(3),)))
    assert "Produce(count=3" in result.scenario.describe()
    text = result.timeline(limit=8)
    lines = text.splitlines()
    assert len(lines) == 9 and "rows elided" in lines[4]
    assert "client:" in text and "SUBSCRIBE" in text
    focused = result.timeline(msg_id="p-1", limit=50)
    assert "p-1" in focused and "p-2" not in focused
    assert "DELIVER" in result.timeline(queue=("T", 1), events=["DELIVER"])
    assert result.timeline(client="nobody", events=["DELIVER"]) == ""


def test_network_and_process_clock() -> None:
    with pytest.raises(ValueError):
        NetworkConfig(min_latency_ms=5, max_latency_ms=1)
    with pytest.raises(ValueError):
        NetworkConfig(drop_rate=1.0)
    clock = SimClock()
    fired: list[str] = []
    link = SimLink(clock, random.Random(1), NetworkConfig(min_latency_ms=3, max_latency_ms=3))
    link.to_client(lambda: fired.append("a"))
    clock.advance(2)
    assert fired == []
    clock.advance(1)
    assert fired == ["a"]
    assert sorted(link.unordered(["a", "b", "c", "d"])) == ["a", "b", "c", "d"]
    process = ProcessClock(clock)
    process.call_later(1, lambda: fired.append("b"))
    process.kill()
    clock.advance(10)
    assert fired == ["a"] and process.now_ms() == clock.now_ms()


def test_sink_can_be_any_trace_sink(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from reference.trace import JsonlSink

    path = tmp_path / "run.jsonl"
    result = Simulation(Scenario(SimConfig(seed=13, consumers=1), (Produce(2),)), sink=JsonlSink(path)).run()
    assert result.rows is None and result.events == len(path.read_text().splitlines())


def test_a_script_becomes_timed_steps_and_a_workload_refuses_what_it_cannot_play() -> None:
    steps = timeline(Produce(3), 500, Crash(0, down_ms=2_000), Join(), 1_000, 250, Leave(1))
    assert [s.at_ms for s in steps] == [0, 500, 500, 1_750]
    with pytest.raises(ValueError, match=r"pull and rebalance workload cannot play FailNext\(.*its steps are Produce"):
        run_scenario(Scenario(SimConfig(seed=1, consumers=1), (FailNext(0, 1),)))
    with pytest.raises(ValueError, match="batch has no meaning there"):
        run_scenario(Scenario(SimConfig(seed=1, consumers=1), (Produce(2, batch=3),)))
    from reference.sim import permit_sim, pop_sim
    with pytest.raises(ValueError, match=r"POP workload cannot play Leave"):
        pop_sim.run([Leave(0)])
    with pytest.raises(ValueError, match="silent has no meaning there"):
        permit_sim.run([Crash(0, 1_000, silent=True)])


@pytest.mark.req("ALO-1")
def test_a_crashed_consumer_with_a_down_time_comes_back_with_its_client_id() -> None:
    result = run_scenario(Scenario(SimConfig(seed=14, consumers=2),
                                   timeline(Produce(20), 1_000, Crash(0, down_ms=5_000), Produce(10))))
    rows = result.rows or []
    crash = next(r for r in rows if r["event"] == "CRASH")
    client = crash["source"].removeprefix("client:")
    assert result.stats["crashed"] == 0 and client in result.live_clients, "the same client id is back"
    later = [r for r in rows if r["source"] == crash["source"] and r["ts"] >= crash["ts"] + 5_000_000]
    assert any(r["event"] == "SUBSCRIBE" for r in later), "it subscribes again once its down time is over"
    assert not check_trace(rows).findings


def test_a_slow_spell_ends_when_its_time_is_over() -> None:
    from reference.sim.simulation import Simulation as Sim

    sim = Sim(Scenario(SimConfig(seed=15, consumers=1, busy_max_ms=50),
                       timeline(Produce(5), SlowConsumer(0, 3_000, for_ms=10_000))))
    sim.run()
    assert sim.consumers[0].listener.busy_max_ms == 50, "back to the configured time after the spell"
