"""POP consumption on the broker (RocketMQ 5, seed 004): many consumers share a queue.

Theory of operation
-------------------
A consumer *pops* a batch: the broker reads it from the group's pop offset, makes it invisible for
``invisible_time`` and leaves a **checkpoint** (start offset, per-message diffs, pop time, invisible
time, revive queue). Each message carries a **receipt handle** naming its checkpoint. The consumer
*acks* a message by its handle, or *changes its invisible time*. A message not acked by its
checkpoint's revive time (pop time + invisible time) is **revived**: copied to the retry topic
``%RETRY%{group}_{topic}`` with reconsumeTimes + 1, where pops find it like any other message.

Checkpoints are matched with acks in memory first (:mod:`.buffer`, a bitmap per checkpoint), then
through the **revive log**, a store topic (:mod:`.revive_log`) that a revive service reads back
(:mod:`.revive`). Because the log is a store topic, a restarted broker loses no unacked message.

Modules, one rule each:

* :mod:`.keys` – retry topic, lock key, revive topic and checkpoint key names;
* :mod:`.checkpoint` – the checkpoint and ack records (and the per-message state table);
* :mod:`.receipt` – receipt handles (RocketMQ's extraInfo);
* :mod:`.processor` – reading a batch (retry first 1 in 5, queue -1, restNum, offset correction);
* :mod:`.long_polling` – holding a pop that found nothing (POLLING_FULL / POLLING_TIMEOUT);
* :mod:`.ack` – ack and change of invisible time, and the refusal of bad handles;
* :mod:`.buffer` – in-memory matching and the in-order commit of the pop offset;
* :mod:`.revive` – matching through the revive log and reviving (a checkpoint of a deleted topic is dropped);
* :mod:`.order_info` – ordered pops: one batch in flight per queue and group, consume counts;
* :mod:`.order_ack` – the ack of an ordered pop's message (revive queue 999);
* :mod:`.assignment` – broker-side rebalance (QueryAssignment);
* :mod:`.service` – the wiring and the trace rows.
"""
