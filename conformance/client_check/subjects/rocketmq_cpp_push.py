"""Client-conformance subject: a PushConsumer of the official C++ client (PyPI ``rocketmq==0.4.4``,
rocketmq-client-cpp 1.2.3), clustering, subscribed to MQTCK_TOPIC with ``*``.

Run by ``mqtck conform --client "python -m conformance.client_check.subjects.rocketmq_cpp_push"``. The
listener sleeps MQTCK_CONSUME_DELAY_MS per message and returns CONSUME_SUCCESS; the consumer runs
MQTCK_DURATION_S or until SIGTERM, then shuts down (which persists its offsets and unregisters). Nothing in
it is tuned: the point is to observe the library's own behaviour. Each message the listener finished is reported
on a consumption-report line (CCLIENT-5 judges the cache by them).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

from conformance.client_check.checks import CONSUME_REPORT_PREFIX


def main() -> int:
    try:
        from rocketmq.client import PushConsumer
    except ImportError:
        print("rocketmq_cpp_push: needs rocketmq==0.4.4 (pip install rocketmq==0.4.4, or the interop-remoting "
              "tox env)", file=sys.stderr)
        return 2
    env = os.environ
    delay_s = int(env.get("MQTCK_CONSUME_DELAY_MS", "0")) / 1000.0
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    consumed = 0
    printing = threading.Lock()

    def listener(msg: Any) -> None:
        nonlocal consumed
        if delay_s:
            time.sleep(delay_s)
        report = {"ts": time.time_ns() // 1000, "topic": msg.topic, "queue_id": msg.queue_id,
                  "offset": msg.queue_offset}
        # The client calls the listener on several threads: one locked write per line (print writes the text and
        # its newline apart, and two threads' reports ran together on one line).
        with printing:
            sys.stdout.write(f"{CONSUME_REPORT_PREFIX}{json.dumps(report)}\n")
            sys.stdout.flush()
            consumed += 1

    consumer = PushConsumer(env["MQTCK_GROUP"])
    consumer.set_namesrv_addr(env["MQTCK_NAMESRV"])
    consumer.subscribe(env["MQTCK_TOPIC"], listener)
    consumer.start()
    try:
        stop.wait(float(env.get("MQTCK_DURATION_S", "10")))
    finally:
        consumer.shutdown()
    print(f"rocketmq_cpp_push: consumed {consumed} message(s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
