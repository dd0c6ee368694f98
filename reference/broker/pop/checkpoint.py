"""PopCheckPoint and AckMsg: the two records of POP bookkeeping (seed 004 §3.2.3, §4.2.3, §4.3.1).

A checkpoint (CK) describes one pop of one queue: the start offset and, for each popped message,
its offset as a *diff* from the start (``queueOffsetDiff``), the pop time, the invisible time and
the revive queue it belongs to. ``pop_time + invisible_time`` is its *revive time*: a message of it
not acknowledged by then is revived to the retry topic. An AckMsg names one message of one
checkpoint by the checkpoint's key fields and the message's offset.

Both travel through the revive log as JSON bodies; :func:`encode_checkpoint` also writes the
acknowledged bits a checkpoint gathered in memory before it was written (RocketMQ writes those as
separate ACK records; one record with the bits is the same information, written atomically).

States of one message of a checkpoint (the table the package docstring refers to)::

    popped --ack (handle valid)--------------------> acked     (never revived)
    popped --change invisible--> acked in this CK,  and popped in a new CK (new handle)
    popped --revive time + revive delay passes----> revived   (stored to the retry topic, CK done)
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from reference.broker.pop.keys import CheckpointKey


@dataclass(frozen=True)
class PopCheckPoint:
    topic: str
    group: str
    queue_id: int
    start_offset: int
    #: Offsets of the popped messages minus ``start_offset`` (filtered pops leave gaps).
    diffs: tuple[int, ...]
    #: Unique ids of the popped messages, in the same order (what ACK and REVIVE rows record).
    msg_ids: tuple[str, ...]
    pop_time: int
    invisible_time: int
    revive_queue_id: int
    broker_name: str

    @property
    def num(self) -> int:
        return len(self.diffs)

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def key(self) -> CheckpointKey:
        return CheckpointKey(
            self.topic, self.group, self.queue_id, self.start_offset, self.pop_time, self.broker_name
        )

    @property
    def all_acked(self) -> int:
        """The bitmap with every message acknowledged."""
        return (1 << self.num) - 1

    def index_of_ack(self, offset: int) -> int:
        """PopCheckPoint.indexOfAck: the message's index in this checkpoint, or -1."""
        diff = offset - self.start_offset
        try:
            return self.diffs.index(diff)
        except ValueError:
            return -1

    def offset_at(self, index: int) -> int:
        """PopCheckPoint.ackOffsetByIndex."""
        return self.start_offset + self.diffs[index]


@dataclass(frozen=True)
class AckMsg:
    """One acknowledgement as written to the revive log (seed 004 §4.3.1)."""

    topic: str
    group: str
    queue_id: int
    start_offset: int
    pop_time: int
    broker_name: str
    ack_offset: int

    @property
    def key(self) -> CheckpointKey:
        return CheckpointKey(
            self.topic, self.group, self.queue_id, self.start_offset, self.pop_time, self.broker_name
        )


def encode_checkpoint(ck: PopCheckPoint, acked_bits: int) -> bytes:
    return json.dumps(
        {
            "t": ck.topic, "c": ck.group, "q": ck.queue_id, "so": ck.start_offset, "d": list(ck.diffs),
            "m": list(ck.msg_ids), "pt": ck.pop_time, "it": ck.invisible_time, "rq": ck.revive_queue_id,
            "bn": ck.broker_name, "bm": acked_bits,
        },
        separators=(",", ":"),
    ).encode()


def decode_checkpoint(body: bytes) -> tuple[PopCheckPoint, int] | None:
    """The checkpoint and its acknowledged bits, or None for a record that is not one."""
    try:
        d = json.loads(body)
        ck = PopCheckPoint(
            str(d["t"]), str(d["c"]), int(d["q"]), int(d["so"]), tuple(int(x) for x in d["d"]),
            tuple(str(x) for x in d["m"]), int(d["pt"]), int(d["it"]), int(d["rq"]), str(d["bn"]),
        )
        return ck, int(d["bm"])
    except (ValueError, KeyError, TypeError):
        return None


def encode_ack(ack: AckMsg) -> bytes:
    return json.dumps(
        {
            "t": ack.topic, "c": ack.group, "q": ack.queue_id, "so": ack.start_offset, "pt": ack.pop_time,
            "bn": ack.broker_name, "ao": ack.ack_offset,
        },
        separators=(",", ":"),
    ).encode()


def decode_ack(body: bytes) -> AckMsg | None:
    try:
        d = json.loads(body)
        return AckMsg(str(d["t"]), str(d["c"]), int(d["q"]), int(d["so"]), int(d["pt"]), str(d["bn"]), int(d["ao"]))
    except (ValueError, KeyError, TypeError):
        return None
