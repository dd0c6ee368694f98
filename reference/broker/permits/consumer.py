"""PermitConsumer: the broker's view of one consumer of a subscription (Pulsar's broker ``Consumer``).

``permits`` is the credit the consumer granted with FLOW and not yet used (pulsar-binary §9.3):
it starts at 0, FLOW adds to it, every dispatched message takes one. It goes below zero when a batch
entry larger than what is left is sent whole (Pulsar never splits a batch, §9.3 rule 3). ``pending``
holds the messages dispatched to it and not yet acknowledged, which go back for redelivery when it asks
or leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reference.broker.permits.protocol import PermitChannel, Position


@dataclass(eq=False)
class PermitConsumer:
    client_id: str
    channel: PermitChannel
    permits: int = 0
    #: Position -> size of its entry, for messages dispatched and not acknowledged.
    pending: dict[Position, int] = field(default_factory=dict)
    #: Running totals, for tests and the trace: permits granted and messages dispatched.
    granted: int = 0
    dispatched: int = 0
    #: Held back by maxUnackedMessagesPerConsumer (shared subscriptions) until acks bring it to half the limit.
    blocked: bool = False
