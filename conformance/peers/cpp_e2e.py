"""``mqtck bench e2e --client cpp``'s clients: Apache RocketMQ's C++ client (rocketmq-client-cpp 1.2.3 through its
Python binding, PyPI ``rocketmq==0.4.4``, module ``rocketmq.client``) as a deployment runs it, writing what only a
client sees as trace schema v1 rows. The command line, the producer's output and the CONSUME rows are those of
conformance/peers/java_client/EndToEnd.java, so that the harness (conformance/bench/e2e.py) runs it as it runs the
Java and Go programs::

    python -m conformance.peers.cpp_e2e produce NAMESRV TOPIC MESSAGES PER_SECOND
    python -m conformance.peers.cpp_e2e consume NAMESRV TOPIC GROUP TRACE_FILE RUN

produce: one Producer sends MESSAGES messages (synchronous sends, tag A) at about PER_SECOND, then prints a JSON line
with what was acknowledged.

consume: a PushConsumer, clustering, subscribed to TOPIC with ``*``, whose listener writes a CONSUME row (status OK)
for every message before it returns (the binding then answers CONSUME_SUCCESS). Rows are written unbuffered (one
``os.write`` each), so a SIGKILL loses none of the consumptions the client reported to the broker. SIGTERM shuts the
consumer down (which persists its offsets and unregisters). Nothing else is tuned: the point is to observe the
library's defaults (a new group: the broker answers its offset query with 0 while the queue's first message is in
memory, so the C++ default CONSUME_FROM_LAST_OFFSET starts at 0 here; the harness checks the first pulls).

What this client cannot record, and why the rows differ from Java's and Go's:

* no ASSIGN or REVOKE: the binding (its C API) has no allocation strategy to wrap and no rebalance callback, so
  which queues a consumer owns, and when that changes, is not observable from inside it. No such row is written
  (an ASSIGN guessed from the first message of a queue would be a fake one); the harness says what the audit cannot
  judge without them (:data:`conformance.bench.e2e.NO_REBALANCE_ROWS`).
* ``broker``: a received message carries its topic, queue id and queue offset, not its broker's name. It is taken
  from the topic's route (the name server the client uses), which must name one broker: with several, a queue id
  does not say which broker's queue it is, and the program refuses to guess.
* ``client_id``: the binding does not expose the client's id (rocketmq-client-cpp builds it from the pid, an address
  and the instance name). Each consumer gets an instance name of its own and reads its id back from the broker's
  list of the group's consumers (GET_CONSUMER_LIST_BY_GROUP), the id the broker and the recorder know it by; the
  listener waits for it before its first row.

``msg_id`` is the binding's message id: rocketmq-client-cpp decodes it as the UNIQ_KEY property when the message
has one, and its producer sets UNIQ_KEY on every message it sends, the key the recorder's SEND rows carry.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RequestCode, loads_body

USAGE = ("usage: python -m conformance.peers.cpp_e2e produce NAMESRV TOPIC MESSAGES PER_SECOND | "
         "consume NAMESRV TOPIC GROUP TRACE_FILE RUN")
#: A send's timeout: 10 s, not the client's 3 s, as in EndToEnd.java (CI runs this beside another lane on 2 cores).
SEND_TIMEOUT_MS = 10_000
#: How long a consumer waits for the route of its topic and for the broker to list it in its group.
DISCOVER_S = 60.0
POLL_S = 0.2


def produce(namesrv: str, topic: str, messages: int, per_second: int) -> None:
    from rocketmq.client import Message, Producer, SendStatus

    producer = Producer("mqtck_e2e_producer", timeout=SEND_TIMEOUT_MS)
    producer.set_namesrv_addr(namesrv)
    producer.start()
    started = time.monotonic()
    acked = failed = 0
    for i in range(messages):
        wait = started + i / per_second - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        message = Message(topic)
        message.set_tags("A")
        message.set_body(f"m{i}")
        try:
            status = producer.send_sync(message).status
        except Exception as exc:  # noqa: BLE001 - the binding raises its own exception types for a failed send
            failed += 1
            print(f"send {i} failed: {exc}", file=sys.stderr, flush=True)
            continue
        if status == SendStatus.OK:
            acked += 1
        else:
            failed += 1
            print(f"send {i}: {status}", file=sys.stderr, flush=True)
    seconds = time.monotonic() - started
    producer.shutdown()
    print(json.dumps({"acked": acked, "failed": failed, "seconds": round(seconds, 1)}), flush=True)


class TraceWriter:
    """One client's trace rows, written as they happen: one ``os.write`` of one line each (O_APPEND), so a row is in
    the file before the listener returns. ``ts`` is in whole milliseconds, as the other programs' rows and the
    recorder's."""

    def __init__(self, path: str, run: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._run = run
        self._seq = 0
        self._lock = threading.Lock()

    def row(self, client_id: str, event: str, **columns: Any) -> None:
        with self._lock:
            self._seq += 1
            row = {"schema_version": 1, "run": self._run, "ts": time.time_ns() // 1_000_000 * 1000,
                   "source": f"client:{client_id}", "seq": self._seq, "event": event, "client_id": client_id,
                   **columns}
            os.write(self._fd, (json.dumps(row, separators=(",", ":")) + "\n").encode())


def _until(what: str, attempt: Any) -> Any:
    """``attempt()``'s first truthy result, tried every POLL_S for DISCOVER_S; SystemExit naming ``what`` after."""
    deadline = time.monotonic() + DISCOVER_S
    while time.monotonic() < deadline:
        try:
            found = attempt()
        except (OSError, TimeoutError, ValueError):
            found = None
        if found:
            return found
        time.sleep(POLL_S)
    raise SystemExit(f"cpp_e2e: no {what} after {DISCOVER_S:.0f} s")


def _route(namesrv: str, topic: str) -> dict[str, Any] | None:
    client = RemotingClient(namesrv)
    try:
        answer = client.invoke(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, timeout_s=10)
    finally:
        client.close()
    return loads_body(answer.body) if answer.code == 0 and answer.body else None


def broker_of(route: dict[str, Any], topic: str) -> tuple[str, str]:
    """(the broker's name, its master's address) of a route that names one broker; SystemExit otherwise (with
    several, a received message's queue id does not tell whose queue it is)."""
    brokers = route.get("brokerDatas") or []
    if len(brokers) != 1:
        raise SystemExit(f"cpp_e2e: the route of {topic} names {len(brokers)} brokers; the C++ client's messages do "
                         "not say which broker they came from, so only a one-broker route can be recorded")
    return brokers[0]["brokerName"], brokers[0]["brokerAddrs"]["0"]


def _own_id(broker: str, group: str, instance: str) -> str | None:
    client = RemotingClient(broker)
    try:
        answer = client.invoke(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}, timeout_s=10)
    finally:
        client.close()
    ids = loads_body(answer.body).get("consumerIdList", []) if answer.code == 0 and answer.body else []
    mine = [cid for cid in ids if cid.endswith(f"@{instance}")]
    return mine[0] if len(mine) == 1 else None


