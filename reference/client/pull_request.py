"""PullRequest: the pull loop's token for one queue (seed 000; seed 001 §4).

Rebalance creates one per newly assigned queue; PullMessageService passes it to the consumer, which
pulls and then puts the same token back (at once, or later after flow control or an error). Because
there is exactly one token per ProcessQueue, a queue is never pulled twice at once, and dropping the
ProcessQueue ends its loop: the consumer discards the token instead of putting it back.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.allocation.message_queue import MessageQueue
from reference.client.process_queue import ProcessQueue


@dataclass(eq=False, slots=True)
class PullRequest:
    consumer_group: str
    message_queue: MessageQueue
    process_queue: ProcessQueue
    #: The offset the next pull asks for (the previous answer's nextBeginOffset).
    next_offset: int
