"""Fault injection: where each requested fault goes, chosen so that every fault yields exactly one finding
of its category and nothing else.

``--inject KIND=COUNT`` names a finding category (:mod:`conformance.audit.categories`). The base
workload audits clean; each fault is a small, local edit of it whose consequences are confined:

* *lost* / *expired*: in a queue's last round a message stays in the consumer's ProcessQueue forever
  (no CONSUME), so its later commits stay at its offset (committing past it would also be an unsafe
  commit); for *expired*, a RETENTION then raises the queue's min offset above it.
* *pending*: a SEND near the end, matching one group only.
* *unsafe commit*: two messages of a burst consumed out of order with a commit of the later one's
  offset in between (the earlier one is consumed right after, so nothing is lost).
* *pull / commit after drop*, *ownership overlap*, *duplicate-rebalance*: at a rebalance, the old owner
  pulls or commits after its REVOKE, REVOKEs 25 s late, or the new owner starts one message early.
* *duplicate-crash*: a client crashes (its last commit lost) and the next owner starts one early.
* long poll: a timed-out empty answer comes 5 s after the request (*early*) or 7 s after the allowed
  bound (*late*); an answer to a woken pull comes 1.5 s late (*slow wake*); a timeout answers
  OFFSET_OVERFLOW_BADLY where the table says OFFSET_OVERFLOW_ONE (*bad offset correction*).
* POP: a revive and redelivery 10 s early; a redelivery after the ack; a redelivery that is never acked
  or revived while the first delivery's late ack consumes the message; a late ack of a revived delivery.
* permits: a burst of redeliveries beyond the permits then a FLOW that covers them (*overrun*); a batch entry of
  redeliveries that spends the permits exactly, then one more message, started at 0 permits, which the read of the
  batch could have carried (*entry-overrun*, FLOW-11 only); a round's last dispatches held back 12 s (*freeze*).
* duplicates: a retry after a LATER, or a second OK with no cause; *bad row*: extra malformed rows.

Sites are drawn with a seeded generator; a request larger than the workload has sites for is refused
with a message naming the kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from conformance.audit.categories import BY_NAME
from conformance.audit.synth.kinds import NORMAL, SLOW, matches, pop_kind
from conformance.audit.synth.layout import GROUPS, Layout
from conformance.audit.synth.tracks import Tracks

FINAL_KINDS = ("lost", "expired", "late-poll-return")
REBALANCE_KINDS = ("pull-after-drop", "commit-after-drop", "ownership-overlap", "duplicate-rebalance")
TIMEOUT_KINDS = ("early-poll-return", "bad-offset-correction")
BURST_KINDS = ("unsafe-commit", "slow-wake", "duplicate-retry", "duplicate-unknown")
POP_KINDS = ("early-redelivery", "redelivered-after-ack", "never-revived", "duplicate-pop-redelivery")
OTHER_KINDS = ("pending", "duplicate-crash", "permit-overrun", "permit-entry-overrun", "permit-freeze",
               "bad-row")
KINDS = FINAL_KINDS + REBALANCE_KINDS + TIMEOUT_KINDS + BURST_KINDS + POP_KINDS + OTHER_KINDS
#: Sampling attempts per requested fault, and in all, before giving up.
ATTEMPTS = 200
MAX_ATTEMPTS = 200_000


class InjectionError(ValueError):
    """A malformed --inject value, or more faults than the workload has sites for."""


def parse_inject(text: str | None) -> dict[str, int]:
    """``"lost=3,slow-wake=1"`` -> {"lost": 3, "slow-wake": 1}."""
    out: dict[str, int] = {}
    for item in filter(None, (p.strip() for p in (text or "").split(","))):
        name, sep, count = item.partition("=")
        if not sep or not count.strip().isdigit():
            raise InjectionError(f"--inject: {item!r} is not KIND=COUNT")
        if name not in KINDS:
            raise InjectionError(f"--inject: unknown kind {name!r}; kinds: {', '.join(sorted(KINDS))}")
        out[name] = out.get(name, 0) + int(count)
    assert set(KINDS) == set(BY_NAME), "every finding category can be injected"
    return out


def key(g: int | np.ndarray, t: int | np.ndarray, r: int | np.ndarray, k: int | np.ndarray,
        layout: Layout) -> np.ndarray:
    """One int per (group, track, round, burst); burst ``layout.bursts`` stands for the whole round."""
    g, t, r, k = (np.asarray(x, dtype=np.int64) for x in (g, t, r, k))
    return ((g * 4096 + t) * layout.rounds + r) * (layout.bursts + 1) + k


@dataclass
class Plan:
    counts: dict[str, int]
    forced_crashes: dict[int, set[int]] = field(default_factory=dict)
    #: kind -> encoded keys (see :func:`key`).
    sites: dict[str, np.ndarray] = field(default_factory=dict)
    #: lanes whose last round gets a RETENTION above the stuck message (expired), and pending SENDs.
    expired_lanes: list[int] = field(default_factory=list)
    pending_lanes: list[int] = field(default_factory=list)
    #: POP kind -> (lane, offset) of the messages it edits.
    pop: dict[str, set[tuple[int, int]]] = field(default_factory=dict)
    overrun: set[tuple[int, int, int]] = field(default_factory=set)
    entry_overrun: set[tuple[int, int, int]] = field(default_factory=set)
    freeze_rounds: set[int] = field(default_factory=set)

    def has(self, kind: str, keys: np.ndarray) -> np.ndarray:
        sites = self.sites.get(kind)
        if sites is None or not len(sites):
            return np.zeros(np.shape(keys), dtype=bool)
        return np.isin(keys, sites)


def _take(rng: np.random.Generator, kind: str, count: int, draw, ok, used: set) -> list:
    chosen: list = []
    for _ in range(min(count * ATTEMPTS + 2_000, MAX_ATTEMPTS)):
        if len(chosen) == count:
            break
        site = draw()
        if site in used or not ok(site):
            continue
        used.add(site)
        chosen.append(site)
    if len(chosen) < count:
        raise InjectionError(f"--inject: the workload has sites for {len(chosen)} {kind} faults, not {count}; "
                             "ask for fewer or generate more events")
    return chosen


def plan_faults(layout: Layout, counts: dict[str, int], seed: int, make_tracks) -> tuple[Plan, list[Tracks]]:
    """Choose the sites; ``make_tracks(forced_crashes)`` builds the pull tracks (crashes forced for
    duplicate-crash change who owns what)."""
    rng = np.random.default_rng([seed, 7])
    plan = Plan(dict(counts))
    R, B = layout.rounds, layout.bursts
    audit_group = next(g for g, s in enumerate(GROUPS) if s.kind == "pull" and s.crash_p > 0)
    # duplicate-crash: force crashes first, they change ownership.
    crash_rounds = _take(rng, "duplicate-crash", counts.get("duplicate-crash", 0),
                         lambda: int(rng.integers(0, max(R - 3, 1))), lambda r: True, set())
    plan.forced_crashes = {audit_group: set(crash_rounds)}
    tracks = make_tracks(plan.forced_crashes)
    by_group = {tr.group: tr for tr in tracks}
    clustering = [tr for tr in tracks if not tr.broadcasting]
    used: set = set()

    def add(kind: str, sites: list[tuple]) -> None:
        plan.sites[kind] = np.array([key(*s, layout) for s in sites], dtype=np.int64)

    # duplicate-crash sites: a track the crashed client owned, in the round after the crash.
    crash_sites = []
    audit = by_group[audit_group]
    for rc in crash_rounds:
        victim = audit.crash[rc]
        lanes_of_victim = np.flatnonzero(audit.owner[:, rc] == victim)
        t = int(rng.choice(lanes_of_victim)) if len(lanes_of_victim) else None
        if t is None or (audit_group, t, rc + 1, B) in used:
            raise InjectionError("--inject: the workload has no queue for a duplicate-crash fault; ask for fewer")
        used.add((audit_group, t, rc + 1, B))
        crash_sites.append((audit_group, t, rc + 1, B))
    add("duplicate-crash", crash_sites)

    # Last-round faults, one per (group, track); expired takes its lane for itself.
    def draw_final():
        tr = clustering[int(rng.integers(len(clustering)))]
        return (tr.group, int(rng.integers(len(tr.lane))), R - 1, B)

    lane_of = {(tr.group, t): int(tr.lane[t]) for tr in tracks for t in range(len(tr.lane))}
    expired = _take(rng, "expired", counts.get("expired", 0), draw_final,
                    lambda s: lane_of[(s[0], s[1])] not in plan.expired_lanes, used)
    plan.expired_lanes = [lane_of[(s[0], s[1])] for s in expired]
    add("expired", expired)
    busy_lanes = set(plan.expired_lanes)
    for kind in ("lost", "late-poll-return"):
        sites = _take(rng, kind, counts.get(kind, 0), draw_final,
                      lambda s: lane_of[(s[0], s[1])] not in busy_lanes, used)
        add(kind, sites)
    order_lanes = [lane.index for lane in layout.lanes_of(GROUPS[0].topic) if lane.index not in busy_lanes]
    plan.pending_lanes = _take(rng, "pending", counts.get("pending", 0),
                               lambda: int(rng.choice(order_lanes)) if order_lanes else -1, lambda s: s >= 0, set())

    # Rebalance sites: a live hand-over, not in the first or last round.
    def draw_rebalance():
        tr = clustering[int(rng.integers(len(clustering)))]
        return (tr.group, int(rng.integers(len(tr.lane))), int(rng.integers(1, max(R - 1, 2))), B)

    def is_handover(s, star_only=False):
        tr = by_group[s[0]]
        if not tr.changed()[s[1], s[2]]:
            return False
        return not star_only or tr.spec.expression == "*"

    for kind in REBALANCE_KINDS:
        add(kind, _take(rng, kind, counts.get(kind, 0), draw_rebalance,
                        lambda s, k=kind: is_handover(s, k == "duplicate-rebalance"), used))

    # Timeouts and bursts of any pull track (broadcasting too), before the last round.
    def draw_track(k_max: int):
        tr = tracks[int(rng.integers(len(tracks)))]
        return (tr.group, int(rng.integers(len(tr.lane))), int(rng.integers(0, max(R - 1, 1))),
                int(rng.integers(0, k_max)) if k_max < B else B)

    for kind in TIMEOUT_KINDS:
        add(kind, _take(rng, kind, counts.get(kind, 0), lambda: draw_track(B), lambda s: True, used))
    burst_limits = {"unsafe-commit": B - 1, "slow-wake": B - 1, "duplicate-retry": B - 2, "duplicate-unknown": B - 1}
    for kind in BURST_KINDS:
        ok = (lambda s: _matching_in_burst(layout, by_group[s[0]], s) >= 2) if kind == "unsafe-commit" \
            else (lambda s: True)
        add(kind, _take(rng, kind, counts.get(kind, 0), lambda k=kind: draw_track(burst_limits[k]), ok, used))

    # POP messages, by the kind of delivery they had in the base workload.
    pop_lanes = [lane.index for lane in layout.lanes if lane.topic == _topic_of("pop")]
    wanted = {"early-redelivery": (SLOW, R - 1), "duplicate-pop-redelivery": (SLOW, R - 1),
              "redelivered-after-ack": (NORMAL, R - 1), "never-revived": (NORMAL, R - 2)}
    used_msgs: set = set()
    for kind in POP_KINDS:
        want_kind, r_max = wanted[kind]

        def draw_msg(r_max: int = r_max):
            lane = int(rng.choice(pop_lanes))
            r = int(rng.integers(0, max(r_max, 1)))
            k = int(rng.integers(0, B))
            end = int(layout.burst_end(np.array(lane), np.array(r), np.array(k)))
            return (lane, end - 1)

        chosen = _take(rng, kind, counts.get(kind, 0), draw_msg,
                       lambda s, w=want_kind: int(pop_kind(layout, np.array([s[0]]), np.array([s[1]]))[0]) == w,
                       used_msgs)
        plan.pop[kind] = set(chosen)

    # Permits: a burst's dispatches (overrun) and a round's tail (freeze), before the last round.
    flow_lanes = [lane.index for lane in layout.lanes if lane.topic == _topic_of("permits")]
    freeze = _take(rng, "permit-freeze", counts.get("permit-freeze", 0),
                   lambda: int(rng.integers(0, max(R - 1, 1))), lambda r: True, set())
    plan.freeze_rounds = set(freeze)
    bursts: set = set()

    def draw_burst() -> tuple[int, int, int]:
        return int(rng.choice(flow_lanes)), int(rng.integers(0, max(R - 1, 1))), int(rng.integers(0, B - 1))

    plan.overrun = set(_take(rng, "permit-overrun", counts.get("permit-overrun", 0), draw_burst,
                             lambda s: s[1] not in plan.freeze_rounds, bursts))
    plan.entry_overrun = set(_take(rng, "permit-entry-overrun", counts.get("permit-entry-overrun", 0), draw_burst,
                                   lambda s: s[1] not in plan.freeze_rounds, bursts))
    return plan, tracks


def _topic_of(kind: str) -> str:
    return next(s.topic for s in GROUPS if s.kind == kind)


def _matching_in_burst(layout: Layout, tracks: Tracks, site: tuple) -> int:
    _, t, r, k = site
    lane = int(tracks.lane[t])
    end = int(layout.burst_end(np.array(lane), np.array(r), np.array(k)))
    size = int(layout.sizes[lane, r, k])
    offsets = np.arange(end - size, end)
    first = offsets == end - size
    tags = layout.tag_codes(np.full(size, lane), offsets, first)
    return int(matches(tracks.spec.expression, tags).sum())

