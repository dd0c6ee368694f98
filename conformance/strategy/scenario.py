"""Scenarios: consumer groups as Hypothesis generates them, shaped to find real allocation bugs.

A scenario holds everything one rebalance round sees (sorted queues, sorted client ids, params) plus
the ids the properties need around it: consumers outside the group, one about to join, one about to
leave. The generator is biased on purpose, because the bugs that matter hide in specific corners:

* sizes come in classes (none / few / some / many queues; few / some / more than 16 consumers, and
  rarely an empty group), so large groups and "more consumers than queues" are drawn often instead
  of once in a blue moon, while shrinking still walks toward the small classes;
* every draw has the same bounds whatever came before it (a size is a class plus an offset taken
  modulo the class's width, a position is taken modulo the length), so when the shrinker makes one
  choice smaller the choices after it still mean something and shrinking keeps going;
* most groups span several brokers (and sometimes several topics, and queue ids that do not start at
  0 or skip), which is where strategies that index by queue id or assume one broker go wrong;
* client ids are realistic (``ip@pid``, ``ip@DEFAULT``, ``ip@pid@unit``, ``cid-007``) from a small
  pool of hosts, so two consumers often share an IP, and some names use characters whose Java order
  differs from Python's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from conformance.strategy.declaration import (
    CONFIGURED,
    POP_SHARE,
    ROOM_BY_IDC,
    ROOM_NEARBY,
    Declaration,
)
from conformance.strategy.model import Request, canonical_params
from reference.allocation import MessageQueue, java_string_key

MAX_QUEUES = 64
MAX_CONSUMERS = 40
#: Above this many consumers some strategies misbehave (bit masks, fixed tables); "many" starts here.
MANY_CONSUMERS_FROM = 17

GROUPS = ("GID_demo", "please_rename_unique_group_name", "GID_订单")
TOPICS = ("TopicTest", "%RETRY%GID_demo", "order-topic", "A_topic", "a_topic", "主题", "T😀")
#: Plain broker names, including pairs whose Java order is a trap ("broker-10" < "broker-2",
#: "Broker-z" < "broker-a", and "b😀" < "bＡ" in Java but not in Python).
PLAIN_BROKERS = ("broker-a", "broker-b", "broker-c", "broker-10", "broker-2", "Broker-z", "bＡ", "b😀")
BROKER_LETTERS = ("a", "b", "c", "d")
#: Rooms for ``<room>@<broker>`` names (machine room by IDC).
IDC_ROOMS = ("room1", "room2", "room3")
#: Rooms for ``<ROOM>-…`` names (nearby). Brokers live in the first three; "HZ" has consumers only.
NEARBY_BROKER_ROOMS = ("IDC1", "IDC2", "IDC3")
NEARBY_CONSUMER_ROOMS = ("IDC1", "IDC2", "IDC3", "HZ")
HOSTS = ("192.168.0.7", "192.168.0.10", "192.168.0.100", "10.0.3.4", "172.17.0.2")
UNITS = ("unitA", "unitB")
ODD_NAMES = ("consumer-é", "消费者-", "x😀", "xＡ")

# Size classes: sampled_from shrinks toward the first entry, repetition sets the odds.
_QUEUE_CLASSES = st.sampled_from(("few", "some", "many") * 5 + ("none", "many"))
_QUEUE_RANGES = {"none": (0, 0), "few": (1, 4), "some": (5, 16), "many": (17, MAX_QUEUES)}
_CONSUMER_CLASSES = st.sampled_from(("few", "some", "many") * 6 + ("many", "many", "empty", "many", "many"))
_CONSUMER_RANGES = {"empty": (0, 0), "few": (1, 4), "some": (5, 16), "many": (MANY_CONSUMERS_FROM, MAX_CONSUMERS)}
#: Offsets and positions are drawn from this one range and reduced modulo what they index.
_OFFSETS = st.integers(0, MAX_QUEUES)


@dataclass(frozen=True)
class Scenario:
    """One consumer group at one rebalance. ``mq_all`` and ``cid_all`` are sorted in Java order."""

    consumer_group: str
    mq_all: tuple[MessageQueue, ...]
    cid_all: tuple[str, ...]
    outsiders: tuple[str, ...] = ()
    joiner: str = "joiner@1"
    leaver: str | None = None
    params_json: str = "{}"

    @property
    def params(self) -> dict[str, Any]:
        return json.loads(self.params_json)

    @property
    def asked(self) -> tuple[str, ...]:
        """Everyone a group evaluation asks: the members, then the outsiders."""
        return self.cid_all + self.outsiders

    def request(self, current_cid: str) -> Request:
        return Request(self.consumer_group, current_cid, self.mq_all, self.cid_all, self.params_json)

    def with_members(self, cid_all: Sequence[str]) -> Scenario:
        """The same queues and params after the group changed (no outsiders: members only)."""
        members = tuple(sorted(cid_all, key=java_string_key))
        return Scenario(self.consumer_group, self.mq_all, members, (), self.joiner, None, self.params_json)

    def after_join(self) -> Scenario:
        return self.with_members((*self.cid_all, self.joiner))

    def after_leave(self) -> Scenario | None:
        if self.leaver is None:
            return None
        return self.with_members(tuple(c for c in self.cid_all if c != self.leaver))

    def to_json(self) -> dict[str, Any]:
        return {
            "consumerGroup": self.consumer_group,
            "mqAll": [mq.to_json() for mq in self.mq_all],
            "cidAll": list(self.cid_all),
            "outsiders": list(self.outsiders),
            "joiner": self.joiner,
            "leaver": self.leaver,
            "params": self.params,
        }


#: Size of the pool client ids are drawn from (by index: one draw per id, and shrinking toward
#: index 0 gives the plainest ids).
ID_POOL = 4000
#: Client id forms, in turn; mostly ``ip@pid``.
_FORMS = ("pid", "pid", "pid", "default", "pid", "unit", "cid", "odd")


def client_id(index: int, room: str | None = None) -> str:
    """The index-th id of the pool. Injective; ids come in pairs on one host (``index // 2``), so
    the smallest groups already include two consumers on one machine, a case that breaks
    strategies which identify a consumer by its IP."""
    pair, member = divmod(index, 2)
    host, turn = HOSTS[pair % len(HOSTS)], pair // len(HOSTS)
    form, cycle = _FORMS[turn % len(_FORMS)], turn // len(_FORMS)
    pid = 1 + 2 * turn + member
    if form == "default" and cycle == 0 and member == 0:
        cid = f"{host}@DEFAULT"
    elif form == "unit":
        cid = f"{host}@{pid}@{UNITS[cycle % len(UNITS)]}"
    elif form == "cid":
        cid = f"cid-{index:03d}"
    elif form == "odd":
        cid = f"{ODD_NAMES[cycle % len(ODD_NAMES)]}{index}"
    else:
        cid = f"{host}@{pid}"
    return f"{room}-{cid}" if room else cid


_INDICES = st.integers(0, ID_POOL - 1)
_ROOMS = st.sampled_from(NEARBY_CONSUMER_ROOMS)
#: Draws allowed to find an id that is not taken yet, before the next free id of the pool is used.
_UNIQUE_TRIES = 8
_OUTSIDER_COUNTS = st.integers(0, 2)
#: One outsider in four is the empty id (which RocketMQ refuses).
_EMPTY_ID = st.sampled_from((False, False, False, True))


def _fresh_id(draw: st.DrawFn, machine_room: str | None, taken: set[str]) -> str:
    """An id not in ``taken``, drawn one at a time (cheaper, and shrinks better, than ``unique=True``);
    after a few collisions, the next free id of the pool."""
    room = draw(_ROOMS) if machine_room == ROOM_NEARBY else None
    index = draw(_INDICES)
    for _ in range(_UNIQUE_TRIES):
        cid = client_id(index, room)
        if cid not in taken:
            return cid
        index = draw(_INDICES)
    while client_id(index, room) in taken:
        index = (index + 1) % ID_POOL
    return client_id(index, room)


def _pick(draw: st.DrawFn, length: int) -> int:
    """A position in ``range(length)`` (``length`` > 0) whose bounds never change."""
    return draw(_OFFSETS) % length


def _size(draw: st.DrawFn, classes: st.SearchStrategy[str], ranges: dict[str, tuple[int, int]]) -> int:
    low, high = ranges[draw(classes)]
    return low + _pick(draw, high - low + 1)


def _distinct(draw: st.DrawFn, pool: Sequence[str], count: int) -> list[str]:
    """``count`` different names from ``pool``, drawn one by one (the next unused one on a repeat)."""
    names: list[str] = []
    for _ in range(min(count, len(pool))):
        index = _pick(draw, len(pool))
        while pool[index] in names:
            index = (index + 1) % len(pool)
        names.append(pool[index])
    return names


_BROKER_COUNTS = {None: st.sampled_from((1, 2, 3)), ROOM_BY_IDC: st.integers(1, 4), ROOM_NEARBY: st.integers(1, 6)}


def _brokers(draw: st.DrawFn, machine_room: str | None) -> list[str]:
    count = draw(_BROKER_COUNTS[machine_room])
    if machine_room == ROOM_BY_IDC:
        return [f"{IDC_ROOMS[_pick(draw, len(IDC_ROOMS))]}@broker-{BROKER_LETTERS[i]}" for i in range(count)]
    if machine_room == ROOM_NEARBY:
        return [
            f"{NEARBY_BROKER_ROOMS[_pick(draw, len(NEARBY_BROKER_ROOMS))]}-broker-{BROKER_LETTERS[i % 4]}{i // 4 or ''}"
            for i in range(count)
        ]
    return _distinct(draw, PLAIN_BROKERS, count)


_ID_STYLES = st.sampled_from(("contiguous", "contiguous", "offset", "strided"))


def _queue_ids(draw: st.DrawFn, count: int) -> list[int]:
    """Mostly 0..count-1; sometimes starting later or with gaps (queues added or removed)."""
    style = draw(_ID_STYLES)
    if style == "contiguous":
        return list(range(count))
    first = 1 + _pick(draw, 8)
    step = 1 if style == "offset" else 2 + _pick(draw, 2)
    return [first + i * step for i in range(count)]


_TOPIC_COUNTS = st.sampled_from((1, 1, 2, 3))


def _queues(draw: st.DrawFn, machine_room: str | None, total: int) -> tuple[MessageQueue, ...]:
    topics = _distinct(draw, TOPICS, draw(_TOPIC_COUNTS))
    brokers = _brokers(draw, machine_room)
    cells = [(topic, broker) for topic in topics for broker in brokers]
    cuts = sorted(_pick(draw, total + 1) for _ in cells[1:])
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]
    queues = {
        MessageQueue(topic, broker, queue_id)
        for (topic, broker), size in zip(cells, sizes, strict=True)
        for queue_id in _queue_ids(draw, size)
    }
    return tuple(sorted(queues, key=lambda mq: mq.sort_key))


_POP_KINDS = st.sampled_from(("sharing", "edge", "any"))


def _params(
    draw: st.DrawFn, declaration: Declaration, mq_all: tuple[MessageQueue, ...], n: int
) -> dict[str, Any]:
    params = dict(declaration.params)
    if declaration.machine_room == ROOM_BY_IDC:
        params["consumeridcs"] = sorted(_distinct(draw, IDC_ROOMS, 1 + _pick(draw, len(IDC_ROOMS))))
    if declaration.model == POP_SHARE:
        # Mostly the sharing range 1..n-2 (the interesting branch), also the edges and beyond.
        kind = draw(_POP_KINDS)
        if kind == "sharing":
            k = 1 + _pick(draw, max(1, n - 2))
        elif kind == "edge":
            edges = (-1, 0, 1, n - 2, n - 1, n, n + 2)
            k = edges[_pick(draw, len(edges))]
        else:
            k = -1 + _pick(draw, n + 5)
        params["popShareQueueNum"] = k
        params["innerStrategy"] = declaration.pop_inner
    if declaration.model == CONFIGURED:
        params["messageQueueList"] = [mq.to_json() for mq in mq_all if draw(st.booleans())]
    return params


@st.composite
def scenarios(draw: st.DrawFn, declaration: Declaration) -> Scenario:
    """Consumer groups for a strategy making ``declaration``'s promises."""
    room = declaration.machine_room
    # Sizes first: Hypothesis leans toward small values for draws that come after many others.
    total = _size(draw, _QUEUE_CLASSES, _QUEUE_RANGES)
    n = _size(draw, _CONSUMER_CLASSES, _CONSUMER_RANGES)
    mq_all = _queues(draw, room, total)
    taken: set[str] = set()
    for _ in range(n):
        taken.add(_fresh_id(draw, room, taken))
    members = tuple(sorted(taken, key=java_string_key))
    outsiders: list[str] = []
    for _ in range(draw(_OUTSIDER_COUNTS)):
        cid = "" if draw(_EMPTY_ID) else _fresh_id(draw, room, set())
        if cid not in taken and cid not in outsiders:
            outsiders.append(cid)
    joiner = _fresh_id(draw, room, taken)
    leaver = members[_pick(draw, n)] if n >= 2 else None
    return Scenario(
        consumer_group=GROUPS[_pick(draw, len(GROUPS))],
        mq_all=mq_all,
        cid_all=members,
        outsiders=tuple(outsiders),
        joiner=joiner,
        leaver=leaver,
        params_json=canonical_params(_params(draw, declaration, mq_all, n)),
    )
