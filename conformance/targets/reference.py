"""The in-process reference as a target, on simulated time (it has clock control)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from reference.allocation.message_queue import MessageQueue
from reference.allocation.registry import strategy_class
from reference.broker.broker import Broker
from reference.broker.host import BrokerHost
from reference.broker.permits.batch import encode_batch
from reference.broker.permits.entry_filter import DELIVER_AT_TIME, ENTRY_CHECKSUM, MARKER_TYPE, checksum_properties
from reference.broker.permits.protocol import InitialPosition, Position, RecordingPermitChannel
from reference.broker.pop.protocol import PopMessageRequest, PopResponse, RecordingPopChannel
from reference.broker.protocol import ConsumerData, PullMessageRequest, PullResponse, PullSysFlag, RecordingChannel
from reference.broker.settings import apply_settings
from reference.clock import SimClock
from reference.rules.errors import InvalidRequest
from reference.rules.filter import SubscriptionData
from reference.sim.scenario import Scenario
from reference.sim.simulation import Simulation
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.trace import MemorySink, Trace

from . import (
    HOLD_SLACK_MS,
    DispatchedRecord,
    GroupInfo,
    PoppedRecord,
    PopReply,
    PulledMessage,
    PullReply,
    SendReceipt,
    StoreLayout,
    TargetError,
)
from .control import check_settings

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


Q = TypeVar("Q")
A = TypeVar("A")
Reply = TypeVar("Reply")

#: Simulated time moved per step while waiting for a held request.
ADVANCE_STEP_MS = 100


class _Pending(Generic[Q, A, Reply]):
    """A pull or a pop answered now or held: the answer is looked up among what the target's channel
    received (one implementation for both)."""

    def __init__(
        self, target: ReferenceTarget, request: Q, response: A | None, hold_ms: int,
        delivered: Callable[[], list[tuple[Q, A]]], convert: Callable[[A], Reply],
    ) -> None:
        self._target = target
        self._request = request
        self._response = response
        self._hold_ms = hold_ms
        self._delivered = delivered
        self._convert = convert

    def done(self) -> bool:
        if self._response is None:
            for req, resp in self._delivered():
                if req is self._request:
                    self._response = resp
        return self._response is not None

    def result(self) -> Reply:
        """Advance simulated time until the broker answers (bounded: the hold time plus slack)."""
        limit = self._hold_ms + HOLD_SLACK_MS
        waited = 0
        while not self.done():
            if waited > limit:
                raise AssertionError(f"held request not answered within {limit} ms of simulated time")
            self._target.clock.advance(ADVANCE_STEP_MS)
            waited += ADVANCE_STEP_MS
        assert self._response is not None
        return self._convert(self._response)


def _pop_reply(response: PopResponse) -> PopReply:
    return PopReply(
        code=response.code.name,
        messages=tuple(
            PoppedRecord(m.topic, m.queue_id, m.queue_offset, m.body, m.tags, m.msg_id, m.handle, m.reconsume_times,
                         m.retry, dict(m.properties))
            for m in response.messages
        ),
        rest_num=response.rest_num,
        held_ms=response.held_ms,
        order_counts=queue_order_counts(response.order_counts),
    )


def queue_order_counts(counts: Mapping[tuple[bool, int, int], int]) -> dict[tuple[bool, int], int]:
    """Per (retry, queue id), the least consume count of its messages: the seed's per-queue orderCountInfo."""
    out: dict[tuple[bool, int], int] = {}
    for (retry, queue_id, _offset), count in counts.items():
        out[(retry, queue_id)] = min(count, out.get((retry, queue_id), count))
    return out


