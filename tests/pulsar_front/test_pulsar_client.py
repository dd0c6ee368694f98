"""Issue 39's must-show: the real ``pulsar-client`` 3.13 (PyPI; libpulsar 4.2.0) against ``mqtck broker --pulsar``.

10,000 messages produced in batches, one shared subscription, three consumers with small receiver queues, some
messages negatively acknowledged. Judged from the broker's trace (FLOW and DISPATCH rows) and what the
applications received: no read starts at 0 permits or below and no batch entry is started so either (FLOW-2, and
the reference's stricter FLOW-11), no consumer starves, every message arrives, and each delivery of a message
carries the number of deliveries before it as its redelivery count (FLOW-6).
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from typing import Any

import pytest

from tests.pulsar_front.conftest import PulsarBroker

pulsar = pytest.importorskip("pulsar", reason="not applicable: pip install 'mqtck[dev]' (pulsar-client 3.13)")

MESSAGES = 10_000
BATCH = 10
QUEUES = (3, 5, 8)
#: Every message whose number is a multiple of this is negatively acknowledged on its first delivery.
NACK_EVERY = 250
#: A consumer with less than 1/STARVED of the messages starved.
STARVED = 100
#: How long the whole exchange may take before the test gives up (a stuck dispatcher, not a timing goal).
DEADLINE_S = 120.0


def _consume(consumer: Any, index: int, seen: dict[bytes, list[tuple[int, int]]], lock: threading.Lock,
             done: threading.Event) -> None:
    while not done.is_set():
        try:
            msg = consumer.receive(timeout_millis=200)
        except pulsar.Timeout:
            continue
        body, count = msg.data(), msg.redelivery_count()
        with lock:
            seen[body].append((index, count))
            first = len(seen[body]) == 1
        if first and int(body) % NACK_EVERY == 0:
            consumer.negative_acknowledge(msg)
        else:
            consumer.acknowledge(msg)


def _overruns(rows: list[dict[str, Any]]) -> tuple[list[str], dict[str, int]]:
    """Per consumer, in the broker's order: every DISPATCH that starts an entry must find permits above 0 (granted
    minus dispatched before it). Returns the breaches and each consumer's largest overshoot."""
    granted: dict[str, int] = defaultdict(int)
    sent: dict[str, int] = defaultdict(int)
    last: dict[str, tuple[int, int] | None] = {}
    overshoot: dict[str, int] = defaultdict(int)
    breaches = []
    for row in rows:
        client = row.get("client_id") or ""
        if row["event"] == "FLOW":
            granted[client] += row["count"]
            last[client] = None
        elif row["event"] == "DISPATCH":
            detail = json.loads(row["detail"]) if isinstance(row["detail"], str) else row["detail"]
            entry = (row["offset"], detail["batch_size"])
            starts = last.get(client) is None or last[client][0] != row["offset"]  # type: ignore[index]
            if starts and granted[client] - sent[client] <= 0:
                breaches.append(f"{client}: entry {row['offset']} started with {granted[client] - sent[client]}")
            last[client] = entry
            sent[client] += 1
            overshoot[client] = max(overshoot[client], sent[client] - granted[client])
    return breaches, dict(overshoot)


@pytest.mark.req("FLOW-2", "FLOW-6", "FLOW-11")
def test_pulsar_client_shared_subscription_with_batches(pulsar_broker: PulsarBroker) -> None:
    client = pulsar.Client(pulsar_broker.url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    seen: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    lock, done = threading.Lock(), threading.Event()
    try:
        consumers = [client.subscribe("issue39", "shared-sub", consumer_type=pulsar.ConsumerType.Shared,
                                      receiver_queue_size=q, negative_ack_redelivery_delay_ms=200,
                                      consumer_name=f"c{i}") for i, q in enumerate(QUEUES)]
        threads = [threading.Thread(target=_consume, args=(c, i, seen, lock, done), daemon=True)
                   for i, c in enumerate(consumers)]
        for t in threads:
            t.start()
        producer = client.create_producer("issue39", batching_enabled=True, batching_max_messages=BATCH,
                                          batching_max_publish_delay_ms=50, block_if_queue_full=True)
        started = time.monotonic()
        for i in range(MESSAGES):
            producer.send_async(b"%d" % i, None)
        producer.flush()
        nacked = MESSAGES // NACK_EVERY
        while time.monotonic() - started < DEADLINE_S:
            with lock:
                complete = len(seen) == MESSAGES and all(
                    len(v) >= 2 for k, v in seen.items() if int(k) % NACK_EVERY == 0)
            if complete:
                break
            time.sleep(0.2)
        time.sleep(0.5)  # the last acks' grouping (100 ms) reaches the broker
        done.set()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        for c in consumers:
            c.close()
        producer.close()
    finally:
        client.close()
    err = pulsar_broker.launched.stop()
    assert "Traceback" not in err, err

    assert len(seen) == MESSAGES, f"{MESSAGES - len(seen)} messages never arrived"
    per_consumer = [sum(1 for v in seen.values() for who, _ in v if who == i) for i in range(len(QUEUES))]
    # Shares follow how fast each client grants again (a queue of 3 refills after every message, one of 8 after 4),
    # as on Pulsar: starving would be a consumer left with a tiny share while the others drain the backlog.
    assert all(n >= MESSAGES // STARVED for n in per_consumer), f"a consumer starved: {per_consumer}"
    for body, deliveries in seen.items():
        counts = [count for _, count in deliveries]
        assert counts == list(range(len(counts))), f"{body!r}: redelivery counts {counts}"
    assert sum(1 for k, v in seen.items() if int(k) % NACK_EVERY == 0 and v[1][1] == 1) == nacked

    rows = pulsar_broker.rows()
    breaches, overshoot = _overruns(rows)
    assert breaches == [], breaches[:5]
    assert all(v <= BATCH - 1 for v in overshoot.values()), overshoot
    dispatched = sum(1 for r in rows if r["event"] == "DISPATCH")
    flows = [r["count"] for r in rows if r["event"] == "FLOW"]
    print(f"\n{MESSAGES} messages in {elapsed:.1f} s; per consumer {per_consumer}; dispatched {dispatched}; "
          f"FLOW rows {len(flows)} granting {sum(flows)}; largest overshoot per consumer {overshoot}")
