"""GetMessageStatus and the offset-correction table: what a pull at an offset means, and where to go next.

Theory of operation
-------------------
A pull names (topic, queue, offset). Before reading anything the store compares the offset with the
queue's [min, max) range (seed 002 §1, the ``maxOffset == 0 / offset < minOffset / ...`` chain).
:data:`CORRECTION_TABLE` *is* that rule: rows are tried in order, the first whose condition holds
decides the status and the nextBeginOffset the consumer must continue from. :func:`check_offset`
evaluates the table; the spec and the docs render the same rows, so the three cannot drift apart.

We are a master broker: RocketMQ's ``nextOffsetCorrection(old, new)`` adopts ``new`` (only a slave
with offset checking disabled would keep ``old``), so the table states the adopted offset directly.

When no row holds, the offset is legal (min <= offset < max) and the store reads the consume queue;
the statuses that reading can produce (FOUND, NO_MATCHED_MESSAGE, MESSAGE_WAS_REMOVING,
OFFSET_FOUND_NULL) are decided by the scan in :mod:`reference.store.store`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass


class GetMessageStatus(enum.Enum):
    """RocketMQ's GetMessageStatus, same names (the trace's PULL_RESP ``status`` column uses them)."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(frozen=True)
class CorrectionRow:
    """One row: when ``applies(offset, min, max)`` holds, answer ``status`` and ``next_offset(...)``.

    ``condition`` and ``next_begin_offset`` are the same rule in words, for rendering.
    """

    condition: str
    status: GetMessageStatus
    next_begin_offset: str
    applies: Callable[[int, int, int], bool]
    next_offset: Callable[[int, int, int], int]


#: The offset checks of seed 002 §1, in the order they are tried.
CORRECTION_TABLE: tuple[CorrectionRow, ...] = (
    CorrectionRow(
        "max == 0", GetMessageStatus.NO_MESSAGE_IN_QUEUE, "0",
        lambda offset, lo, hi: hi == 0, lambda offset, lo, hi: 0,
    ),
    CorrectionRow(
        "offset < min", GetMessageStatus.OFFSET_TOO_SMALL, "min",
        lambda offset, lo, hi: offset < lo, lambda offset, lo, hi: lo,
    ),
    CorrectionRow(
        "offset == max", GetMessageStatus.OFFSET_OVERFLOW_ONE, "offset",
        lambda offset, lo, hi: offset == hi, lambda offset, lo, hi: offset,
    ),
    CorrectionRow(
        "offset > max and min == 0", GetMessageStatus.OFFSET_OVERFLOW_BADLY, "min (that is, 0)",
        lambda offset, lo, hi: offset > hi and lo == 0, lambda offset, lo, hi: lo,
    ),
    CorrectionRow(
        "offset > max and min > 0", GetMessageStatus.OFFSET_OVERFLOW_BADLY, "max",
        lambda offset, lo, hi: offset > hi, lambda offset, lo, hi: hi,
    ),
)


def overflow_to_max(table: tuple[CorrectionRow, ...]) -> tuple[CorrectionRow, ...]:
    """``table`` with Apache RocketMQ's change of 4.9.4 (ISSUE #4215): an offset past the max goes to the max
    whatever the min, where seed 002 goes back to 0 when the min is 0. OFFSET-4 allows both; the reference runs
    this way when diffed against a broker that does (MessageStoreConfig.offset_overflow_to_max)."""
    return tuple(
        CorrectionRow("offset > max", row.status, "max", lambda offset, lo, hi: offset > hi, lambda offset, lo, hi: hi)
        if row.condition == "offset > max and min == 0" else row
        for row in table
    )


def check_offset(
    offset: int, min_offset: int, max_offset: int, table: tuple[CorrectionRow, ...] = CORRECTION_TABLE
) -> tuple[GetMessageStatus | None, int]:
    """Apply :data:`CORRECTION_TABLE`: ``(status, next_begin_offset)``, or ``(None, offset)`` when the
    offset is legal and the consume queue must be read. ``table`` is only ever replaced by a seeded
    fault (``conformance.mutants``)."""
    for row in table:
        if row.applies(offset, min_offset, max_offset):
            return row.status, row.next_offset(offset, min_offset, max_offset)
    return None, offset
