"""Draws of the base workload that the fault plan and the row generators both read.

The plan (:mod:`.faults`) picks fault sites by what the base workload does there (a POP message's kind of
delivery, how many of a burst's messages a subscription selects), and the generators (:mod:`.pop`,
:mod:`.pulls`) make the rows from the same draws; both import them from here, below either.
"""

from __future__ import annotations

import numpy as np

from conformance.audit.synth.hashrand import uniform
from conformance.audit.synth.layout import TAGS, Layout

#: A POP message's kind of delivery: acked in time, extended with CHANGE_INVISIBLE, or never acked.
NORMAL, EXTENDED, SLOW = 0, 1, 2
#: The hash stream of that draw (each draw of the workload has its own, see :mod:`.hashrand`).
P_KIND = 40


def pop_kind(layout: Layout, lanes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """85 % NORMAL, 10 % EXTENDED, 5 % SLOW, by the hash of (lane, offset)."""
    u = uniform(layout.seed, P_KIND, lanes, offsets)
    return np.where(u < 0.85, NORMAL, np.where(u < 0.95, EXTENDED, SLOW))


def matches(expression: str, tag_codes: np.ndarray) -> np.ndarray:
    """Which messages (by tag code) a subscription expression selects."""
    if expression.strip() in ("", "*"):
        return np.ones(np.shape(tag_codes), dtype=bool)
    wanted = [TAGS.index(t.strip()) for t in expression.split("||") if t.strip() in TAGS]
    return np.isin(tag_codes, wanted)