def consume(namesrv: str, topic: str, group: str, trace_path: str, run: str) -> None:
    from rocketmq.client import PushConsumer

    trace = TraceWriter(trace_path, run)
    broker, broker_addr = broker_of(_until(f"route of {topic}", lambda: _route(namesrv, topic)), topic)
    instance = f"mqtck-e2e-{os.getpid()}"
    known = threading.Event()
    client_id = ""

    def listener(msg: Any) -> None:
        known.wait()
        trace.row(client_id, "CONSUME", group=group, topic=msg.topic, broker=broker, queue_id=msg.queue_id,
                  offset=msg.queue_offset, msg_id=msg.id, status="OK")

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    consumer.set_instance_name(instance)
    consumer.subscribe(topic, listener)
    consumer.start()
    try:
        client_id = _until(f"consumer id ending @{instance} in {group}", lambda: _own_id(broker_addr, group, instance))
        known.set()
        print(f"cpp_e2e: consuming as {client_id}", flush=True)
        while not stop.wait(1.0):
            pass
    finally:
        consumer.shutdown()


def main(argv: list[str]) -> int:
    try:
        if len(argv) == 5 and argv[0] == "produce" and argv[3].isdigit() and argv[4].isdigit() and int(argv[4]) > 0:
            produce(argv[1], argv[2], int(argv[3]), int(argv[4]))
            return 0
        if len(argv) == 6 and argv[0] == "consume":
            consume(*argv[1:])
            return 0
    except ImportError:
        print("cpp_e2e: needs rocketmq==0.4.4 (the interop-remoting tox env installs it)", file=sys.stderr)
        return 2
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
