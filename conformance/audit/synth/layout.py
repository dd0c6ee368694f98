"""The synthetic workload's shape: brokers, topics and queues (lanes), consumer groups, rounds, and when
each queue's messages arrive.

Time is cut into rounds of :data:`ROUND_MS` (a rebalance may happen at each round boundary). In each
round every lane receives :attr:`Layout.bursts` bursts of 1 to 4 messages, the first early in the
round and the last :data:`LAST_BURST_MS` after its start, then the lane is idle until the next round:
long enough for a held pull to time out once (15 s suspend) and for the consumer that loses the queue
to finish before the rebalance. Every value is a hash of the seed and its coordinates
(:mod:`conformance.audit.synth.hashrand`), so any round can be recomputed from any chunk.

The groups are a realistic mix for one cluster: two clustering push consumers on one topic (one with a
tag filter), a clustering group with crashing clients and a broadcasting group on a second topic, a POP
group sharing the queues of a third, and a Pulsar-style permit subscription on a fourth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from conformance.audit.synth.hashrand import below, uniform

ROUND_MS = 60_000
FIRST_BURST_MS = 3_000
LAST_BURST_MS = 38_000
BURST_JITTER_MS = 1_000
#: After the last round: the held pulls wait, the POP slow path finishes, then END.
TAIL_MS = 90_000
#: Seed 000: the client asks the broker to suspend a pull for 15 s.
SUSPEND_MS = 15_000
MAX_NUMS = 32
#: Retention raises every lane's min offset every RETENTION_EVERY rounds, to where it was RETENTION_LAG
#: rounds before (everything below is long consumed), at RETENTION_AT_MS into the round.
RETENTION_EVERY = 4
RETENTION_LAG = 2
RETENTION_AT_MS = 45_000
TAGS = ("TagA", "TagB", "TagC")

# Purposes for the counter-based hash (one per kind of random value).
P_SIZE, P_TAG, P_BURST, P_EPOCH, P_ROT, P_CRASH = 1, 2, 3, 4, 5, 6


@dataclass(frozen=True)
class GroupSpec:
    name: str
    topic: str
    expression: str
    model: str
    #: ``pull`` (push/pull consumers: ASSIGN, PULL_*, CONSUME, COMMIT), ``pop`` or ``permits``.
    kind: str
    clients: int
    rebalance_p: float = 0.0
    crash_p: float = 0.0

    def client(self, i: int) -> str:
        return f"{self.name}-c{i}"


GROUPS: tuple[GroupSpec, ...] = (
    GroupSpec("OrderBilling", "OrderTopic", "*", "CLUSTERING", "pull", 3, rebalance_p=0.35),
    GroupSpec("OrderShipping", "OrderTopic", "TagA||TagB", "CLUSTERING", "pull", 2, rebalance_p=0.25),
    GroupSpec("AuditArchive", "AuditTopic", "*", "CLUSTERING", "pull", 4, rebalance_p=0.3, crash_p=0.1),
    GroupSpec("AuditCache", "AuditTopic", "*", "BROADCASTING", "pull", 2),
    GroupSpec("PopWorkers", "PopTopic", "*", "CLUSTERING", "pop", 3),
    GroupSpec("FlowReaders", "FlowTopic", "*", "CLUSTERING", "permits", 2),
)
BROKERS = ("broker-a", "broker-b")
#: Approximate rows per lane and round, by topic (used only to pick the number of rounds).
ROWS_PER_LANE_ROUND = {"OrderTopic": 142, "AuditTopic": 224, "PopTopic": 66, "FlowTopic": 45}


def queues_for(events: int) -> int:
    """Queues per topic and broker: more for bigger traces, so rounds stay a few thousand."""
    for limit, queues in ((100_000, 2), (1_000_000, 4), (5_000_000, 8), (30_000_000, 16)):
        if events < limit:
            return queues
    return 32


@dataclass(frozen=True)
class Lane:
    index: int
    topic: str
    broker: str
    queue_id: int

    @property
    def prefix(self) -> str:
        """msg_id prefix: unique per lane (msg_id = prefix + queue offset)."""
        return f"{self.topic[:3].upper()}{self.broker[-1].upper()}{self.queue_id:02d}-"


class Layout:
    def __init__(self, events: int, seed: int, bursts: int = 8, min_rounds: int = 6) -> None:
        self.seed = seed
        self.bursts = bursts
        q = queues_for(events)
        lanes: list[Lane] = []
        for topic, brokers, queues in (("OrderTopic", BROKERS, q), ("AuditTopic", BROKERS, q),
                                       ("PopTopic", BROKERS, max(q // 2, 1)), ("FlowTopic", BROKERS[:1], 2)):
            for broker in brokers:
                for qid in range(queues):
                    lanes.append(Lane(len(lanes), topic, broker, qid))
        self.lanes = lanes
        per_round = sum(ROWS_PER_LANE_ROUND[lane.topic] for lane in lanes) * bursts / 8
        self.rounds = max(min_rounds, int(round(events / per_round)))
        lane_ix = np.arange(len(lanes))[:, None, None]
        round_ix = np.arange(self.rounds)[None, :, None]
        burst_ix = np.arange(bursts)[None, None, :]
        self.sizes = (1 + below(seed, P_SIZE, 4, lane_ix, round_ix, burst_ix)).astype(np.int64)
        starts = np.zeros((len(lanes), self.rounds + 1), dtype=np.int64)
        starts[:, 1:] = np.cumsum(self.sizes.sum(axis=2), axis=1)
        #: round_start[l, r]: queue offset of the first message of round r on lane l.
        self.round_start = starts
        self._cum = np.cumsum(self.sizes, axis=2)
        self.horizon_ms = self.rounds * ROUND_MS + TAIL_MS

    def lanes_of(self, topic: str) -> list[Lane]:
        return [lane for lane in self.lanes if lane.topic == topic]

    def burst_ms(self, lanes: np.ndarray, rounds: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Arrival time (ms) of burst k of round r on lane l: the first in [3, 4) s, the last in [38, 39) s,
        the others evenly between with up to one second of jitter either way."""
        span = LAST_BURST_MS - FIRST_BURST_MS
        step = span / max(self.bursts - 1, 1)
        jitter = uniform(self.seed, P_BURST, lanes, rounds, k)
        inner = FIRST_BURST_MS + k * step + (jitter - 0.5) * BURST_JITTER_MS
        edge = np.where(k == 0, FIRST_BURST_MS, LAST_BURST_MS) + jitter * BURST_JITTER_MS
        at = np.where((k == 0) | (k == self.bursts - 1), edge, inner)
        return rounds * ROUND_MS + np.floor(at).astype(np.int64)

    def burst_end(self, lanes: np.ndarray, rounds: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Queue offset after burst k (the max offset once it arrived)."""
        return self.round_start[lanes, rounds] + self._cum[lanes, rounds, k]

    def tag_codes(self, lanes: np.ndarray, offsets: np.ndarray, first_in_burst: np.ndarray) -> np.ndarray:
        """Index into TAGS of each message: TagA first in every burst (so every burst wakes every
        subscription), then any of the three."""
        return np.where(first_in_burst, 0, below(self.seed, P_TAG, len(TAGS), lanes, offsets))

    def min_offset_at(self, lanes: np.ndarray, ts_ms: np.ndarray) -> np.ndarray:
        """The lane's min offset at a time: raised by the latest retention at or before it."""
        r = ts_ms // ROUND_MS
        done_this = (r % RETENTION_EVERY == RETENTION_EVERY - 1) & (ts_ms - r * ROUND_MS >= RETENTION_AT_MS)
        prev = r - 1 - ((r - 1 - (RETENTION_EVERY - 1)) % RETENTION_EVERY)
        rho = np.where(done_this, r, prev)
        valid = rho - RETENTION_LAG >= 0
        rho_safe = np.clip(rho - RETENTION_LAG, 0, self.rounds)
        return np.where(valid, self.round_start[lanes, rho_safe], 0)

    def epochs(self, group: int, clients: int, rebalance_p: float) -> tuple[np.ndarray, np.ndarray]:
        """(epoch of each round, rotation of each round): the allocation changes when the epoch does."""
        r = np.arange(self.rounds)
        change = (uniform(self.seed, P_EPOCH, group, r) < rebalance_p) & (r > 0)
        epoch = np.cumsum(change) + 1
        rotation = below(self.seed, P_ROT, clients, group, epoch)
        return epoch, rotation

    def crashes(self, group: int, clients: int, crash_p: float, forced: set[int]) -> np.ndarray:
        """Client index crashing at the end of each round (-1: none); never in the last round."""
        r = np.arange(self.rounds)
        crash = np.where(uniform(self.seed, P_CRASH, group, r) < crash_p, below(self.seed, P_CRASH + 100, clients,
                                                                                 group, r), -1)
        for f in forced:
            if crash[f] < 0:
                crash[f] = below(self.seed, P_CRASH + 100, clients, group, f)
        crash[self.rounds - 1] = -1
        return crash
