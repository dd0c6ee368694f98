"""Targets: the one interface through which the conformance suite drives an implementation.

A target declares its **capabilities**; a conformance test that needs one the target lacks is
reported *not applicable* (pytest skip with reason ``not applicable: needs <capability>``), never
passed. ``open_target("reference")`` gives the in-process reference on simulated time;
``mutant:NAME`` the reference with one seeded fault (``conformance.mutants``);
``http://host:port`` whatever serves the HTTP front's API (``conformance.targets.http``), with the
capabilities its ``GET /capabilities`` declares; ``remoting://host:port`` any RocketMQ-protocol broker
reached through the name server at that address (``conformance.targets.remoting``).
"""

from __future__ import annotations

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
        # The target runs reference.sim scenarios with its consumer client and returns the trace rows.
        "client_simulation",
        # Judged by `mqtck conform --client` from the reference broker's trace, not through a target.
        "client_under_test",
    }
)


@dataclass(frozen=True)
class SendReceipt:
    queue_id: int
    queue_offset: int
    msg_id: str


@dataclass(frozen=True)
class PulledMessage:
    queue_offset: int
    body: bytes
    tags: str | None
    msg_id: str


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


@dataclass(frozen=True)
class TargetError(Exception):
    """A request the target refused: ``code`` and the ``field`` it named."""

    code: str
    field: str = ""
    rule: str = ""


class PendingPull(Protocol):
    def done(self) -> bool: ...
    def result(self) -> PullReply: ...


class Target(Protocol):
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
    def close(self) -> None: ...
    # -- allocation (capability "allocation"): (topic, brokerName, queueId) triples ---------------
    def allocate(
        self, strategy: str, group: str, current_cid: str, mq_all: list[tuple[str, str, int]], cid_all: list[str]
    ) -> list[tuple[str, str, int]]: ...
    # -- pop (capability "pop"); restart (capability "restart") ------------------------------------
    def pop(
        self, group: str, topic: str, queue_id: int = -1, max_nums: int = 32, invisible_ms: int = 60_000,
        poll_ms: int = 0, client_id: str = "conformance", expression: str = "*",
    ) -> PendingPop: ...
    def ack(self, group: str, topic: str, handle: str) -> None: ...
    def change_invisible(self, group: str, topic: str, handle: str, invisible_ms: int) -> str: ...
    def query_assignment(
        self, group: str, topic: str, client_id: str, strategy: str = "AllocateMessageQueueAveragely",
        pop_share_queue_num: int = -1, model: str = "CLUSTERING",
    ) -> list[tuple[str, str, int]]: ...
    def restart(self) -> None: ...
    # -- client simulation (capability "client_simulation") -----------------------------------------
    def simulate(self, scenario: Any) -> list[dict[str, Any]]:
        """Run a ``reference.sim.scenario.Scenario`` with this target's client; the trace rows."""
        ...
    # -- permits (capability "flow_permits") -------------------------------------------------------
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


@dataclass
class TargetSpec:
    """A parsed ``--target`` value."""

    kind: str
    arg: str = ""
    options: dict[str, str] = field(default_factory=dict)


def parse_target(text: str) -> TargetSpec:
    """Parse and check a ``--target`` value (a mutant must be in the catalogue); ValueError if bad."""
    if text == "reference":
        return TargetSpec("reference")
    if text.startswith("mutant:"):
        from conformance.mutants import CATALOGUE

        name = text.split(":", 1)[1]
        if name not in CATALOGUE:
            raise ValueError(f"unknown mutant {name!r}; known: {', '.join(sorted(CATALOGUE))}")
        return TargetSpec("mutant", name)
    if text.startswith(("http://", "https://")):
        rest = text.split("://", 1)[1]
        if not rest.strip("/"):
            raise ValueError(f"target {text!r} names no host: expected http://HOST:PORT")
        return TargetSpec("http", text.rstrip("/"))
    if text.startswith("remoting://"):
        address = text.split("://", 1)[1].rstrip("/")
        host, sep, port = address.rpartition(":")
        if not (host and sep and port.isdigit()):
            raise ValueError(f"target {text!r}: expected remoting://HOST:PORT (the name server's address)")
        return TargetSpec("remoting", address)
    raise ValueError(
        f"unknown target {text!r}: expected 'reference', 'mutant:NAME', 'http://HOST:PORT' or 'remoting://HOST:PORT'"
    )


_probed: dict[str, frozenset[str]] = {}


def target_capabilities(text: str) -> frozenset[str]:
    """The capabilities of ``text``: declared by the class in-process, asked of the server over HTTP
    (once per process; ``conformance.targets.http.UnreachableTarget`` if it does not answer)."""
    spec = parse_target(text)
    if spec.kind == "http":
        if spec.arg not in _probed:
            from conformance.targets.http import probe

            declared = frozenset(probe(spec.arg)["capabilities"])
            _probed[spec.arg] = declared & CAPABILITIES
        return _probed[spec.arg]
    if spec.kind == "remoting":
        if spec.arg not in _probed:
            from conformance.targets.remoting import CAPABILITIES as REMOTING
            from conformance.targets.remoting import discover_broker

            discover_broker(spec.arg)  # UnreachableTarget if the name server does not answer
            _probed[spec.arg] = REMOTING
        return _probed[spec.arg]
    from conformance.targets.reference import ReferenceTarget

    return ReferenceTarget.capabilities


def open_target(text: str, workdir: str) -> Target:
    """Open a target in ``workdir`` (a fresh directory the caller removes)."""
    from conformance.targets.reference import ReferenceTarget

    spec = parse_target(text)
    if spec.kind == "reference":
        return ReferenceTarget(workdir)
    if spec.kind == "http":
        from conformance.targets.http import HttpTarget

        return HttpTarget(spec.arg, target_capabilities(text))
    if spec.kind == "remoting":
        from conformance.targets.remoting import RemotingTarget

        return RemotingTarget(spec.arg, name=text)
    from conformance.mutants import CATALOGUE

    return ReferenceTarget(workdir, mutant=CATALOGUE[spec.arg], name=text)
