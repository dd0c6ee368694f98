"""Rows of the POP group: the broker assigns every queue to every client (popShareQueueNum covers
all, seed 004 §3.1) and records POP, ACK, CHANGE_INVISIBLE and REVIVE.

Each message is POPped by some client 5-200 ms after it arrives, invisible for
:data:`INVISIBLE_MS`. Most (85 %) are acked within 3 s; some (10 %) are extended with
CHANGE_INVISIBLE at 10 s to 60 s more and acked at 40 s; the rest (5 %) are never acked: their
invisibility ends, the revive service puts them on the retry topic 1-5 s later (REVIVE, reconsume
times 1) and another POP delivers them, acked at once.
"""

from __future__ import annotations

import numpy as np

from conformance.audit.synth.faults import Plan
from conformance.audit.synth.hashrand import below
from conformance.audit.synth.kinds import EXTENDED, NORMAL, SLOW, pop_kind
from conformance.audit.synth.layout import GroupSpec, Layout
from conformance.audit.synth.rows import Rows, Vocab
from reference.rules.topics import pop_retry_topic

INVISIBLE_MS = 30_000
EXTEND_AT_MS, EXTEND_TO_MS, EXTENDED_ACK_MS = 10_000, 60_000, 40_000
P_LAG, P_CLIENT, P_ACK, P_REVIVE, P_POP2, P_CLIENT2, P_ACK2 = 41, 42, 43, 44, 45, 46, 47


