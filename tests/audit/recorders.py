"""Traces recorded by the reference implementation, for "a recorded trace audits clean".

Each recorder drives real reference components on simulated time and records trace schema v1 into a
sink (``reference.trace.sink_for``: ``.jsonl``/``.jsonl.gz`` or a Parquet directory) and returns the
run it recorded. The audit tests run every entry of :data:`RECORDERS`: the broker alone, and the
client simulator (``reference.sim``) with crashes, departures, arrivals, failing listeners, retention
and a broker restart, in clustering and broadcasting mode. A new recorder added here is audited too.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from reference.broker.broker import Broker
from reference.broker.protocol import ConsumerData, PullMessageRequest, PullSysFlag, RecordingChannel
from reference.clock import SimClock
from reference.rules.filter import SubscriptionData
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.trace import Trace, sink_for

HOUR_MS = 3_600_000
FLAGS = int(PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION | PullSysFlag.COMMIT_OFFSET)
#: Segments small enough that retention deletes some after 72 h.
SMALL_STORE = dict(commit_log_segment_bytes=4096, consume_queue_units_per_segment=16)


def _pull_all(broker: Broker, clock: SimClock, channel: RecordingChannel, group: str, client: str,
              expression: str, offset: int) -> int:
    """Pull a queue until caught up (the last request is held); returns the next offset."""
    while True:
        request = PullMessageRequest(group, "T", 0, offset, max_msg_nums=8, sys_flag=FLAGS, commit_offset=offset,
                                     suspend_timeout_ms=15_000, subscription=expression, client_id=client)
        response = broker.pull(request, channel)
        clock.advance(3)
        if response is None:
            return offset
        if response.next_begin_offset == offset:
            return offset
        offset = response.next_begin_offset


def record_broker_trace(path: Path, run: str = "broker") -> str:
    """A broker on simulated time serving two groups (one filtering by tag) through catch-up pulls,
    long polls woken by arrivals, long polls that time out, commits, retention after 72 h, and pulls
    below the min offset and beyond the max offset."""
    clock = SimClock()
    sink = sink_for(path)
    trace = Trace(sink, run, clock)
    with tempfile.TemporaryDirectory(prefix="mqtck-audit-rec-") as tmp:
        broker = Broker(tmp, clock, store_config=MessageStoreConfig(**SMALL_STORE), trace=trace)
        broker.create_topic("T", 1)
        broker.start()
        try:
            ch1, ch2 = RecordingChannel("conn-1"), RecordingChannel("conn-2")
            broker.heartbeat(ch1, "c1", [ConsumerData("G1", (SubscriptionData.parse("T", "*"),))])
            broker.heartbeat(ch2, "c2", [ConsumerData("G2", (SubscriptionData.parse("T", "A"),))])
            for i in range(40):
                broker.send(Message("T", b"payload-%d" % i, 0, tags="AB"[i % 2]))
                clock.advance(50)
            offsets = {"G1": 0, "G2": 0}
            for _ in range(3):
                offsets["G1"] = _pull_all(broker, clock, ch1, "G1", "c1", "*", offsets["G1"])
                offsets["G2"] = _pull_all(broker, clock, ch2, "G2", "c2", "A", offsets["G2"])
                clock.advance(700)
                for i in range(3):  # arrivals wake the held pulls (G2 only on A)
                    broker.send(Message("T", b"late-%d" % i, 0, tags="AB"[i % 2]))
                    clock.advance(400)
                offsets["G1"] = _pull_all(broker, clock, ch1, "G1", "c1", "*", offsets["G1"] + 1)
                offsets["G2"] = _pull_all(broker, clock, ch2, "G2", "c2", "A", offsets["G2"] + 1)
                clock.advance(25_000)  # the held pulls time out
                for group, client in (("G1", "c1"), ("G2", "c2")):
                    broker.update_consumer_offset(group, "T", 0, offsets[group], client)
                for ch, client, group in ((ch1, "c1", "G1"), (ch2, "c2", "G2")):
                    broker.heartbeat(ch, client, [ConsumerData(group, (SubscriptionData.parse("T", "*" if group == "G1"
                                                                                           else "A"),))])
            clock.advance(73 * HOUR_MS)
            for ch, client, group in ((ch1, "c1", "G1"), (ch2, "c2", "G2")):
                broker.heartbeat(ch, client, [ConsumerData(group, (SubscriptionData.parse("T", "*" if group == "G1"
                                                                                       else "A"),))])
            broker.run_retention(manual=True)
            maximum = broker.store.get_max_offset_in_queue("T", 0)
            for offset in (0, maximum + 5, maximum):
                request = PullMessageRequest("G1", "T", 0, offset, max_msg_nums=8, sys_flag=FLAGS, commit_offset=0,
                                             suspend_timeout_ms=15_000, subscription="*", client_id="c1")
                broker.pull(request, ch1)
                clock.advance(20_000)
        finally:
            broker.shutdown()
            trace.end()
    return run


def _simulation(model: str, seed: int) -> Callable[[Path], str]:
    def record(path: Path) -> str:
        from reference.client.config import MessageModel
        from reference.sim.scenario import Scenario, SimConfig
        from reference.sim.simulation import Simulation
        from reference.sim.steps import (
            BrokerRestart,
            Crash,
            FailPercent,
            Join,
            Leave,
            Produce,
            Retention,
            timeline,
        )

        steps = timeline(
            Produce(40), 3_000, Crash(1), Produce(30), 25_000, Join(), FailPercent(0, 30),
            Produce(30), 5_000, Leave(2), Produce(20), 30_000, Join(revive=True), Retention(),
            Produce(20), BrokerRestart(crash=True), 10_000, Produce(20), 20_000,
        )
        config = SimConfig(seed=seed, model=MessageModel(model), tags=("A", "B", None))
        Simulation(Scenario(config, steps), sink=sink_for(path)).run()
        return f"sim-{seed}"

    return record


#: name -> recorder(path) -> run. Every entry's trace must audit clean.
RECORDERS: dict[str, Callable[[Path], str]] = {
    "broker": record_broker_trace,
    "sim-clustering": _simulation("CLUSTERING", 5),
    "sim-broadcasting": _simulation("BROADCASTING", 6),
}
