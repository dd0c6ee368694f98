"""The round trip of :mod:`conformance.peers.pulsar_observe` on the Python client (PyPI ``pulsar-client`` 3.13,
libpulsar C++ 4.2): the twin of ``PulsarRoundTrip.java``, line for line, so that both clients are judged by the
same observer.

Reads its settings from the environment (``MQTCK_PULSAR_URL``, ``MQTCK_TOPIC``, ``MQTCK_NACK_TOPIC``,
``MQTCK_MESSAGES``, ``MQTCK_BATCH``, ``MQTCK_QUEUE``, ``MQTCK_CONSUMERS``, ``MQTCK_NACKS``) and writes one JSON
object a line: ``{"phase": NAME}`` when the observer should read the broker's stats (it then waits for a line on
stdin), ``{"received": {...}}`` per message of the shared subscription, ``{"nack": COUNT}`` per delivery of the
negatively acknowledged message.
"""

from __future__ import annotations

import json
import os
import sys

import pulsar  # type: ignore[import-not-found,import-untyped,unused-ignore]

#: How long one receive waits before the drain tries the next consumer (ms).
RECEIVE_WAIT_MS = 200
#: The negative-ack redelivery delay (the client's minimum is 100 ms; its default, 60 s, would be the test's length).
NACK_DELAY_MS = 100
#: Rounds over every consumer with nothing received after which the drain gives up (each round 3 x 200 ms).
IDLE_ROUNDS = 10


def emit(doc: dict[str, object]) -> None:
    print(json.dumps(doc), flush=True)


def phase(name: str) -> None:
    """Announce ``name`` and wait until the observer has read the broker's stats."""
    emit({"phase": name})
    sys.stdin.readline()


def main() -> int:
    env = os.environ
    messages, batch = int(env.get("MQTCK_MESSAGES", "120")), int(env.get("MQTCK_BATCH", "4"))
    queue, consumers, nacks = int(env.get("MQTCK_QUEUE", "10")), int(env.get("MQTCK_CONSUMERS", "3")), \
        int(env.get("MQTCK_NACKS", "2"))
    topic, nack_topic = env["MQTCK_TOPIC"], env["MQTCK_NACK_TOPIC"]
    client = pulsar.Client(env["MQTCK_PULSAR_URL"], logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    shared = [client.subscribe(topic, "mqtck-flow", consumer_type=pulsar.ConsumerType.Shared,
                               receiver_queue_size=queue, consumer_name=f"c{i}") for i in range(consumers)]
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=batch,
                                      batching_max_publish_delay_ms=1000)
    for i in range(messages):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    phase("produced")
    received, idle_rounds = 0, 0
    while received < messages and idle_rounds < IDLE_ROUNDS:
        idle_rounds += 1
        for index, consumer in enumerate(shared):
            try:
                msg = consumer.receive(timeout_millis=RECEIVE_WAIT_MS)
            except pulsar.Timeout:
                continue
            idle_rounds = 0
            received += 1
            mid = msg.message_id()
            emit({"received": {"consumer": f"c{index}", "ledger": mid.ledger_id(), "entry": mid.entry_id(),
                               "batch": mid.batch_index(), "redelivery": msg.redelivery_count()}})
            consumer.acknowledge(msg)
    phase("drained")
    nacking = client.subscribe(nack_topic, "mqtck-nack", consumer_type=pulsar.ConsumerType.Shared,
                               receiver_queue_size=queue, consumer_name="n0",
                               negative_ack_redelivery_delay_ms=NACK_DELAY_MS)
    client.create_producer(nack_topic).send(b"nacked")
    for delivery in range(nacks + 1):
        msg = nacking.receive(timeout_millis=30_000)
        emit({"nack": msg.redelivery_count()})
        if delivery < nacks:
            nacking.negative_acknowledge(msg)
        else:
            nacking.acknowledge(msg)
    phase("nacked")
    client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
