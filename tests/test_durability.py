"""Durability: a broker process killed with SIGKILL at random points while appending, restarted.

Every message whose send was acknowledged must be readable with its bytes intact; a message that
was in flight may be there or not, but if it is, it is whole and in order; nothing half-written is
ever returned. Several kill/restart rounds run on one data directory, so recovery runs on stores
that were themselves recovered.
"""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

ROUNDS = 6
QUEUES = 3
pytestmark = pytest.mark.slow


class BrokerProcess:
    def __init__(self, data_dir: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "conformance.cli", "broker", "--stdio", "--data-dir", data_dir,
             "--segment-bytes", "65536"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
        )
        assert json.loads(self.readline()) == {"event": "READY"}
        self.next_id = 0

    def readline(self, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"broker exited: {self.proc.stderr.read()[-2000:]}")
        assert time.monotonic() < deadline
        return line

    def send_line(self, obj: dict) -> int:
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"id": self.next_id, **obj}) + "\n")
        return self.next_id

    def call(self, obj: dict) -> dict:
        rid = self.send_line(obj)
        self.proc.stdin.flush()
        while True:
            reply = json.loads(self.readline())
            if reply.get("id") == rid:
                return reply

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def feed(stdin, lines: list[str]) -> None:  # type: ignore[no-untyped-def]
    try:
        for line in lines:
            stdin.write(line)
        stdin.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass  # the broker was killed mid-stream: that is the point


def read_queue(broker: BrokerProcess, queue: int) -> list[tuple[int, bytes]]:
    out, offset = [], 0
    while True:
        r = broker.call({"op": "pull", "group": "G", "topic": "D", "queueId": queue, "offset": offset, "maxNums": 32})
        assert r["ok"], r
        if r["status"] != "FOUND":
            assert r["status"] in ("OFFSET_OVERFLOW_ONE", "NO_MESSAGE_IN_QUEUE"), r
            return out
        for m in r["messages"]:
            out.append((m["queueOffset"], base64.b64decode(m["body"])))
        offset = r["nextBeginOffset"]


@pytest.mark.req("STORE-20")
def test_sigkill_while_appending_loses_no_acknowledged_message(tmp_path) -> None:
    rng = random.Random(int(os.environ.get("MQTCK_DURABILITY_SEED", "20261122")))
    data_dir = str(tmp_path / "store")
    acked: dict[int, dict[int, bytes]] = {q: {} for q in range(QUEUES)}
    sent_order: dict[int, list[bytes]] = {q: [] for q in range(QUEUES)}  # every send ever written, per queue
    broker = BrokerProcess(data_dir)
    assert broker.call({"op": "createTopic", "topic": "D", "queues": QUEUES})["ok"]
    for _round in range(ROUNDS):
        pending: dict[int, tuple[int, bytes]] = {}
        n = rng.randint(500, 2000)
        lines = []
        for _ in range(n):
            q = rng.randrange(QUEUES)
            body = os.urandom(rng.randint(1, 3000))
            broker.next_id += 1
            pending[broker.next_id] = (q, body)
            lines.append(json.dumps({"id": broker.next_id, "op": "send", "topic": "D", "queueId": q,
                                     "body": base64.b64encode(body).decode(), "tags": "T"}) + "\n")
        # Feed stdin from a thread while this one reads acks: both pipes are bounded.
        feeder = threading.Thread(target=feed, args=(broker.proc.stdin, lines), daemon=True)
        feeder.start()
        kill_after = rng.randint(1, n - 1)
        for _ in range(kill_after):
            reply = json.loads(broker.readline())
            assert reply["ok"], reply
            q, body = pending.pop(reply["id"])
            acked[q][reply["queueOffset"]] = body
        broker.kill()  # mid-stream: the remaining sends may or may not have been appended
        feeder.join(timeout=10)
        broker = BrokerProcess(data_dir)
        for q in range(QUEUES):
            stored = read_queue(broker, q)
            offsets = [o for o, _ in stored]
            assert offsets == list(range(len(stored))), f"queue {q}: offsets not contiguous"
            for offset, body in acked[q].items():
                assert offset < len(stored), f"queue {q}: acknowledged offset {offset} lost after SIGKILL"
                assert stored[offset][1] == body, f"queue {q}: acknowledged offset {offset} corrupted"
            # Unacknowledged survivors must be whole: each equals a body that was sent to this queue.
            sent_order[q].extend(b for qq, b in pending.values() if qq == q)
            known = set(sent_order[q]) | set(acked[q].values())
            for offset, body in stored:
                assert body in known, f"queue {q}: offset {offset} holds bytes nobody sent (torn write)"
                acked[q][offset] = body  # what is readable now must stay readable
    broker.close()
