"""A tiny RocketMQ 5 SimpleConsumer over the reference's own v5 stubs (reference/net/grpc/protos.py), speaking the
POP client check's environment (docs/client-conformance.md, "RocketMQ 5 clients"), with faults on purpose.

The ci tests run it through ``mqtck conform --client ... --client-protocol grpc``: well-behaved it passes, and each
``--fault`` breaks one PCLIENT requirement. The official clients are judged in tests/peers and the interop-v5 env.

Faults: ``ack-failures`` acks what the application failed instead of changing its invisible time (PCLIENT-2, -3);
``skip-ack`` never acks m7 (PCLIENT-1); ``forged-handle`` also acks a handle nobody gave it (PCLIENT-5);
``old-handle`` acks an extended message with the handle the extension replaced (PCLIENT-6); ``no-goodbye`` stops
without NotifyClientTermination (PCLIENT-7).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import sys
import threading
import time
import uuid
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration

from reference.net.grpc import protos

FAULTS = ("ack-failures", "skip-ack", "forged-handle", "old-handle", "no-goodbye")


def line(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", choices=FAULTS, default=None)
    fault = parser.parse_args().fault
    if os.environ.get("MQTCK_MODE", "push") != "simple":
        line(event="unsupported", message="the mini client has only a SimpleConsumer")
        return 3
    stubs = protos.load()
    d, s = stubs.definition, stubs.service
    topic, group = os.environ["MQTCK_TOPIC"], os.environ["MQTCK_GROUP"]
    fail = set(filter(None, os.environ.get("MQTCK_FAIL", "").split(",")))
    extend = set(filter(None, os.environ.get("MQTCK_EXTEND", "").split(",")))
    fail_attempts, count = int(os.environ.get("MQTCK_FAIL_ATTEMPTS", "1")), int(os.environ.get("MQTCK_COUNT", "0"))
    invisible_s = int(os.environ.get("MQTCK_INVISIBLE_S", "10"))
    retry_s = int(os.environ.get("MQTCK_RETRY_INVISIBLE_S", "2"))
    deadline = time.monotonic() + float(os.environ.get("MQTCK_DURATION_S", "30"))
    channel = grpc.insecure_channel(os.environ["MQTCK_ENDPOINTS"])
    stub = stubs.grpc.MessagingServiceStub(channel)
    md = (("x-mq-client-id", f"mini@{os.getpid()}@{uuid.uuid4().hex[:6]}"), ("x-mq-language", "PYTHON"),
          ("x-mq-protocol", "GRPC_V2"), ("x-mq-client-version", "mini"))
    g, t = d.Resource(name=group), d.Resource(name=topic)
    settings = d.Settings(client_type=d.SIMPLE_CONSUMER, subscription=d.Subscription(
        group=g, subscriptions=[d.SubscriptionEntry(topic=t, expression=d.FilterExpression(type=d.TAG,
                                                                                            expression="*"))]))
    outbox: queue.Queue[Any] = queue.Queue()
    outbox.put(s.TelemetryCommand(settings=settings))
    telemetry = stub.Telemetry(iter(outbox.get, None), metadata=md)
    next(telemetry)  # the server's settings: the group is registered
    threading.Thread(target=lambda: [None for _ in telemetry], daemon=True).start()
    stub.Heartbeat(s.HeartbeatRequest(group=g, client_type=d.SIMPLE_CONSUMER), metadata=md, timeout=3)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    line(event="started", mode="simple")
    succeeded, idle = 0, 0

    while not stop.is_set() and time.monotonic() < deadline and not (count and succeeded >= count):
        request = s.ReceiveMessageRequest(
            group=g, message_queue=d.MessageQueue(topic=t), batch_size=16,
            filter_expression=d.FilterExpression(type=d.TAG, expression="*"),
            invisible_duration=Duration(seconds=invisible_s), long_polling_timeout=Duration(seconds=5))
        messages = [r.message for r in stub.ReceiveMessage(request, metadata=md, timeout=8)
                    if r.WhichOneof("content") == "message"]
        # A fault may leave a message that never succeeds: two empty long polls after the first message end the run.
        idle = 0 if messages else idle + 1
        if idle >= 2 and succeeded:
            break
        for m in messages:
            props, body = m.system_properties, m.body.decode()
            handle, msg_id, attempt = props.receipt_handle, props.message_id, props.delivery_attempt
            if body in extend:
                old = handle
                handle = stub.ChangeInvisibleDuration(s.ChangeInvisibleDurationRequest(
                    group=g, topic=t, receipt_handle=handle, invisible_duration=Duration(seconds=invisible_s),
                    message_id=msg_id), metadata=md, timeout=3).receipt_handle
                if fault == "old-handle":
                    handle = old
            ok = not (body in fail and attempt <= fail_attempts)
            line(event="consumed", body=body, message_id=msg_id, attempt=attempt,
                 result="SUCCESS" if ok else "FAILURE", ts_ms=int(time.time() * 1000))
            if ok:
                succeeded += 1
            if ok and not (fault == "skip-ack" and body == "m7") or not ok and fault == "ack-failures":
                stub.AckMessage(s.AckMessageRequest(group=g, topic=t, entries=[s.AckMessageEntry(
                    message_id=msg_id, receipt_handle=handle)]), metadata=md, timeout=3)
            elif not ok:
                stub.ChangeInvisibleDuration(s.ChangeInvisibleDurationRequest(
                    group=g, topic=t, receipt_handle=handle, invisible_duration=Duration(seconds=retry_s),
                    message_id=msg_id), metadata=md, timeout=3)
            if fault == "forged-handle":
                stub.AckMessage(s.AckMessageRequest(group=g, topic=t, entries=[s.AckMessageEntry(
                    message_id=msg_id, receipt_handle="forged")]), metadata=md, timeout=3)
    if fault != "no-goodbye":
        stub.NotifyClientTermination(s.NotifyClientTerminationRequest(group=g), metadata=md, timeout=3)
    outbox.put(None)
    channel.close()
    line(event="stopped", succeeded=succeeded)
    return 0


if __name__ == "__main__":
    sys.exit(main())
