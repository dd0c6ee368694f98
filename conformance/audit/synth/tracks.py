"""Who consumes which queue in which round: the *tracks* of the pull groups.

A track is one consumer's view of one queue: for a clustering group, the queue itself (its owner
changes at rebalances); for a broadcasting group, one (queue, client) pair (every client consumes every
queue). ``owner[t, r]`` is the client index consuming track t in round r. A clustering group's queues
are allocated by rotating the averagely strategy's assignment at each rebalance epoch; a client may
crash at the end of a round (it records CRASH, restarts and re-ASSIGNs what it owns next).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from conformance.audit.synth.layout import GROUPS, GroupSpec, Layout


@dataclass
class Tracks:
    group: int
    spec: GroupSpec
    lane: np.ndarray
    owner: np.ndarray
    crash: np.ndarray

    @property
    def broadcasting(self) -> bool:
        return self.spec.model == "BROADCASTING"

    def prev_owner(self) -> np.ndarray:
        out = np.full_like(self.owner, -1)
        out[:, 1:] = self.owner[:, :-1]
        return out

    def crashed_prev(self) -> np.ndarray:
        """True where the round's previous owner crashed at the end of the previous round."""
        prev = self.prev_owner()
        crash_prev = np.full(self.owner.shape[1], -1)
        crash_prev[1:] = self.crash[:-1]
        return (prev >= 0) & (prev == crash_prev[None, :])

    def new_owner(self) -> np.ndarray:
        """True where the round's owner ASSIGNs the queue at the round's start."""
        prev = self.prev_owner()
        return (prev < 0) | (prev != self.owner) | self.crashed_prev()

    def changed(self) -> np.ndarray:
        """True where a live previous owner hands the queue over (REVOKE) at the round's start."""
        prev = self.prev_owner()
        return (prev >= 0) & (prev != self.owner) & ~self.crashed_prev()


def pull_tracks(layout: Layout, forced_crashes: dict[int, set[int]]) -> list[Tracks]:
    out = []
    for g, spec in enumerate(GROUPS):
        if spec.kind != "pull":
            continue
        lanes = np.array([lane.index for lane in layout.lanes_of(spec.topic)])
        n = spec.clients
        if spec.model == "BROADCASTING":
            lane = np.repeat(lanes, n)
            owner = np.repeat(np.tile(np.arange(n), len(lanes))[:, None], layout.rounds, axis=1)
            crash = np.full(layout.rounds, -1)
        else:
            lane = lanes
            _, rotation = layout.epochs(g, n, spec.rebalance_p)
            owner = (np.arange(len(lanes))[:, None] + rotation[None, :]) % n
            crash = layout.crashes(g, n, spec.crash_p, forced_crashes.get(g, set()))
        out.append(Tracks(g, spec, lane, owner, crash))
    return out
