"""``mqtck record --protocol pulsar`` in front of ``mqtck broker --pulsar``, with the real ``pulsar-client`` 3.13:
batches on a shared subscription with three consumers of small receiver queues and some negative acks. The trace
the proxy writes holds every message sent, the subscriptions, the permits and every message dispatched with its
batch position, and the audit of it finds no permit finding: the batches' overshoot is legal (FLOW-2) and the
reference never starts an entry at 0 permits (FLOW-11), seen from the wire."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.targets.launch import launch_broker

pulsar = pytest.importorskip("pulsar", reason="not applicable: pip install 'mqtck[pulsar]' (pulsar-client 3.13)")
pytest.importorskip("pyspark")

MESSAGES = 3_000
BATCH = 10
QUEUES = (3, 5, 8)
NACK_EVERY = 250
#: A stuck exchange, not a timing goal.
DEADLINE_S = 120.0
ROOT = Path(__file__).resolve().parents[2]


def _consume(consumer: Any, seen: Counter, lock: threading.Lock, done: threading.Event) -> None:
    while not done.is_set():
        try:
            msg = consumer.receive(timeout_millis=200)
        except pulsar.Timeout:
            continue
        body = msg.data()
        with lock:
            seen[body] += 1
            first = seen[body] == 1
        if first and int(body) % NACK_EVERY == 0:
            consumer.negative_acknowledge(msg)
        else:
            consumer.acknowledge(msg)


def _record(upstream: str, trace: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "record", "--protocol", "pulsar", "--listen", "127.0.0.1:0",
         "--upstream", upstream, "--trace", str(trace), "--run", "pulsar"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("recording pulsar://"), line + (proc.stderr.read() if proc.stderr else "")
    return proc, line.split()[1]


@pytest.mark.req("FLOW-2", "FLOW-11")
def test_recorded_pulsar_client_run_audits_without_permit_findings(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    broker = launch_broker("pulsar", tmp_path / "data")
    trace = tmp_path / "recorded.jsonl"
    proxy, url = _record(broker.url.removeprefix("pulsar://"), trace)
    seen: Counter = Counter()
    lock, done = threading.Lock(), threading.Event()
    try:
        client = pulsar.Client(url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            consumers = [client.subscribe("recorded", "shared-sub", consumer_type=pulsar.ConsumerType.Shared,
                                          receiver_queue_size=q, negative_ack_redelivery_delay_ms=200,
                                          consumer_name=f"c{i}") for i, q in enumerate(QUEUES)]
            threads = [threading.Thread(target=_consume, args=(c, seen, lock, done), daemon=True) for c in consumers]
            for t in threads:
                t.start()
            producer = client.create_producer("recorded", batching_enabled=True, batching_max_messages=BATCH,
                                              batching_max_publish_delay_ms=50, block_if_queue_full=True)
            started = time.monotonic()
            for i in range(MESSAGES):
                producer.send_async(b"%d" % i, None)
            producer.flush()
            while time.monotonic() - started < DEADLINE_S:
                with lock:
                    if len(seen) == MESSAGES and all(n >= 2 for k, n in seen.items() if int(k) % NACK_EVERY == 0):
                        break
                time.sleep(0.2)
            time.sleep(0.5)  # the last grouped acks
            done.set()
            for t in threads:
                t.join()
            for c in consumers:
                c.close()
            producer.close()
        finally:
            client.close()
    finally:
        proxy.send_signal(signal.SIGTERM)
        out, err = proxy.communicate(timeout=30)
        broker_err = broker.stop()
    assert proxy.returncode == 0 and "Traceback" not in err, err
    assert "Traceback" not in broker_err, broker_err
    assert len(seen) == MESSAGES

    summary = json.loads(out[out.index("{"):])
    assert summary["malformed"] == 0, summary
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    events = Counter(r["event"] for r in rows)
    assert events["SEND"] == MESSAGES and events["SUBSCRIBE"] == 3 and events["UNSUBSCRIBE"] == 3, events
    assert events["DISPATCH"] >= MESSAGES + MESSAGES // NACK_EVERY and events["FLOW"] > 0, events
    sent = {r["msg_id"] for r in rows if r["event"] == "SEND"}
    assert {r["msg_id"] for r in rows if r["event"] == "DISPATCH"} == sent, "DISPATCH names the messages SEND named"
    sizes = Counter(json.loads(r["detail"])["batch_size"] for r in rows if r["event"] == "DISPATCH")
    assert sizes[BATCH] > 0, f"batches reached the consumers whole: {sizes}"
    per_client: dict[str, int] = defaultdict(int)
    for r in rows:
        if r["event"] == "DISPATCH":
            per_client[r["client_id"]] += 1
    assert set(per_client) == {"c0", "c1", "c2"}, per_client

    code = main(["audit", str(trace), "--report-dir", str(tmp_path / "report")])
    audit = json.loads((tmp_path / "report" / "summary.json").read_text())
    cats = audit["runs"]["pulsar"]["categories"]
    for name in ("permit-overrun", "permit-entry-overrun", "permit-freeze"):
        assert cats[name]["judged"] and cats[name]["count"] == 0, (name, cats[name])
    assert code == 0, {k: v["count"] for k, v in cats.items() if v["count"]}
