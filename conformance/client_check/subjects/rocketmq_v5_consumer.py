"""Client-conformance subject for RocketMQ 5 (gRPC, POP): the official Python client (PyPI rocketmq-python-client
5.1.2) as an application writes it, a SimpleConsumer or a PushConsumer.

``mqtck gate python-client-v5-5.1.2`` runs ``python -m conformance.client_check.subjects.rocketmq_v5_consumer``
through the POP client check. The client's top-level package is ``rocketmq``, the same name as the RocketMQ 4
binding (PyPI ``rocketmq`` 0.4.4), so it is only installed by its own extra ``v5-python`` and tox env
``interop-v5``. Configuration is the environment of docs/client-conformance.md ("RocketMQ 5 clients"); every
consumption is one JSON line on stdout, as the Java and Go subjects print them. Nothing is tuned: the point is to
observe the library's own defaults. ``MQTCK_MODE=produce`` sends ``MQTCK_COUNT`` messages ``m-0``, ``m-1``, ... with
the client's Producer, a ``sent`` line each (the recorded kill-one run of docs/audit.md).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

#: A mode the client does not have, or a missing package: the exit status the check reads as "not applicable".
EXIT_UNSUPPORTED = 3


#: The push consumer's listener runs on many threads: print writes the text and the newline separately, so two
#: threads' lines could interleave on one line without it.
_PRINTING = threading.Lock()


def _line(**fields: Any) -> None:
    with _PRINTING:
        print(json.dumps(fields), flush=True)


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name) or str(default)
    try:
        return int(text)
    except ValueError:
        print(f"{name}: not an integer: {text!r}", file=sys.stderr)
        raise SystemExit(2) from None


class _Application:
    """What the application decides per delivery: fail the bodies of MQTCK_FAIL on their first
    MQTCK_FAIL_ATTEMPTS deliveries, succeed otherwise; count the successes towards MQTCK_COUNT."""

    def __init__(self) -> None:
        self.fail = {b for b in os.environ.get("MQTCK_FAIL", "").split(",") if b}
        self.extend = {b for b in os.environ.get("MQTCK_EXTEND", "").split(",") if b}
        self.fail_attempts = _env_int("MQTCK_FAIL_ATTEMPTS", 1)
        self.delay_s = _env_int("MQTCK_CONSUME_DELAY_MS", 0) / 1000
        self.count = _env_int("MQTCK_COUNT", 0)
        self.succeeded = 0
        self.done = threading.Event()
        self._lock = threading.Lock()

    def consume(self, message: Any) -> bool:
        if self.delay_s:
            time.sleep(self.delay_s)
        body = bytes(message.body).decode("utf-8", "replace")
        ok = not (body in self.fail and message.delivery_attempt <= self.fail_attempts)
        _line(event="consumed", body=body, message_id=message.message_id, attempt=message.delivery_attempt,
              result="SUCCESS" if ok else "FAILURE", ts_ms=int(time.time() * 1000))
        if ok:
            with self._lock:
                self.succeeded += 1
                if self.count and self.succeeded >= self.count:
                    self.done.set()
        return ok


def _produce(config: Any, topic: str) -> int:
    """Send MQTCK_COUNT messages one after another with the official Producer, a line per message sent."""
    from rocketmq import Message, Producer

    producer = Producer(config, (topic,))
    producer.startup()
    _line(event="started", mode="produce")
    sent = 0
    for i in range(_env_int("MQTCK_COUNT", 0)):
        message = Message()
        message.topic, message.body = topic, f"m-{i}".encode()
        receipt = producer.send(message)
        _line(event="sent", body=f"m-{i}", message_id=receipt.message_id, ts_ms=int(time.time() * 1000))
        sent += 1
    producer.shutdown()
    _line(event="stopped", sent=sent)
    return 0


def main() -> int:
    try:
        import rocketmq.v5  # noqa: F401  (rocketmq 0.4.4 has no v5: the wrong package is installed)
        from rocketmq import (
            ClientConfiguration,
            ConsumeResult,
            Credentials,
            FilterExpression,
            MessageListener,
            PushConsumer,
            SimpleConsumer,
        )
    except ImportError:
        _line(event="unsupported", message="rocketmq-python-client 5.1.2 is not installed in this Python (tox -e "
              "interop-v5, or pip install 'mqtck[v5-python]')")
        return EXIT_UNSUPPORTED
    mode = os.environ.get("MQTCK_MODE", "push")
    if mode not in ("simple", "push", "produce"):
        print(f"MQTCK_MODE: must be simple, push or produce, not {mode!r}", file=sys.stderr)
        return 2
    try:
        duration_s = float(os.environ.get("MQTCK_DURATION_S") or 30)
    except ValueError:
        print("MQTCK_DURATION_S: not a number", file=sys.stderr)
        return 2
    app = _Application()
    signal.signal(signal.SIGTERM, lambda *_: app.done.set())
    deadline = time.monotonic() + duration_s
    config = ClientConfiguration(os.environ.get("MQTCK_ENDPOINTS", "127.0.0.1:8081"), Credentials())
    if mode == "produce":
        return _produce(config, os.environ.get("MQTCK_TOPIC", "mqtck_topic"))
    group = os.environ.get("MQTCK_GROUP", "mqtck_group")
    subscription = {os.environ.get("MQTCK_TOPIC", "mqtck_topic"): FilterExpression()}
    stop: Callable[[], Any]
    if mode == "push":
        class Listener(MessageListener):  # type: ignore[misc,valid-type]
            def consume(self, message: Any) -> Any:
                return ConsumeResult.SUCCESS if app.consume(message) else ConsumeResult.FAILURE

        push = PushConsumer(config, group, Listener(), subscription)
        push.startup()
        _line(event="started", mode="push")
        app.done.wait(max(0.0, deadline - time.monotonic()))
        stop = push.shutdown
    else:
        simple = SimpleConsumer(config, group, subscription, await_duration=_env_int("MQTCK_AWAIT_S", 5))
        simple.startup()
        _line(event="started", mode="simple")
        invisible_s, retry_s = _env_int("MQTCK_INVISIBLE_S", 10), _env_int("MQTCK_RETRY_INVISIBLE_S", 2)
        batch = _env_int("MQTCK_BATCH", 16)
        while not app.done.is_set() and time.monotonic() < deadline:
            try:
                messages = simple.receive(batch, invisible_s)
            except Exception as exc:  # the client raises its own exception types; the loop receives again
                _line(event="error", call="receive", message=str(exc))
                time.sleep(1)
                continue
            for message in messages:
                try:
                    if bytes(message.body).decode("utf-8", "replace") in app.extend:
                        simple.change_invisible_duration(message, invisible_s)  # then acked with the new handle
                    if app.consume(message):
                        simple.ack(message)
                    else:
                        simple.change_invisible_duration(message, retry_s)
                except Exception as exc:
                    _line(event="error", call="ack", message=str(exc))
        stop = simple.shutdown
    stop()
    _line(event="stopped", succeeded=app.succeeded)
    return 0


if __name__ == "__main__":
    sys.exit(main())
