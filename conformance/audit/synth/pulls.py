"""Rows of the pull groups (push consumers over long polling), one chunk of rounds at a time.

Per track and round (all times from the hash of their coordinates, see :mod:`.layout`):

* a new owner ASSIGNs the queue at 0-2 s into the round and sends its first PULL_REQ; the previous
  owner, unless it crashed, REVOKEs at a moment within a few seconds of that (a short overlap is
  normal) and its last held pull is still answered when the first burst arrives (it discards it);
* each burst wakes the held pull (wake latency 0-800 ms, mostly small): PULL_RESP FOUND with the
  matching messages, a DELIVER and a CONSUME OK per message, then the next PULL_REQ, which carries the
  commit of everything consumed (the broker records the COMMIT with it);
* after the last burst the held pull times out (15 s + up to 3 s of hold-check delay): an empty
  OFFSET_OVERFLOW_ONE answer and a new PULL_REQ, held into the next round.

Broadcasting tracks never change owner and commit locally (the client records COMMIT). Every fault of
:mod:`.faults` that concerns pulls is applied here as the rows are made.
"""

from __future__ import annotations

import numpy as np

from conformance.audit.synth.faults import Plan, key
from conformance.audit.synth.hashrand import uniform
from conformance.audit.synth.kinds import matches
from conformance.audit.synth.layout import MAX_NUMS, ROUND_MS, SUSPEND_MS, Layout
from conformance.audit.synth.rows import NULL, Rows, Vocab
from conformance.audit.synth.tracks import Tracks
from reference.rules.topics import retry_topic

P_WAKE, P_STALE, P_HOLD, P_ASSIGN, P_REVOKE = 20, 21, 22, 23, 24
#: Upper bound of the wake latency (ms); the distribution is u**6, so most are a few ms.
WAKE_MAX_MS = 800
#: Extra hold beyond the suspend time: when the hold service's next check came (at most 3 s here).
HOLD_DELAY_MAX_MS = 3_000
ASSIGN_DELAY_MAX_MS = 2_000
#: Fault sizes (see faults.py).
SLOW_WAKE_MS = 1_500
EARLY_ANSWER_MS = 5_000
LATE_EXTRA_MS = 7_000
OVERLAP_MS = 25_000
AFTER_DROP_MS = 1_000
RETRY_AFTER_MS = 10_000
MAX_BURST = 4