class ReferenceTarget:
    capabilities = frozenset(
        {
            "pull", "long_poll", "query_offset", "commit_offset", "consumer_registry", "retention_control",
            "clock_control", "trace", "race_control", "pop", "flow_permits", "restart", "allocation",
            "client_simulation", "retention_expire", "store_layout", "channel_close", "broker_config",
            "group_info", "pop_order", "topic_admin", "flow_refusals", "group_admin",
            "entry_faults", "delayed_delivery", "permit_limits",
        }
    )

    def __init__(self, workdir: str, mutant: Mutant | None = None, name: str = "reference",
                 layout: StoreLayout | None = None, store_settings: dict[str, Any] | None = None) -> None:
        """``layout``: the segment sizes of another implementation, so that retention deletes the same
        messages on both (``mqtck diff``); the conformance store's small segments otherwise. ``store_settings``:
        MessageStoreConfig fields that make the reference behave as that implementation where the spec allows
        (an expectations file's ``[[reference]]`` entries)."""
        self.name = name
        self.mutant = mutant
        self.clock = SimClock()
        #: What the broker records (capability ``trace``), across restarts.
        self._trace_sink = MemorySink()
        self._trace = Trace(self._trace_sink, run=name, clock=self.clock)
        segments = CONFORMANCE_STORE if layout is None else dict(
            commit_log_segment_bytes=layout.commitlog_segment_bytes,
            consume_queue_units_per_segment=layout.consumequeue_segment_units,
        )
        self._host = BrokerHost(
            workdir, self.clock, store_config=MessageStoreConfig(**{**segments, **(store_settings or {})}),
            components=self.mutant.components if self.mutant else None, trace=self._trace,
        )
        #: Broker settings changed by :meth:`configure` (capability ``broker_config``).
        self._settings: dict[str, Any] = {}
        #: Dispatch limits changed by :meth:`change_permit_limits` (capability ``permit_limits``), across restarts.
        self._permit_limits: dict[str, int] = {}
        self.broker = self._open_broker()
        self._channels: dict[str, RecordingChannel] = {}
        self._pull_channel = RecordingChannel("conformance-pull")

    def _open_broker(self, restart: bool = False) -> Broker:
        broker = self._host.restart() if restart else self._host.open()
        if self._settings:  # kept across restarts, as a runner keeps them (RocketMQ writes them to its config)
            apply_settings(broker, self._settings)
        if self._permit_limits:
            broker.permits.change_limits(dict(self._permit_limits))
        self._pop_channel = RecordingPopChannel("conformance-pop")
        self._permit_channels: dict[tuple[str, str, str], RecordingPermitChannel] = {}
        return broker

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
        return SendReceipt(r.queue_id, r.queue_offset, r.unique_id, r.commit_log_offset)

    def store_layout(self) -> StoreLayout:
        """The segment sizes the store was opened with, so that tests size their data as for any target."""
        config = self.broker.store.config
        return StoreLayout(config.commit_log_segment_bytes, config.consume_queue_units_per_segment,
                           config.clean_resource_interval_ms)

    def start_pull(self, group, topic, queue_id, offset, *, max_nums=32, expression="*", suspend_ms=0,
                   commit_offset=None, client_id="conformance"):  # type: ignore[no-untyped-def]
        flag = PullSysFlag.of(suspend_ms=suspend_ms, subscription=expression, commit_offset=commit_offset)
        request = PullMessageRequest(
            group, topic, queue_id, offset, max_msg_nums=max_nums, sys_flag=int(flag),
            commit_offset=commit_offset or 0, suspend_timeout_ms=suspend_ms, subscription=expression,
            client_id=client_id,
        )
        response = self._call(self.broker.pull, request, self._pull_channel)
        return self._pending_pull(request, response)

    def _pending_pull(self, request: PullMessageRequest, response: PullResponse | None) -> _Pending:
        return _Pending(self, request, response, request.suspend_timeout_ms,
                        lambda: self._pull_channel.pull_responses, _reply)

    def start_pull_racing(self, group: str, topic: str, queue_id: int, offset: int, sends: list[tuple[bytes, str]],
                          *, expression: str = "*", suspend_ms: int = 15_000) -> _Pending:
        """A held pull with ``sends`` stored after the broker found nothing and before it holds the
        request: the interleaving of RocketMQ issue #7358 (capability ``race_control``)."""
        flag = PullSysFlag.SUSPEND | PullSysFlag.SUBSCRIPTION
        request = PullMessageRequest(group, topic, queue_id, offset, sys_flag=int(flag),
                                     suspend_timeout_ms=suspend_ms, subscription=expression)

        def race() -> None:
            for body, tags in sends:
                self.send(topic, queue_id, body, tags)

        response = self._call(self.broker.pull, request, self._pull_channel, race)
        return self._pending_pull(request, response)

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

    def group_info(self, group: str) -> GroupInfo | None:
        info = self.broker.consumer_manager.get_consumer_group_info(group)
        if info is None:
            return None
        subs = {topic: (sub.expression, sub.sub_version) for topic, sub in info.subscription_table.items()}
        return GroupInfo(tuple(sorted(info.all_client_ids())), subs)

    def close_conn(self, conn: str) -> None:
        """The broker sees ``conn``'s channel close (capability ``channel_close``), as when a consumer exits."""
        channel = self._channels.pop(conn, None)
        if channel is not None:
            self.broker.channel_closed(channel)

    def notifications(self, conn: str) -> list[str]:
        return list(self._channel(conn).notifications)

    def min_max(self, topic: str, queue_id: int) -> tuple[int, int]:
        store = self.broker.store
        return store.get_min_offset_in_queue(topic, queue_id), store.get_max_offset_in_queue(topic, queue_id)

    def run_retention(self) -> None:
        self.broker.run_retention(manual=True)

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    def clock_now_ms(self) -> int:
        return self.clock.now_ms()

    def expire_retention(self) -> int:
        """Clean runs with fileReservedTime 0 until every segment but the one being written is gone, as the
        remoting runner's control channel does: no simulated time has to pass (72 h of it would run 26,000
        clean runs)."""
        return self.broker.store.expire_all()

    def allocate(
        self, strategy: str, group: str, current_cid: str, mq_all: list[tuple[str, str, int]], cid_all: list[str]
    ) -> list[tuple[str, str, int]]:
        """One allocation by a strategy of the reference (a mutant may replace it)."""
        cls = (self.mutant.strategies.get(strategy) if self.mutant else None) or strategy_class(strategy)
        queues = [MessageQueue(t, b, q) for t, b, q in mq_all]
        share = cls().allocate(group, current_cid, queues, cid_all) or []  # ByConfig without a list answers null
        return [(mq.topic, mq.broker_name, mq.queue_id) for mq in share]

    def close(self) -> None:
        self._host.close()

    def restart(self) -> None:
        """A clean broker restart on the same data (held requests and consumers are dropped)."""
        self.broker = self._open_broker(restart=True)

    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Capability ``broker_config``: the control channel's settings, checked by its rules, applied to the live
        broker as a runner applies them; returns the values they replaced."""
        previous = apply_settings(self.broker, check_settings(settings))
        self._settings.update(settings)
        return previous

    def trace_rows(self) -> list[dict[str, Any]]:
        return list(self._trace_sink.rows)

    # -- client simulation -----------------------------------------------------------------------
    def simulate(self, scenario: Scenario) -> list[dict[str, Any]]:
        """Run ``scenario`` on the simulator with the reference client, or a seeded fault's client
        components; the trace rows (the simulator has its own broker on simulated time)."""
        client = self.mutant.client if self.mutant is not None else None
        return Simulation(scenario, components=client).run().rows or []

    # -- pop -----------------------------------------------------------------------------------
    def pop(self, group, topic, queue_id=-1, max_nums=32, invisible_ms=60_000, poll_ms=0, client_id="conformance",
            expression="*"):  # type: ignore[no-untyped-def]
        request = PopMessageRequest(group, topic, queue_id, max_nums, invisible_ms, poll_ms, expression, client_id)
        response = self._call(self.broker.pop, request, self._pop_channel)
        return _Pending(self, request, response, poll_ms, lambda: self._pop_channel.pop_responses, _pop_reply)

    def pop_orderly(self, group, topic, queue_id=-1, max_nums=32, invisible_ms=60_000, poll_ms=0):  # type: ignore[no-untyped-def]
        request = PopMessageRequest(group, topic, queue_id, max_nums, invisible_ms, poll_ms, "*", "conformance",
                                    order=True)
        response = self._call(self.broker.pop, request, self._pop_channel)
        return _Pending(self, request, response, poll_ms, lambda: self._pop_channel.pop_responses, _pop_reply)

    def delete_topic(self, topic: str) -> None:
        self._call(self.broker.delete_topic, topic)

    def create_group(self, group: str) -> None:
        self._call(self.broker.subscription_groups.update, {"groupName": group, "consumeEnable": True})

    def delete_group(self, group: str) -> None:
        self._call(self.broker.subscription_groups.delete, group)

    def ack(self, group: str, topic: str, handle: str) -> None:
        self._call(self.broker.ack, group, topic, handle, "conformance")

    def change_invisible(self, group: str, topic: str, handle: str, invisible_ms: int) -> str:
        return self._call(self.broker.change_invisible_time, group, topic, handle, invisible_ms, "conformance").handle

    def query_assignment(self, group, topic, client_id, strategy="AllocateMessageQueueAveragely",
                         pop_share_queue_num=-1, model="CLUSTERING", mode="POP"):  # type: ignore[no-untyped-def]
        queues = self._call(self.broker.query_assignment, topic, group, client_id, strategy, model, pop_share_queue_num,
                            mode)
        return [(q.topic, q.broker_name, q.queue_id) for q in queues]

    # -- permits -------------------------------------------------------------------------------
    def subscribe_permits(self, group: str, topic: str, client_id: str, sub_type: str = "Exclusive") -> None:
        channel = RecordingPermitChannel(f"permits-{client_id}")
        self._call(self.broker.subscribe_permits, group, topic, client_id, channel, sub_type, 0,
                   InitialPosition.EARLIEST)
        self._permit_channels[(group, client_id, topic)] = channel

    def flow(self, group: str, client_id: str, topic: str, permits: int) -> None:
        self._call(self.broker.flow, group, client_id, topic, permits)

    def permits(self, group: str, client_id: str, topic: str) -> int:
        return self._call(self.broker.permits.consumer, group, client_id, topic).permits

    def dispatched(self, group: str, client_id: str, topic: str) -> list[DispatchedRecord]:
        channel = self._permit_channels.get((group, client_id, topic))
        return [
            DispatchedRecord(m.msg_id, m.position.offset, m.position.batch_index, m.body, m.redelivery_count)
            for m in (channel.messages if channel else [])
        ]

    def ack_dispatched(self, group: str, client_id: str, topic: str, records: list[DispatchedRecord]) -> None:
        positions = [Position(r.offset, r.batch_index) for r in records]
        self._call(self.broker.ack_permits, group, client_id, topic, positions)

    def redeliver(self, group, client_id, topic, records=None):  # type: ignore[no-untyped-def]
        positions = None if records is None else [Position(r.offset, r.batch_index) for r in records]
        self._call(self.broker.redeliver_unacknowledged, group, client_id, topic, positions)

    def close_consumer(self, group: str, client_id: str, topic: str) -> None:
        self._call(self.broker.close_permit_consumer, group, client_id, topic)

    def send_batch(self, topic: str, queue_id: int, bodies: list[bytes]) -> SendReceipt:
        body, properties = encode_batch(bodies)
        r = self._call(self.broker.send, Message(topic, body, queue_id, properties=properties))
        return SendReceipt(r.queue_id, r.queue_offset, r.unique_id)

    def _send_entry(self, topic: str, queue_id: int, body: bytes, properties: dict[str, str]) -> SendReceipt:
        r = self._call(self.broker.send, Message(topic, body, queue_id, properties=properties))
        return SendReceipt(r.queue_id, r.queue_offset, r.unique_id)

    def send_corrupt(self, topic: str, queue_id: int, body: bytes) -> SendReceipt:
        checksum = checksum_properties(body)
        bad = {ENTRY_CHECKSUM: str((int(checksum[ENTRY_CHECKSUM]) + 1) % (1 << 32))}
        return self._send_entry(topic, queue_id, body, bad)

    def send_marker(self, topic: str, queue_id: int) -> SendReceipt:
        return self._send_entry(topic, queue_id, b"", {MARKER_TYPE: "TXN_COMMIT"})

    def send_delayed(self, topic: str, queue_id: int, body: bytes, delay_ms: int) -> SendReceipt:
        return self._send_entry(topic, queue_id, body, {DELIVER_AT_TIME: str(self.clock.now_ms() + delay_ms)})

    def change_permit_limits(self, settings: dict[str, int]) -> dict[str, int]:
        previous = self._call(self.broker.permits.change_limits, dict(settings))
        self._permit_limits.update(settings)
        return previous