def _in(pairs: set[tuple[int, int]], lanes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    if not pairs:
        return np.zeros(len(lanes), dtype=bool)
    keys = lanes.astype(np.int64) * (1 << 40) + offsets
    return np.isin(keys, [lane * (1 << 40) + off for lane, off in pairs])


class PopGroup:
    def __init__(self, layout: Layout, vocab: Vocab, plan: Plan, spec: GroupSpec) -> None:
        self.layout, self.vocab, self.plan, self.spec = layout, vocab, plan, spec
        self.lanes = np.array([lane.index for lane in layout.lanes_of(spec.topic)])
        self.clients = vocab.codes([spec.client(i) for i in range(spec.clients)])
        self.group = vocab.code(spec.name)
        self.retry = vocab.code(f'{{"retry_topic": "{pop_retry_topic(spec.name, spec.topic)}"}}')

    def messages(self, r0: int, r1: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lane, offset, arrival ms) of every message of the group's topic in rounds [r0, r1)."""
        L = self.layout
        lane, r, k, i = (a.ravel() for a in np.meshgrid(self.lanes, np.arange(r0, r1), np.arange(L.bursts),
                                                         np.arange(4), indexing="ij"))
        keep = i < L.sizes[lane, r, k]
        lane, r, k, i = lane[keep], r[keep], k[keep], i[keep]
        offset = L.burst_end(lane, r, k) - L.sizes[lane, r, k] + i
        return lane, offset, L.burst_ms(lane, r, k)

    def emit(self, rows: Rows, r0: int, r1: int) -> None:
        L, seed, plan = self.layout, self.layout.seed, self.plan
        lane_info = L.lanes
        topic = np.array([self.vocab.code(lane_info[x].topic) for x in range(len(lane_info))], dtype=np.int32)
        broker = np.array([self.vocab.code(lane_info[x].broker) for x in range(len(lane_info))], dtype=np.int32)
        source = np.array([self.vocab.code(f"broker:{lane_info[x].broker}") for x in range(len(lane_info))],
                          dtype=np.int32)
        qid = np.array([lane_info[x].queue_id for x in range(len(lane_info))], dtype=np.int64)
        if r0 == 0:
            a_lane, a_client = (x.ravel() for x in np.meshgrid(self.lanes, np.arange(len(self.clients)), indexing="ij"))
            rows.add("ASSIGN", np.full(len(a_lane), 1_000), source[a_lane], group=self.group,
                     client_id=self.clients[a_client], topic=topic[a_lane], broker=broker[a_lane],
                     queue_id=qid[a_lane], offset=0, epoch=1)
        lane, offset, sent = self.messages(r0, r1)
        if not len(lane):
            return
        kind = pop_kind(L, lane, offset)
        pop1 = sent + 5 + below(seed, P_LAG, 196, lane, offset)
        c1 = below(seed, P_CLIENT, len(self.clients), lane, offset)
        c2 = (c1 + 1 + below(seed, P_CLIENT2, len(self.clients) - 1, lane, offset)) % len(self.clients)
        ack1 = pop1 + 50 + below(seed, P_ACK, 2_951, lane, offset)
        revive = pop1 + INVISIBLE_MS + 1_000 + below(seed, P_REVIVE, 4_000, lane, offset)
        early = _in(plan.pop.get("early-redelivery", set()), lane, offset)
        revive = np.where(early, pop1 + INVISIBLE_MS - 11_000, revive)
        pop2 = np.where(early, pop1 + INVISIBLE_MS - 10_000, revive + 100 + below(seed, P_POP2, 800, lane, offset))
        ack2 = pop2 + 500 + below(seed, P_ACK2, 1_500, lane, offset)
        after_ack = _in(plan.pop.get("redelivered-after-ack", set()), lane, offset)
        unrevived = _in(plan.pop.get("never-revived", set()), lane, offset)
        double_ack = _in(plan.pop.get("duplicate-pop-redelivery", set()), lane, offset)
        normal, extended, slow = kind == NORMAL, kind == EXTENDED, kind == SLOW
        ack1 = np.where(extended, pop1 + EXTENDED_ACK_MS, ack1)
        ack1 = np.where(unrevived, pop1 + EXTENDED_ACK_MS, ack1)
        pop2 = np.where(after_ack, ack1 + 5_000, np.where(unrevived, pop1 + INVISIBLE_MS + 1_000, pop2))
        q = dict(group=self.group, topic=topic[lane], broker=broker[lane], queue_id=qid[lane])

        def sel(m: np.ndarray) -> dict:
            return {k: (v[m] if isinstance(v, np.ndarray) else v) for k, v in q.items()}

        every = np.ones(len(lane), dtype=bool)
        second = slow | after_ack | unrevived
        for m, ts, client, delivery, reconsume in ((every, pop1, c1, 1, 0), (second, pop2, c2, 2, 1)):
            rows.add("POP", ts[m] * 1000, source[lane[m]], client_id=self.clients[client[m]], offset=offset[m],
                     msg_lane=lane[m], msg_off=offset[m], delivery=delivery, invisible_ms=INVISIBLE_MS,
                     reconsume_times=reconsume, **sel(m))
        acked1 = normal | extended | unrevived | double_ack
        ack1 = np.where(double_ack, ack2 + 1_000, ack1)
        for m, ts, client, delivery in ((acked1, ack1, c1, 1), (slow, ack2, c2, 2)):
            rows.add("ACK", ts[m] * 1000, source[lane[m]], group=self.group, client_id=self.clients[client[m]],
                     msg_lane=lane[m], msg_off=offset[m], delivery=delivery, status="OK")
        rows.add("CHANGE_INVISIBLE", (pop1[extended] + EXTEND_AT_MS) * 1000, source[lane[extended]], group=self.group,
                 client_id=self.clients[c1[extended]], msg_lane=lane[extended], msg_off=offset[extended], delivery=1,
                 invisible_ms=EXTEND_TO_MS)
        rows.add("REVIVE", revive[slow] * 1000, source[lane[slow]], group=self.group, msg_lane=lane[slow],
                 msg_off=offset[slow], reconsume_times=1, detail=self.retry)
        late_revive = after_ack
        rows.add("REVIVE", (pop2[late_revive] + INVISIBLE_MS + 1_000) * 1000, source[lane[late_revive]],
                 group=self.group, msg_lane=lane[late_revive], msg_off=offset[late_revive], reconsume_times=2,
                 detail=self.retry)

