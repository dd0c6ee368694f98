"""A Pulsar workload recorded through ``mqtck record --protocol pulsar``: the real ``pulsar-client`` 3.13 producing
batches to a shared subscription of three consumers with small receiver queues, some messages negatively
acknowledged once. Used against the reference front (tests/audit/test_record_pulsar.py) and a real Apache Pulsar
(tests/peers/test_pulsar_recorded.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BATCH = 10
QUEUES = (3, 5, 8)
NACK_EVERY = 250
#: A stuck exchange, not a timing goal.
DEADLINE_S = 180.0
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Recorded:
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    received: Counter
    seconds: float


def _consume(pulsar: Any, consumer: Any, seen: Counter, lock: threading.Lock, done: threading.Event) -> None:
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


def record(upstream: str, trace: Path, messages: int, topic: str, run: str = "pulsar") -> Recorded:
    """Run the workload through a ``mqtck record --protocol pulsar`` in front of ``upstream`` (host:port) into
    ``trace``; the proxy is stopped with SIGTERM and its JSON summary read."""
    import pulsar

    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "record", "--protocol", "pulsar", "--listen", "127.0.0.1:0",
         "--upstream", upstream, "--trace", str(trace), "--run", run],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("recording pulsar://"), line + (proc.stderr.read() if proc.stderr else "")
    seen: Counter = Counter()
    lock, done = threading.Lock(), threading.Event()
    started = time.monotonic()
    try:
        client = pulsar.Client(line.split()[1], operation_timeout_seconds=30,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            consumers = [client.subscribe(topic, "shared-sub", consumer_type=pulsar.ConsumerType.Shared,
                                          receiver_queue_size=q, negative_ack_redelivery_delay_ms=200,
                                          consumer_name=f"c{i}") for i, q in enumerate(QUEUES)]
            threads = [threading.Thread(target=_consume, args=(pulsar, c, seen, lock, done), daemon=True)
                       for c in consumers]
            for t in threads:
                t.start()
            producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=BATCH,
                                              batching_max_publish_delay_ms=50, block_if_queue_full=True)
            for i in range(messages):
                producer.send_async(b"%d" % i, None)
            producer.flush()
            while time.monotonic() - started < DEADLINE_S:
                with lock:
                    if len(seen) == messages and all(n >= 2 for k, n in seen.items() if int(k) % NACK_EVERY == 0):
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
        seconds = time.monotonic() - started
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err, err
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    return Recorded(rows, json.loads(out[out.index("{"):]), seen, seconds)
