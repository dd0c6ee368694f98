"""The in-process reference as a target, on simulated time (it has clock control)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.broker.broker import Broker
from reference.broker.consumer_manager import ConsumerData
from reference.broker.protocol import PullMessageRequest, PullResponse, PullSysFlag, RecordingChannel
from reference.clock import SimClock
from reference.errors import InvalidRequest
from reference.store.config import MessageStoreConfig
from reference.store.filter import SubscriptionData
from reference.store.message import Message

from . import PulledMessage, PullReply, SendReceipt, TargetError

if TYPE_CHECKING:
    from conformance.mutants import Mutant

#: Segments small enough that a conformance test can make retention delete some.
CONFORMANCE_STORE = dict(commit_log_segment_bytes=64 * 1024, consume_queue_units_per_segment=1024)


def _reply(response: PullResponse) -> PullReply:
    return PullReply(
        code=response.code.name,
        status=response.status.name if response.status else None,
        next_begin_offset=response.next_begin_offset,
        min_offset=response.min_offset,
        max_offset=response.max_offset,
        messages=tuple(PulledMessage(m.queue_offset, m.body, m.tags, m.unique_id) for m in response.messages),
        held_ms=response.held_ms,
    )


class _Pending:
    def __init__(self, target: ReferenceTarget, request: PullMessageRequest, response: PullResponse | None) -> None:
        self._target = target
        self._request = request
        self._response = response

    def done(self) -> bool:
        if self._response is None:
            for req, resp in self._target._pull_channel.pull_responses:
                if req is self._request:
                    self._response = resp
        return self._response is not None

    def result(self) -> PullReply:
        """Advance simulated time until the broker answers (bounded: the hold time plus slack)."""
        limit = self._request.suspend_timeout_ms + 60_000
        waited = 0
        while not self.done():
            if waited > limit:
                raise AssertionError(f"held pull not answered within {limit} ms of simulated time")
            step = 100
            self._target.clock.advance(step)
            waited += step
        assert self._response is not None
        return _reply(self._response)


class ReferenceTarget:
    capabilities = frozenset(
        {
            "pull", "long_poll", "query_offset", "commit_offset", "consumer_registry", "retention_control",
            "clock_control", "trace", "race_control",
        }
    )

    def __init__(self, workdir: str, mutant: Mutant | None = None, name: str = "reference") -> None:
        self.name = name
        self.mutant = mutant
        self.clock = SimClock()
        self.broker = Broker(
            workdir, self.clock, store_config=MessageStoreConfig(**CONFORMANCE_STORE),
            components=mutant.components if mutant else None,
        )
        self.broker.start()
        self._channels: dict[str, RecordingChannel] = {}
        self._pull_channel = RecordingChannel("conformance-pull")

    def _channel(self, conn: str) -> RecordingChannel:
        return self._channels.setdefault(conn, RecordingChannel(conn))

    def _call(self, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return fn(*args, **kwargs)
        except InvalidRequest as exc:
            raise TargetError(exc.code, exc.field, exc.rule) from None

    def create_topic(self, topic: str, queues: int) -> None:
        self._call(self.broker.create_topic, topic, queues)

    def send(self, topic: str, queue_id: int, body: bytes, tags: str | None = None) -> SendReceipt:
        r = self._call(self.broker.send, Message(topic, body, queue_id, tags=tags))
        return SendReceipt(r.queue_id, r.queue_offset, r.unique_id)

    def start_pull(self, group, topic, queue_id, offset, *, max_nums=32, expression="*", suspend_ms=0,
                   commit_offset=None, client_id="conformance"):  # type: ignore[no-untyped-def]
        flag = PullSysFlag(0)
        if suspend_ms > 0:
            flag |= PullSysFlag.SUSPEND
        if expression is not None:
            flag |= PullSysFlag.SUBSCRIPTION
        if commit_offset is not None:
            flag |= PullSysFlag.COMMIT_OFFSET
        request = PullMessageRequest(
            group, topic, queue_id, offset, max_msg_nums=max_nums, sys_flag=int(flag),
            commit_offset=commit_offset or 0, suspend_timeout_ms=suspend_ms, subscription=expression,
            client_id=client_id,
        )
        response = self._call(self.broker.pull, request, self._pull_channel)
        return _Pending(self, request, response)

    def start_pull_racing(self, group: str, topic: str, queue_id: int, offset: int, sends: list[tuple[bytes, str]],
                          *, expression: str = "*", suspend_ms: int = 15_000) -> _Pending:
        """A held pull with ``sends`` stored after the broker found nothing and before it holds the
        request: the interleaving of RocketMQ issue #7358, which only an in-process target can force."""
        flag = PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION
        request = PullMessageRequest(group, topic, queue_id, offset, sys_flag=int(flag),
                                     suspend_timeout_ms=suspend_ms, subscription=expression)
        outcome = self._call(self.broker.pull_processor.process_request, request, self._pull_channel, True)
        for body, tags in sends:
            self.send(topic, queue_id, body, tags)
        if outcome.held is None:
            return _Pending(self, request, outcome.response)
        self.broker.hold_service.suspend_pull_request(outcome.held)
        return _Pending(self, request, None)

    def query_offset(self, group: str, topic: str, queue_id: int) -> tuple[str, int]:
        r = self._call(self.broker.query_consumer_offset, group, topic, queue_id)
        return r.code.name, r.offset

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self._call(self.broker.update_consumer_offset, group, topic, queue_id, offset)

    def heartbeat(self, conn, client_id, group, subscriptions, model="CLUSTERING", sub_version=0):  # type: ignore[no-untyped-def]
        subs = tuple(
            self._call(SubscriptionData.parse, t, e, sub_version) for t, e in sorted(subscriptions.items())
        )
        return self._call(self.broker.heartbeat, self._channel(conn), client_id, [ConsumerData(group, subs, model)])

    def unregister(self, conn: str, group: str) -> None:
        self._call(self.broker.unregister_client, self._channel(conn), group)

    def consumer_ids(self, group: str) -> list[str]:
        return self.broker.consumer_ids(group)

    def notifications(self, conn: str) -> list[str]:
        return list(self._channel(conn).notifications)

    def min_max(self, topic: str, queue_id: int) -> tuple[int, int]:
        store = self.broker.store
        return store.get_min_offset_in_queue(topic, queue_id), store.get_max_offset_in_queue(topic, queue_id)

    def run_retention(self) -> None:
        self.broker.run_retention(manual=True)

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    def close(self) -> None:
        self.broker.shutdown()