class PullGroup:
    def __init__(self, layout: Layout, vocab: Vocab, plan: Plan, tracks: Tracks) -> None:
        self.layout = layout
        self.vocab = vocab
        self.plan = plan
        self.tr = tracks
        self.seed = layout.seed
        spec = tracks.spec
        self.clients = vocab.codes([spec.client(i) for i in range(spec.clients)])
        self.client_sources = vocab.codes([f"client:{spec.client(i)}" for i in range(spec.clients)])
        lanes = layout.lanes
        self.lane_topic = vocab.codes([lane.topic for lane in lanes])
        self.lane_broker = vocab.codes([lane.broker for lane in lanes])
        self.lane_source = vocab.codes([f"broker:{lane.broker}" for lane in lanes])
        self.lane_qid = np.array([lane.queue_id for lane in lanes], dtype=np.int64)
        self.group = vocab.code(spec.name)
        self.new_owner = tracks.new_owner()
        self.changed = tracks.changed()
        self.prev_owner = tracks.prev_owner()

    # -- timings ---------------------------------------------------------------------------------
    def _bursts(self, t: np.ndarray, r: np.ndarray) -> dict[str, np.ndarray]:
        """Per (track-round, burst): arrival, offsets, matching count and the base answer timings (ms)."""
        L, B = self.layout, self.layout.bursts
        g = self.tr.group
        lane = self.tr.lane[t][:, None]
        rr = r[:, None]
        k = np.arange(B)[None, :]
        bt = L.burst_ms(lane, rr, k)
        end = L.burst_end(lane, rr, k)
        size = L.sizes[lane, rr, k]
        start = end - size
        nm = np.zeros(bt.shape, dtype=np.int64)
        for i in range(MAX_BURST):
            tags = L.tag_codes(lane, start + i, np.full(bt.shape, i == 0))
            nm += (matches(self.tr.spec.expression, tags) & (i < size)).astype(np.int64)
        w = np.floor(WAKE_MAX_MS * uniform(self.seed, P_WAKE, g, t[:, None], rr, k) ** 6).astype(np.int64)
        return {"bt": bt, "end": end, "size": size, "start": start, "nm": nm, "w": w, "lane": lane}

    def _tail_request_ms(self, t: np.ndarray, r: np.ndarray) -> np.ndarray:
        """When the pull held across the end of round r was sent (after the timeout of round r)."""
        b = self._bursts(t, r)
        last = self.layout.bursts - 1
        req_last = b["bt"][:, last] + b["w"][:, last] + 2 * b["nm"][:, last] + 1
        return req_last + SUSPEND_MS + self._hold_delay(t, r) + 1

    def _hold_delay(self, t: np.ndarray, r: np.ndarray) -> np.ndarray:
        return np.floor(HOLD_DELAY_MAX_MS * uniform(self.seed, P_HOLD, self.tr.group, t, r)).astype(np.int64)

    # -- rows ------------------------------------------------------------------------------------
    def emit(self, rows: Rows, r0: int, r1: int) -> None:
        L, B, plan, g = self.layout, self.layout.bursts, self.plan, self.tr.group
        T = len(self.tr.lane)
        t, r = (a.ravel() for a in np.meshgrid(np.arange(T), np.arange(r0, r1), indexing="ij"))
        if not len(t):
            return
        lane = self.tr.lane[t]
        owner = self.tr.owner[t, r]
        prev = self.prev_owner[t, r]
        new = self.new_owner[t, r]
        changed = self.changed[t, r]
        b = self._bursts(t, r)
        T0 = r * ROUND_MS
        round_key = key(g, t, r, B, L)
        final = r == L.rounds - 1
        rs = L.round_start[lane, r]
        a = np.floor(ASSIGN_DELAY_MAX_MS * uniform(self.seed, P_ASSIGN, g, t, r)).astype(np.int64)
        bdelay = np.maximum(0, a + np.floor(4_000 * uniform(self.seed, P_REVOKE, g, t, r)).astype(np.int64) - 1_000)
        assign_ms = T0 + a
        revoke_ms = np.where(plan.has("ownership-overlap", round_key), assign_ms + OVERLAP_MS, T0 + bdelay)
        dup_reb = plan.has("duplicate-rebalance", round_key)
        dup_crash = plan.has("duplicate-crash", round_key)
        early_start = dup_reb | dup_crash
        seq_start = np.where(dup_reb, T0 + np.maximum(a, bdelay) + 100, assign_ms + 100)
        prev_tail = np.where(r > 0, self._tail_request_ms(t, np.maximum(r - 1, 0)), 0)
        req0 = np.where(new, np.where(early_start, seq_start + 4, assign_ms + 1), prev_tail)
        broker_src = self.lane_source[lane]
        commit_src = self.client_sources[owner] if self.tr.broadcasting else broker_src
        q = dict(group=self.group, topic=self.lane_topic[lane], broker=self.lane_broker[lane],
                 queue_id=self.lane_qid[lane])

        def qsel(m: np.ndarray) -> dict:
            return {k: (v[m] if isinstance(v, np.ndarray) else v) for k, v in q.items()}

        def request(m: np.ndarray, ts_us: np.ndarray, offset: np.ndarray, client: np.ndarray,
                    commit_offset: np.ndarray | None = None, commit_source: np.ndarray | None = None) -> None:
            rows.add("PULL_REQ", ts_us[m], broker_src[m], order=1, client_id=self.clients[client[m]],
                     offset=offset[m], max_nums=MAX_NUMS, suspend_ms=SUSPEND_MS, **qsel(m))
            co = offset if commit_offset is None else commit_offset
            cm = m & (co > 0)
            src = commit_src if commit_source is None else commit_source
            rows.add("COMMIT", ts_us[cm], src[cm], order=2, client_id=self.clients[client[cm]], offset=co[cm],
                     **qsel(cm))

        def response(m: np.ndarray, ts_ms: np.ndarray, req_ms: np.ndarray, offset: np.ndarray, status: str | np.ndarray,
                     nxt: np.ndarray, hi: np.ndarray, count: np.ndarray, client: np.ndarray) -> None:
            lo = L.min_offset_at(lane, ts_ms)
            if isinstance(status, str):
                status = np.full(len(m), self.vocab.code(status), dtype=np.int32)
            rows.add("PULL_RESP", ts_ms[m] * 1000, broker_src[m], order=3, client_id=self.clients[client[m]],
                     offset=offset[m], status=status[m], next_offset=nxt[m], min_offset=lo[m], max_offset=hi[m],
                     count=count[m], held_ms=(ts_ms - req_ms)[m], **qsel(m))

        every = np.ones(len(t), dtype=bool)
        epoch = r + 1
        # Ownership changes.
        rows.add("ASSIGN", assign_ms[new] * 1000, self.client_sources[owner[new]], client_id=self.clients[owner[new]],
                 offset=np.where(early_start, rs - 1, rs)[new], epoch=epoch[new], **qsel(new))
        rows.add("REVOKE", revoke_ms[changed] * 1000, self.client_sources[prev[changed]],
                 client_id=self.clients[prev[changed]], epoch=epoch[changed], **qsel(changed))
        stale_ms = b["bt"][:, 0] + np.floor(WAKE_MAX_MS * uniform(self.seed, P_STALE, g, t, r) ** 6).astype(np.int64)
        response(changed, stale_ms, prev_tail, rs, "FOUND", b["end"][:, 0], b["end"][:, 0], b["nm"][:, 0], prev)
        drop_pull = changed & plan.has("pull-after-drop", round_key)
        rows.add("PULL_REQ", (revoke_ms[drop_pull] + AFTER_DROP_MS) * 1000, broker_src[drop_pull],
                 client_id=self.clients[prev[drop_pull]], offset=rs[drop_pull] + 1, max_nums=MAX_NUMS,
                 suspend_ms=SUSPEND_MS, **qsel(drop_pull))
        drop_commit = changed & plan.has("commit-after-drop", round_key)
        rows.add("COMMIT", (revoke_ms[drop_commit] + AFTER_DROP_MS) * 1000, broker_src[drop_commit],
                 client_id=self.clients[prev[drop_commit]], offset=rs[drop_commit], **qsel(drop_commit))
        # A new owner that starts one message early (its predecessor's commit was lost) consumes it again.
        es = early_start
        request(es, seq_start * 1000, rs - 1, owner)
        response(es, seq_start + 1, seq_start, rs - 1, "FOUND", rs, rs, np.ones(len(t), dtype=np.int64), owner)
        self._consume(rows, es, seq_start + 2, seq_start + 3, lane, rs - 1, owner, qsel)
        request(new, req0 * 1000, rs, owner)
        # Bursts.
        slow = plan.has("slow-wake", key(g, t[:, None], r[:, None], np.arange(B)[None, :], L))
        resp = b["bt"] + b["w"] + np.where(slow, SLOW_WAKE_MS, 0)
        cend = resp + 2 * b["nm"]
        reqn = cend + 1
        req_prev = np.concatenate([req0[:, None], reqn[:, :-1]], axis=1)
        stuck = (plan.has("lost", round_key) | plan.has("expired", round_key)) & final
        for k in range(B):
            response(every, resp[:, k], req_prev[:, k], b["start"][:, k], "FOUND", b["end"][:, k], b["end"][:, k],
                     b["nm"][:, k], owner)
            self._burst_messages(rows, t, r, k, b, resp[:, k], cend[:, k], owner, lane, qsel, stuck)
            if k < B - 1:
                request(every, reqn[:, k] * 1000, b["end"][:, k], owner)
        # The timeout after the last burst, and the pull held into the next round.
        last = B - 1
        stuck_offset = self._first_match(b, t, last)
        commit_at = np.where(stuck, stuck_offset, b["end"][:, last])
        request(every, reqn[:, last] * 1000, b["end"][:, last], owner, commit_offset=commit_at)
        hold = SUSPEND_MS + self._hold_delay(t, r)
        timeout_ms = reqn[:, last] + hold
        late = plan.has("late-poll-return", round_key) & final
        timeout_ms = timeout_ms + np.where(late, LATE_EXTRA_MS, 0)
        answer_ms = np.where(plan.has("early-poll-return", round_key), reqn[:, last] + EARLY_ANSWER_MS, timeout_ms)
        bad = plan.has("bad-offset-correction", round_key)
        status = np.where(bad, self.vocab.code("OFFSET_OVERFLOW_BADLY"), self.vocab.code("OFFSET_OVERFLOW_ONE"))
        end_last = b["end"][:, last]
        response(every, answer_ms, reqn[:, last], end_last, status.astype(np.int32), end_last, end_last,
                 np.zeros(len(t), dtype=np.int64), owner)
        request(every, (timeout_ms + 1) * 1000, end_last, owner, commit_offset=commit_at)
        # Crashes at the end of these rounds.
        for rc in range(r0, r1):
            c = int(self.tr.crash[rc])
            if c >= 0:
                rows.add("CRASH", np.array([((rc + 1) * ROUND_MS - 500) * 1000]), int(self.client_sources[c]))
                rows.add("RESTART", np.array([((rc + 1) * ROUND_MS - 200) * 1000]), int(self.client_sources[c]))

    def _first_match(self, b: dict, t: np.ndarray, k: int) -> np.ndarray:
        """Offset of the first matching message of burst k (TagA opens every burst, so its first)."""
        return b["start"][:, k]

    def _consume(self, rows: Rows, m: np.ndarray, deliver_ms: np.ndarray, consume_ms: np.ndarray, lane: np.ndarray,
                 offset: np.ndarray, owner: np.ndarray, qsel, status: str = "OK", reconsume: int = 0,
                 detail: str | None = None, micros: int = 0) -> None:
        src = self.client_sources[owner[m]]
        extra = {} if detail is None else {"detail": self.vocab.code(detail)}
        rows.add("DELIVER", deliver_ms[m] * 1000 + micros, src, client_id=self.clients[owner[m]], offset=offset[m],
                 msg_lane=lane[m], msg_off=offset[m], reconsume_times=reconsume, **qsel(m), **extra)
        rows.add("CONSUME", consume_ms[m] * 1000 + micros, src, client_id=self.clients[owner[m]], offset=offset[m],
                 msg_lane=lane[m], msg_off=offset[m], status=status, **qsel(m), **extra)

    def _burst_messages(self, rows: Rows, t, r, k: int, b: dict, resp: np.ndarray, cend: np.ndarray,
                        owner: np.ndarray, lane: np.ndarray, qsel, stuck: np.ndarray) -> None:
        L, g, plan = self.layout, self.tr.group, self.plan
        site = key(g, t, r, k, L)
        unsafe = plan.has("unsafe-commit", site)
        retry = plan.has("duplicate-retry", site)
        unknown = plan.has("duplicate-unknown", site)
        size = b["size"][:, k]
        start = b["start"][:, k]
        j = np.zeros(len(t), dtype=np.int64)
        second_offset = np.full(len(t), NULL)
        second_consume_us = np.zeros(len(t), dtype=np.int64)
        first_consume_us = np.zeros(len(t), dtype=np.int64)
        for i in range(MAX_BURST):
            offset = start + i
            tags = L.tag_codes(lane, offset, np.full(len(t), i == 0))
            m = matches(self.tr.spec.expression, tags) & (i < size)
            if k == L.bursts - 1:
                m = m & ~(stuck & (i == 0))
            deliver_us = (resp + 1 + 2 * j) * 1000
            consume_us = (resp + 2 + 2 * j) * 1000
            first = m & (j == 0)
            second = m & (j == 1)
            first_consume_us = np.where(first, consume_us, first_consume_us)
            second_consume_us = np.where(second, consume_us, second_consume_us)
            second_offset = np.where(second, offset, second_offset)
            src = self.client_sources[owner[m]]
            rows.add("DELIVER", deliver_us[m], src, client_id=self.clients[owner[m]], offset=offset[m],
                     msg_lane=lane[m], msg_off=offset[m], reconsume_times=0, **qsel(m))
            # unsafe-commit: the first message finishes after the second, and after a commit past both.
            late_first = first & unsafe
            consume_us = np.where(late_first, 0, consume_us)
            normal = m & ~late_first
            rows.add("CONSUME", consume_us[normal], self.client_sources[owner[normal]],
                     client_id=self.clients[owner[normal]], offset=offset[normal], msg_lane=lane[normal],
                     msg_off=offset[normal], status="OK", **qsel(normal))
            j = j + m
        u = unsafe & (second_offset != NULL)
        rows.add("COMMIT", second_consume_us[u] + 100, self.lane_source[lane[u]] if not self.tr.broadcasting
                 else self.client_sources[owner[u]], client_id=self.clients[owner[u]], offset=second_offset[u] + 1,
                 **qsel(u))
        rows.add("CONSUME", second_consume_us[u] + 200, self.client_sources[owner[u]], client_id=self.clients[owner[u]],
                 offset=start[u], msg_lane=lane[u], msg_off=start[u], status="OK", **qsel(u))
        # duplicate-retry: the first message is also reported LATER, then redelivered from %RETRY% 10 s on.
        rows.add("CONSUME", first_consume_us[retry] + 300, self.client_sources[owner[retry]],
                 client_id=self.clients[owner[retry]], offset=start[retry], msg_lane=lane[retry],
                 msg_off=start[retry], status="LATER", **qsel(retry))
        again = b["bt"][:, k] + RETRY_AFTER_MS
        self._consume(rows, retry, again, again + 1, lane, start, owner, qsel, reconsume=1,
                      detail=f'{{"retry_topic": "{retry_topic(self.tr.spec.name)}"}}')
        # duplicate-unknown: consumed OK a second time right after, for no recorded reason.
        self._consume(rows, unknown, cend, cend, lane, start, owner, qsel, micros=300)
