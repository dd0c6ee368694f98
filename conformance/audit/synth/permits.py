"""Rows of the permit subscription (Pulsar's exclusive/failover dispatcher, seed 003).

Both consumers grant :data:`INITIAL_PERMITS` with FLOW when they connect; the broker dispatches every
message to the active one 2 ms after it arrives, and the active consumer re-grants
:data:`REGRANT` permits every time it has received that many, recorded with the fifth dispatch (so
its permits stay between 5 and 10 and never run out); the standby is never dispatched to.
"""

from __future__ import annotations

import numpy as np

from conformance.audit.synth.faults import Plan
from conformance.audit.synth.layout import ROUND_MS, GroupSpec, Layout
from conformance.audit.synth.pop import PopGroup
from conformance.audit.synth.rows import Rows, Vocab

INITIAL_PERMITS = 10
REGRANT = 5
DISPATCH_DELAY_MS = 2
#: permit-freeze: a round's last dispatches held back this long.
FREEZE_DELAY_MS = 12_000


class PermitGroup:
    def __init__(self, layout: Layout, vocab: Vocab, plan: Plan, spec: GroupSpec) -> None:
        self.layout, self.vocab, self.plan, self.spec = layout, vocab, plan, spec
        self._messages = PopGroup(layout, vocab, plan, spec)  # same message enumeration
        self.clients = vocab.codes([spec.client(i) for i in range(spec.clients)])
        self.group = vocab.code(spec.name)
        self.topic = vocab.code(spec.topic)
        self.lane_source = vocab.codes([f"broker:{lane.broker}" for lane in layout.lanes])
        self.dispatched = 0
        self.regrants = 0

    def emit(self, rows: Rows, r0: int, r1: int) -> None:
        L, plan = self.layout, self.plan
        src = int(self.lane_source[self._messages.lanes[0]])
        if r0 == 0:
            rows.add("FLOW", np.arange(1, len(self.clients) + 1) * 1000, src, group=self.group,
                     client_id=self.clients, topic=self.topic, count=INITIAL_PERMITS)
        lane, offset, sent = self._messages.messages(r0, r1)
        if not len(lane):
            return
        rounds = sent // ROUND_MS
        k_last = L.burst_ms(lane, rounds, np.full(len(lane), L.bursts - 1)) == sent
        frozen = np.isin(rounds, list(plan.freeze_rounds)) & k_last
        at = sent + DISPATCH_DELAY_MS + np.where(frozen, FREEZE_DELAY_MS, 0)
        order = np.lexsort((offset, lane, at))
        lane, offset, at, sent = lane[order], offset[order], at[order], sent[order]
        d = self.dispatched + np.arange(len(lane))
        active = int(self.clients[0])
        # The re-grant is recorded right after its fifth dispatch, at the same time (``order`` places it
        # between that dispatch and the next): the two queues' bursts sometimes land in the same
        # millisecond, eight dispatches at once, and a re-grant a millisecond later came too late: 8 overruns
        # the workload did not mean in a 100M-row trace.
        step = np.arange(len(lane), dtype=np.int64)
        rows.add("DISPATCH", at * 1000, src, order=2 * step, group=self.group, client_id=active, topic=self.topic,
                 offset=offset, msg_lane=lane, msg_off=offset)
        regrant = (d + 1) % REGRANT == 0
        rows.add("FLOW", at[regrant] * 1000, src, order=2 * step[regrant] + 1, group=self.group, client_id=active,
                 topic=self.topic, count=REGRANT)
        # permit-overrun: after the last dispatch of a chosen burst, redeliver more messages than the
        # consumer has permits for, then let its next FLOW cover them. permit-entry-overrun: redeliver a batch
        # entry of exactly the permits left, then one single message (started at 0 permits, which the batch's
        # read could carry: FLOW-11, not FLOW-2), then the same covering FLOW.
        sites = [(site, False) for site in plan.overrun] + [(site, True) for site in plan.entry_overrun]
        for (lane_i, r, k), batch in sorted(sites):
            if not r0 <= r < r1:
                continue
            end = int(L.burst_end(np.array(lane_i), np.array(r), np.array(k)))
            hit = np.flatnonzero((lane == lane_i) & (offset == end - 1))
            if not len(hit):
                continue
            i = int(hit[0])
            # Everything recorded at or before at[i] comes before the extra dispatches (at[i] ms + 10 µs on).
            granted = INITIAL_PERMITS + REGRANT * (self.regrants + int(np.sum(regrant & (at <= at[i]))))
            balance = granted - (self.dispatched + int(np.sum(at <= at[i])))
            extra = balance + 1
            ts = at[i] * 1000 + 10 + np.arange(extra)
            detail = -1
            if batch:
                detail = np.array([self.vocab.code(f'{{"batch_index": {j}, "batch_size": {balance}}}')
                                   for j in range(balance)] + [-1], dtype=np.int32)
            rows.add("DISPATCH", ts, src, group=self.group, client_id=active, topic=self.topic, offset=offset[i],
                     msg_lane=lane_i, msg_off=offset[i], detail=detail)
            rows.add("FLOW", np.array([at[i] * 1000 + 600]), src, group=self.group, client_id=active,
                     topic=self.topic, count=extra)
        self.dispatched += len(lane)
        self.regrants += int(regrant.sum())
