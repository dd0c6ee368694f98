"""A tiny push-style consumer over the project's blocking remoting client, with optional faults.

It is the subject of the client-conformance tests that run in the normal ci env (the official C++ client is
only in the interop env): well-behaved, it must pass every CCLIENT requirement; with ``--fault`` it breaks
one on purpose and must fail it. Reads the MQTCK_* environment of docs/client-conformance.md.

Behaviour (the seeds' push consumer, reduced): heartbeat, rebalance with AllocateMessageQueueAveragely at
start, every REBALANCE_S and on NOTIFY_CONSUMER_IDS_CHANGED; one pull in flight per owned queue with the
SUSPEND flag and the consume offset piggybacked; messages consumed (slept on) before the next pull of their
queue, so at most one batch is cached; offsets committed every COMMIT_S and for a queue given up; when the
broker's connection drops (a broker restart), reconnect after RETRY_S (CLIENT-9's 3 s), heartbeat and pull on from
the same offsets.

Faults: ``ignore-next-begin-offset`` (after PULL_OFFSET_MOVED, pull the old offset again),
``keep-revoked`` (never give a queue up), ``commit-ahead`` (commit 100 past what was consumed), ``recommit-moved``
(after PULL_OFFSET_MOVED pull from nextBeginOffset but keep committing the old offset, as the C++ client does),
``skip-committed`` (start a queue 10 past its committed offset), ``no-resume`` (never pull again once the broker's
connection dropped).

``--commit-after S`` commits nothing (no piggybacked commit, no UPDATE_CONSUMER_OFFSET) for S seconds after start,
as the Java lite-pull consumer's first periodic persist comes late on a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait

from reference.allocation.averagely import AllocateMessageQueueAveragely
from reference.allocation.message_queue import MessageQueue
from reference.broker.protocol import PullSysFlag
from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RemotingCommand, RequestCode
from reference.net.remoting.message_codec import decode_records
from reference.rules.codes import ResponseCode

REBALANCE_S = 2.0
COMMIT_S = 1.0
SUSPEND_MS = 1_000
RETRY_S = 3.0
FAULTS = ("ignore-next-begin-offset", "keep-revoked", "commit-ahead", "recommit-moved", "skip-committed", "no-resume")


class MiniConsumer:
    def __init__(self, namesrv: str, topic: str, group: str, delay_ms: int, fault: str | None,
                 commit_after_s: float = 0.0) -> None:
        self.topic, self.group, self.delay_s, self.fault = topic, group, delay_ms / 1000.0, fault
        self.commits_from = time.monotonic() + commit_after_s
        self.client_id = f"mini-{os.getpid()}"
        ns = RemotingClient(namesrv)
        route = json.loads(ns.invoke(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).body)
        ns.close()
        self.broker_name = route["brokerDatas"][0]["brokerName"]
        self.queue_nums = route["queueDatas"][0]["readQueueNums"]
        self.rebalance_now = threading.Event()
        self.broker_addr = route["brokerDatas"][0]["brokerAddrs"]["0"]
        self.broker = RemotingClient(self.broker_addr, on_request=self._on_request)
        self.offsets: dict[int, int] = {}  # next offset to pull
        self.consumed: dict[int, int] = {}  # commit point
        self.inflight: dict[Future[RemotingCommand], int] = {}

    def _on_request(self, cmd: RemotingCommand) -> None:
        if cmd.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            self.rebalance_now.set()

    def heartbeat(self) -> None:
        body = {"clientID": self.client_id, "consumerDataSet": [{
            "groupName": self.group, "consumeType": 1, "messageModel": 1, "consumeFromWhere": 0,
            "subscriptionDataSet": [{"topic": self.topic, "subString": "*", "subVersion": "0"}]}]}
        self.broker.invoke(RequestCode.HEART_BEAT, {}, json.dumps(body).encode())

    def rebalance(self) -> None:
        r = self.broker.invoke(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": self.group})
        if r.code != ResponseCode.SUCCESS:
            return
        cids = sorted(json.loads(r.body)["consumerIdList"])
        queues = [MessageQueue(self.topic, self.broker_name, q) for q in range(self.queue_nums)]
        allocated = AllocateMessageQueueAveragely().allocate(self.group, self.client_id, queues, cids)
        mine = {mq.queue_id for mq in allocated}
        for q in set(self.offsets) - mine:
            if self.fault == "keep-revoked":
                continue
            self.commit(q)
            del self.offsets[q]
        for q in mine - set(self.offsets):
            r = self.broker.invoke(RequestCode.QUERY_CONSUMER_OFFSET,
                                   {"consumerGroup": self.group, "topic": self.topic, "queueId": q})
            offset = int(r.ext_fields["offset"]) if r.code == ResponseCode.SUCCESS else 0
            if self.fault == "skip-committed" and offset > 0:
                offset += 10
            self.offsets[q] = self.consumed[q] = offset

    def commit(self, q: int) -> None:
        if time.monotonic() < self.commits_from:
            return
        offset = self.consumed.get(q, 0) + (100 if self.fault == "commit-ahead" else 0)
        self.broker.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": self.group, "topic": self.topic, "queueId": q, "commitOffset": str(offset)})

    def pull(self, q: int) -> None:
        flags = PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION
        if time.monotonic() >= self.commits_from:
            flags |= PullSysFlag.COMMIT_OFFSET
        ext = {"consumerGroup": self.group, "topic": self.topic, "queueId": q, "queueOffset": str(self.offsets[q]),
               "maxMsgNums": 32, "sysFlag": int(flags), "commitOffset": str(self.consumed[q]),
               "suspendTimeoutMillis": str(SUSPEND_MS), "subscription": "*", "subVersion": "0"}
        self.inflight[self.broker.invoke_async(RequestCode.PULL_MESSAGE, ext)] = q

    def on_pull(self, q: int, r: RemotingCommand) -> None:
        if q not in self.offsets:
            return  # given up while the pull was in flight: drop the answer
        next_offset = int(r.ext_fields.get("nextBeginOffset", self.offsets[q]))
        if r.code == ResponseCode.SUCCESS:
            for record in decode_records(r.body):
                time.sleep(self.delay_s)
                self.consumed[q] = record.queue_offset + 1
            self.offsets[q] = next_offset
        elif r.code == ResponseCode.PULL_OFFSET_MOVED:
            if self.fault != "ignore-next-begin-offset":
                self.offsets[q] = next_offset
            if self.fault not in ("ignore-next-begin-offset", "recommit-moved"):
                self.consumed[q] = next_offset
        elif r.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
            self.offsets[q] = next_offset

    def reconnect(self, deadline: float, stop: threading.Event) -> bool:
        """After the broker's connection dropped: every RETRY_S, connect again and heartbeat; False at the
        deadline. The offsets are kept: the client pulls on from where it was."""
        self.broker.close()
        self.inflight.clear()
        while not stop.wait(RETRY_S) and time.monotonic() < deadline:
            try:
                self.broker = RemotingClient(self.broker_addr, on_request=self._on_request)
                self.heartbeat()
                return True
            except (ConnectionError, OSError, TimeoutError):
                continue
        return False

    def run(self, duration_s: float, stop: threading.Event) -> None:
        deadline = time.monotonic() + duration_s
        self.heartbeat()
        self.rebalance()
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                self.consume_until(deadline, stop)
            except (ConnectionError, TimeoutError):
                if self.fault == "no-resume" or not self.reconnect(deadline, stop):
                    stop.wait(max(deadline - time.monotonic(), 0))
                    return
        for q in self.offsets:
            self.commit(q)
        self.broker.invoke(RequestCode.UNREGISTER_CLIENT,
                           {"clientID": self.client_id, "producerGroup": "", "consumerGroup": self.group})
        self.broker.close()

    def consume_until(self, deadline: float, stop: threading.Event) -> None:
        next_rebalance = next_commit = time.monotonic()
        while not stop.is_set() and time.monotonic() < deadline:
            now = time.monotonic()
            if self.rebalance_now.is_set() or now >= next_rebalance:
                self.rebalance_now.clear()
                self.heartbeat()
                self.rebalance()
                next_rebalance = now + REBALANCE_S
            if now >= next_commit:
                for q in self.offsets:
                    self.commit(q)
                next_commit = now + COMMIT_S
            busy = set(self.inflight.values())
            for q in self.offsets:
                if q not in busy:
                    self.pull(q)
            done, _ = wait(list(self.inflight), timeout=0.1, return_when=FIRST_COMPLETED)
            for future in done:
                self.on_pull(self.inflight.pop(future), future.result())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fault", choices=FAULTS, default=None)
    parser.add_argument("--commit-after", type=float, default=0.0, metavar="S")
    args = parser.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    env = os.environ
    consumer = MiniConsumer(env["MQTCK_NAMESRV"], env["MQTCK_TOPIC"], env["MQTCK_GROUP"],
                            int(env.get("MQTCK_CONSUME_DELAY_MS", "0")), args.fault, args.commit_after)
    consumer.run(float(env.get("MQTCK_DURATION_S", "10")), stop)


if __name__ == "__main__":
    main()
