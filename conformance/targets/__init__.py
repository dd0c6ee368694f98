"""Targets: the one interface through which the conformance suite drives an implementation.

A target declares its **capabilities**; a conformance test that needs one the target lacks is
reported *not applicable* (pytest skip with reason ``not applicable: needs <capability>``), never
passed. This module is the interface (the values a target answers with and the :class:`Target` protocol);
the adapters implement it and :mod:`conformance.targets.registry` opens one by address:
``open_target("reference")`` gives the in-process reference on simulated time;
``mutant:NAME`` the reference with one seeded fault (``conformance.mutants``);
``http://host:port`` whatever serves the HTTP front's API (``conformance.targets.http``), with the
capabilities its ``GET /capabilities`` declares; ``remoting://host:port`` any RocketMQ-protocol broker
reached through the name server at that address (``conformance.targets.remoting``), and
``remoting://host:port?control=host:cport`` the same with the control channel its runner serves
(``conformance.targets.control``: restart, retention expiry, store layout).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

#: With clock control, how much simulated time beyond a held request's own hold time (suspend or poll)
#: a target waits for its answer before that counts as a failure.
HOLD_SLACK_MS = 60_000
#: Every capability a target may declare (the spec's ``capability`` field uses these names).
CAPABILITIES = frozenset(
    {
        "pull", "long_poll", "query_offset", "commit_offset", "consumer_registry", "retention_control",
        "clock_control", "restart", "trace", "allocation",
        # The target lets a test place sends between "not found" and the suspend of a pull.
        "race_control",
        # POP consumption (pop, ack, change invisible time, query assignment) and Pulsar-style permits.
        "pop", "flow_permits",
        # pop_orderly(): RocketMQ 5's ordered POP (PopMessageRequestHeader.order; seed 004 lines 412-599).
        "pop_order",
        # delete_topic(): RocketMQ's DELETE_TOPIC_IN_BROKER (mqadmin deleteTopic), so that a topic can vanish.
        "topic_admin",
        # create_group() / delete_group(): RocketMQ's UPDATE_AND_CREATE_SUBSCRIPTIONGROUP and DELETE_SUBSCRIPTIONGROUP
        # (mqadmin updateSubGroup / deleteSubGroup), so that a consumer group can vanish (REVIVE-9).
        "group_admin",
        # The target runs reference.sim scenarios with its consumer client and returns the trace rows.
        "client_simulation",
        # Judged by `mqtck conform --client` from the reference broker's trace, not through a target.
        "client_under_test",
        # restart(kill=True): a restart as after SIGKILL (a runner's control channel offers it with "restart").
        "kill_restart",
        # expire_retention(): every commit-log segment but the one being written expires, clean run now.
        "retention_expire",
        # store_layout(): the store's segment sizes are known.
        "store_layout",
        # configure(settings): RocketMQ broker settings changed at run time (longPollingEnable, deleteWhen,
        # fileReservedTime, diskMaxUsedSpaceRatio; conformance.targets.control.BROKER_SETTINGS).
        "broker_config",
        # request_manual_delete(): RocketMQ's DELETE_EXPIRED_COMMITLOG (the next clean runs delete at any hour).
        "manual_delete",
        # restart_torn(offset): killed, the record at that commit-log offset torn, restarted (crash recovery).
        "torn_restart",
        # close_conn(conn): the consumer connection ``conn`` is closed, as a consumer process that exits leaves it.
        "channel_close",
        # restart_fresh(): killed and restarted on an empty store, so that a test's first send is the commit log's
        # first record (commit-log offset 0), which no shared broker can otherwise promise.
        "fresh_store",
        # Raw remoting frames to the target's name server and broker (remoting targets: ``namesrv``,
        # ``broker_addr``, ``namespaced(name)``): the REMOTING family's wire tests.
        "remoting_wire",
        # A FLOW the broker refuses is answered with the refusal (the Pulsar wire has no reply to FLOW: a broker
        # ignores a bad one, pulsar-binary §14), so FLOW-1's refusal clause can be judged.
        "flow_refusals",
        # A broker started with ACL 1.0 accounts (fixtures/acl/plain_acl.yml): judged by tests against live
        # brokers (tests/net/test_acl_remoting.py, tests/peers/test_acl_rocketmq.py), not through a target yet.
        "acl",
        # Seed 003's entry filter (FLOW-12): send_corrupt() and send_marker() store entries no client can write (a
        # corrupt checksum or metadata, a broker's internal marker); send_delayed() a message with a deliver-at time.
        "entry_faults", "delayed_delivery",
        # change_permit_limits(): the broker's dispatch rate and maxUnackedMessagesPerConsumer (FLOW-13, FLOW-14).
        "permit_limits",
    }
)


@dataclass(frozen=True)
class SendReceipt:
    queue_id: int
    queue_offset: int
    msg_id: str
    #: Where the message starts in the commit log, when the target can tell (remoting: the offset msgId).
    commit_log_offset: int | None = None


@dataclass(frozen=True)
class CommitLogRecord:
    """The record a commit-log offset holds (``record_at``): whose it is and when it was stored. A broker writes
    records of its own (RocketMQ 5's revive log, retry topics), so the record after a test's last one need not be
    the test's next."""

    commit_log_offset: int
    #: As the broker stores it: a target that keeps each run's names apart shows its prefix.
    topic: str
    msg_id: str
    store_timestamp_ms: int


@dataclass(frozen=True)
class PulledMessage:
    queue_offset: int
    body: bytes
    tags: str | None
    msg_id: str
    #: Where the message starts in the commit log, when the target can tell (remoting: PHYSICALOFFSET).
    commit_log_offset: int | None = None


@dataclass(frozen=True)
class PullReply:
    code: str
    status: str | None
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: tuple[PulledMessage, ...] = ()
    held_ms: int = 0


@dataclass(frozen=True)
class PoppedRecord:
    """One popped message: ``topic`` as the consumer named it; queue and offset where it was read."""

    topic: str
    queue_id: int
    queue_offset: int
    body: bytes
    tags: str | None
    msg_id: str
    handle: str
    reconsume_times: int
    retry: bool
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PopReply:
    code: str
    messages: tuple[PoppedRecord, ...] = ()
    rest_num: int = 0
    held_ms: int = 0
    #: An ordered pop's orderCountInfo per queue it read (seed 004 line 599, buildOrderCountInfo(isRetry, queueId,
    #: count)): (retry, queue id) -> the consume count; empty for an unordered pop.
    order_counts: dict[tuple[bool, int], int] = field(default_factory=dict)


class PendingPop(Protocol):
    def done(self) -> bool: ...
    def result(self) -> PopReply: ...


@dataclass(frozen=True)
class DispatchedRecord:
    """One message a permit dispatcher sent to a consumer."""

    msg_id: str
    offset: int
    batch_index: int
    body: bytes
    redelivery_count: int


class MalformedAnswer(AssertionError):
    """The target answered, but not in its protocol (a body that does not decode): a conformance test fails on
    it like on any assertion, and ``mqtck diff`` observes it as the step's answer instead of stopping."""


@dataclass(eq=False)
class TargetError(Exception):
    """A request the target refused: ``code`` and the ``field`` it named.

    Not frozen: raising sets ``__traceback__`` on the instance (a frozen one fails when a Future re-raises it)."""

    code: str
    field: str = ""
    rule: str = ""


class PendingPull(Protocol):
    def done(self) -> bool: ...
    def result(self) -> PullReply: ...


@dataclass(frozen=True)
class GroupInfo:
    """What a broker keeps of a consumer group (capability ``group_info``; RocketMQ's GET_CONSUMER_CONNECTION_LIST):
    its members' client ids, sorted, and the subscriptions it stores, topic -> (expression, subVersion)."""

    client_ids: tuple[str, ...]
    subscriptions: Mapping[str, tuple[str, int]]


@dataclass(frozen=True)
class StoreLayout:
    """The segment sizes of a target's store (capability ``store_layout``): tests size their data from
    these, never from the reference's defaults."""

    #: Bytes per commit-log segment file (RocketMQ's mappedFileSizeCommitLog).
    commitlog_segment_bytes: int
    #: 20-byte units per consume-queue segment file (mappedFileSizeConsumeQueue / 20).
    consumequeue_segment_units: int
    #: How often the clean service runs (cleanResourceInterval; RocketMQ's default 10 s).
    clean_interval_ms: int = 10_000
    #: How full the store's disk was when the target was opened, in [0, 1] (None: unknown).
    disk_used_ratio: float | None = None


class Target(Protocol):
    """What every target answers; a capability's own methods are in its protocol below (:class:`PopTarget`, ...),
    which a test that needs the capability (its ``needs`` marker) drives."""

    name: str
    capabilities: frozenset[str]

    def create_topic(self, topic: str, queues: int) -> None: ...
    def send(self, topic: str, queue_id: int, body: bytes, tags: str | None = None) -> SendReceipt: ...
    def start_pull(
        self, group: str, topic: str, queue_id: int, offset: int, *, max_nums: int = 32,
        expression: str | None = "*", suspend_ms: int = 0, commit_offset: int | None = None,
        client_id: str = "conformance",
    ) -> PendingPull: ...
    def query_offset(self, group: str, topic: str, queue_id: int) -> tuple[str, int]: ...
    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None: ...
    def heartbeat(
        self, conn: str, client_id: str, group: str, subscriptions: dict[str, str], model: str = "CLUSTERING",
        sub_version: int = 0,
    ) -> bool: ...
    def unregister(self, conn: str, group: str) -> None: ...
    def consumer_ids(self, group: str) -> list[str]: ...
    def notifications(self, conn: str) -> list[str]: ...
    def min_max(self, topic: str, queue_id: int) -> tuple[int, int]: ...
    def run_retention(self) -> None: ...
    def advance(self, ms: int) -> None: ...
    def clock_now_ms(self) -> int:
        """Capability ``clock_control``: the target's simulated time now."""
        ...
    def close(self) -> None: ...


class AllocationTarget(Target, Protocol):
    """Capability ``allocation``: (topic, brokerName, queueId) triples."""

    def allocate(
        self, strategy: str, group: str, current_cid: str, mq_all: list[tuple[str, str, int]], cid_all: list[str]
    ) -> list[tuple[str, str, int]]: ...


class PopTarget(Target, Protocol):
    """Capability ``pop``."""

    def pop(
        self, group: str, topic: str, queue_id: int = -1, max_nums: int = 32, invisible_ms: int = 60_000,
        poll_ms: int = 0, client_id: str = "conformance", expression: str = "*",
    ) -> PendingPop: ...
    def ack(self, group: str, topic: str, handle: str) -> None: ...
    def change_invisible(self, group: str, topic: str, handle: str, invisible_ms: int) -> str: ...
    def query_assignment(
        self, group: str, topic: str, client_id: str, strategy: str = "AllocateMessageQueueAveragely",
        pop_share_queue_num: int = -1, model: str = "CLUSTERING", mode: str = "POP",
    ) -> list[tuple[str, str, int]]: ...


class OrderedPopTarget(PopTarget, Protocol):
    """Capability ``pop_order``."""

    def pop_orderly(
        self, group: str, topic: str, queue_id: int = -1, max_nums: int = 32, invisible_ms: int = 60_000,
        poll_ms: int = 0,
    ) -> PendingPop:
        """An ordered pop (RocketMQ's PopMessageRequestHeader.order = true); acked with :meth:`ack`."""
        ...


class TopicAdminTarget(Target, Protocol):
    def delete_topic(self, topic: str) -> None:
        """Capability ``topic_admin``: delete ``topic`` on the broker (DELETE_TOPIC_IN_BROKER)."""
        ...


class GroupAdminTarget(Target, Protocol):
    def create_group(self, group: str) -> None:
        """Capability ``group_admin``: create ``group`` on the broker with default settings
        (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)."""
        ...

    def delete_group(self, group: str) -> None:
        """Capability ``group_admin``: delete ``group``'s subscription group config (DELETE_SUBSCRIPTIONGROUP); its
        offsets stay."""
        ...


class GroupInfoTarget(Target, Protocol):
    def group_info(self, group: str) -> GroupInfo | None:
        """Capability ``group_info``: what the broker keeps of ``group``; None when it keeps no such group (an
        empty group is removed, CGRP-5)."""
        ...


class RestartTarget(Target, Protocol):
    def restart(self) -> None:
        """Capability ``restart``: restart the broker on the same data, cleanly. Held requests are dropped;
        consumers must register again."""
        ...


class KillRestartTarget(RestartTarget, Protocol):
    def restart(self, kill: bool = False) -> None:
        """Capability ``restart``: restart the broker on the same data, cleanly; with ``kill`` (capability
        ``kill_restart``) as after SIGKILL. Held requests are dropped; consumers must register again."""
        ...


class StoreLayoutTarget(Target, Protocol):
    def store_layout(self) -> StoreLayout:
        """Capability ``store_layout``: the store's segment sizes."""
        ...


class ExpiryTarget(StoreLayoutTarget, Protocol):
    def expire_retention(self) -> int:
        """Capability ``retention_expire``: make every commit-log segment but the one being written count as
        expired and run the clean service now (commit log, consume queues, min offsets); return once it finished,
        with how many commit-log segments were deleted."""
        ...


class SettingsTarget(Target, Protocol):
    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Capability ``broker_config``: change RocketMQ broker settings now
        (``conformance.targets.control.BROKER_SETTINGS``); returns the values they replaced, to put back."""
        ...
    def request_manual_delete(self) -> None:
        """Capability ``manual_delete``: ask for a manual delete: the next clean runs delete expired segments at
        any hour."""
        ...


class TornRestartTarget(Target, Protocol):
    def restart_torn(self, commit_log_offset: int) -> None:
        """Capability ``torn_restart``: kill the broker, tear the record at ``commit_log_offset`` (as a write cut
        short leaves it) and restart it on that data."""
        ...
    def record_at(self, commit_log_offset: int) -> CommitLogRecord | None:
        """With ``torn_restart``: the intact record that starts at ``commit_log_offset``, whoever wrote it, or None
        (RocketMQ's VIEW_MESSAGE_BY_ID, what ``mqadmin queryMsgById`` reads)."""
        ...


class FreshStoreTarget(Target, Protocol):
    def restart_fresh(self) -> None:
        """Capability ``fresh_store``: kill the broker and restart it on an empty store (topics, messages and
        offsets gone)."""
        ...


class RaceTarget(Target, Protocol):
    def start_pull_racing(self, group: str, topic: str, queue_id: int, offset: int, sends: list[tuple[bytes, str]],
                          *, expression: str = "*", suspend_ms: int = 15_000) -> PendingPull:
        """Capability ``race_control``: a held pull with ``sends`` stored after the broker's lookup found nothing
        and before it holds the request (RocketMQ issue #7358's interleaving)."""
        ...


class TraceTarget(Target, Protocol):
    def trace_rows(self) -> list[dict[str, Any]]:
        """Capability ``trace``: the trace rows (schema v1) the broker recorded since this target was opened."""
        ...


class SimulationTarget(Target, Protocol):
    def simulate(self, scenario: Any) -> list[dict[str, Any]]:
        """Capability ``client_simulation``: run a ``reference.sim.scenario.Scenario`` with this target's client;
        the trace rows."""
        ...


class PermitTarget(Target, Protocol):
    """Capability ``flow_permits``."""

    def subscribe_permits(self, group: str, topic: str, client_id: str, sub_type: str = "Exclusive") -> None: ...
    def flow(self, group: str, client_id: str, topic: str, permits: int) -> None: ...
    def permits(self, group: str, client_id: str, topic: str) -> int: ...
    def dispatched(self, group: str, client_id: str, topic: str) -> list[DispatchedRecord]: ...
    def ack_dispatched(self, group: str, client_id: str, topic: str, records: list[DispatchedRecord]) -> None: ...
    def redeliver(
        self, group: str, client_id: str, topic: str, records: list[DispatchedRecord] | None = None
    ) -> None: ...
    def close_consumer(self, group: str, client_id: str, topic: str) -> None: ...
    def send_batch(self, topic: str, queue_id: int, bodies: list[bytes]) -> SendReceipt: ...


class EntryFaultTarget(PermitTarget, Protocol):
    """Capability ``entry_faults``: entries only a broker (or a damaged ledger) can hold."""

    def send_corrupt(self, topic: str, queue_id: int, body: bytes) -> SendReceipt:
        """Store an entry whose checksum does not match its body."""
        ...
    def send_marker(self, topic: str, queue_id: int) -> SendReceipt:
        """Store an internal marker entry (as a transaction's commit marker)."""
        ...


class DelayedTarget(PermitTarget, Protocol):
    """Capability ``delayed_delivery``."""

    def send_delayed(self, topic: str, queue_id: int, body: bytes, delay_ms: int) -> SendReceipt:
        """Send a message whose delivery time is ``delay_ms`` after the target's now (deliver_at_time)."""
        ...


class PermitLimitsTarget(PermitTarget, Protocol):
    """Capability ``permit_limits``."""

    def change_permit_limits(self, settings: dict[str, int]) -> dict[str, int]:
        """Set dispatch limits by Pulsar's names (dispatchThrottlingRatePerSubscriptionInMsg,
        maxUnackedMessagesPerConsumer); returns the values they replaced."""
        ...


class ChannelCloseTarget(Target, Protocol):
    def close_conn(self, conn: str) -> None:
        """Capability ``channel_close``: close the consumer connection ``conn``, as a consumer process that exits
        leaves it."""
        ...


class WireTarget(Target, Protocol):
    """Capability ``remoting_wire``: raw remoting frames go to ``namesrv`` and ``broker_addr``."""

    namesrv: str
    broker_addr: str

    def namespaced(self, name: str) -> str:
        """``name`` as this target puts it on the wire (its namespace prefix): for tests that write raw frames."""
        ...
    def channel_expiry(self) -> tuple[int, int] | None:
        """(channelExpiredTimeout, the housekeeping scan's interval) in ms, when the runner says them."""
        ...


class FullTarget(
    AllocationTarget, OrderedPopTarget, TopicAdminTarget, GroupInfoTarget, KillRestartTarget, ExpiryTarget,
    SettingsTarget, TornRestartTarget,
    FreshStoreTarget, RaceTarget, TraceTarget, SimulationTarget, PermitTarget, ChannelCloseTarget, Protocol,
):
    """Every capability's methods, for a driver that calls those of the capabilities a target declares
    (``mqtck diff``'s steps): no adapter has them all."""
