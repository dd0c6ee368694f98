"""Names and keys of POP consumption (seed 004): one place, so a key cannot be built two ways.

* the topic a POP retry topic belongs to (the retry topic itself, a rule shared with the clients, is
  :func:`reference.rules.topics.pop_retry_topic`, §3.4.2);
* the queue lock key ``{topic}@{group}@{queueId}`` (§4.2.2), where topic may be the retry topic;
* the revive log topic ``rmq_sys_REVIVE_LOG_{cluster}`` and its consumer group;
* the checkpoint key that matches acks to checkpoints: topic, group, queue id, start offset, pop
  time and broker name (§4.4.2, §4.4.4). Two pops of the same start offset at different times (a
  change of invisible time, a re-pop after a restart) are different checkpoints: dropping the pop
  time from the key merges them, which is a seeded fault.
"""

from __future__ import annotations

from typing import NamedTuple

from reference.rules.topics import pop_retry_topic

#: Separator of the queue lock key (PopAckConstants.SPLIT).
LOCK_KEY_SEPARATOR = "@"
#: Prefix of the revive log topic (PopAckConstants.REVIVE_TOPIC).
REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"
#: Group under which the revive service's progress in each revive queue is committed.
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"
#: Tags of the two record kinds in the revive log (PopAckConstants.CK_TAG / ACK_TAG).
CK_TAG = "ck"
ACK_TAG = "ack"


def normal_topic(ck_topic: str, group: str) -> str:
    """KeyBuilder.parseNormalTopic: the topic a (possibly retry) checkpoint topic belongs to."""
    prefix = pop_retry_topic(group, "")
    return ck_topic[len(prefix):] if ck_topic.startswith(prefix) else ck_topic


def lock_key(topic: str, group: str, queue_id: int) -> str:
    return f"{topic}{LOCK_KEY_SEPARATOR}{group}{LOCK_KEY_SEPARATOR}{queue_id}"


def revive_topic(cluster_name: str) -> str:
    return f"{REVIVE_TOPIC_PREFIX}{cluster_name}"


class CheckpointKey(NamedTuple):
    """What identifies a checkpoint: the batch of one pop from one queue."""

    topic: str
    group: str
    queue_id: int
    start_offset: int
    pop_time: int
    broker_name: str
