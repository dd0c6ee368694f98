"""Seeded faults: the reference with exactly one thing wrong, to prove the suites catch it.

Each :class:`Mutant` names the requirement(s) it breaks and swaps one component class of the
broker (``BrokerComponents``). The project's tests run the relevant property or conformance tests
against every mutant and require a failure (``tests/test_mutants.py``); ``mutant:NAME`` targets
will run the whole conformance suite against one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.mutants import allocation_faults as af
from conformance.mutants import broker_faults as bf
from conformance.mutants import client_faults as cf
from conformance.mutants import permit_faults as mf
from conformance.mutants import pop_faults as pf
from reference.broker.broker import BrokerComponents
from reference.client.components import ClientComponents


@dataclass(frozen=True)
class Mutant:
    """One seeded fault: the requirement IDs it breaks and the one component it swaps.

    ``components`` swaps a broker part; ``client`` (a ``reference.client`` components value, or
    None) swaps a client part for faults in the consumer; ``strategies`` replaces allocation
    strategies by short name (``reference.allocation.registry``).
    """

    name: str
    breaks: tuple[str, ...]
    description: str
    components: BrokerComponents = field(default_factory=BrokerComponents)
    client: Any = None
    strategies: Mapping[str, type] = field(default_factory=dict)

    @property
    def family(self) -> str:
        return self.breaks[0].split("-", 1)[0]

    @property
    def is_broker_fault(self) -> bool:
        """Whether it swaps a part of the broker (a server can serve it); the others are client or allocation
        faults."""
        return self.components != BrokerComponents()


CATALOGUE: dict[str, Mutant] = {
    m.name: m
    for m in (
        Mutant(
            "hold-no-recheck-7358",
            ("LPOLL-9",),
            "The hold service checks for new messages before suspending but not after, so a message "
            "arriving between the 'not found' answer and the suspend is not seen until the next check "
            "(RocketMQ issue #7358, a 5 s stall).",
            BrokerComponents(hold_service=bf.HoldWithoutRecheck),
        ),
        Mutant(
            "hold-answers-twice",
            ("LPOLL-1",),
            "A held pull woken by an arrival stays in the hold table, so the check at its deadline answers it a "
            "second time (with the same request id).",
            BrokerComponents(hold_service=bf.HoldAnswersTwice),
        ),
        Mutant(
            "hold-wake-any-arrival",
            ("LPOLL-5",),
            "The arrival listener wakes every held request of the queue, whatever the message's tag.",
            BrokerComponents(hold_service=bf.HoldWakesOnAnyArrival),
        ),
        Mutant(
            "hold-ignore-deadline",
            ("LPOLL-3",),
            "A held request is only answered when a message arrives, never at its timeout.",
            BrokerComponents(hold_service=bf.HoldIgnoresDeadline),
        ),
        Mutant(
            "registry-subversion-is-change",
            ("CGRP-3",),
            "A newer subVersion for an already-subscribed topic counts as a group change and notifies.",
            BrokerComponents(consumer_manager=bf.SubVersionIsChange),
        ),
        Mutant(
            "registry-ignores-topic-removal",
            ("CGRP-2",),
            "Dropping a topic from the subscription set is not detected as a change.",
            BrokerComponents(consumer_manager=bf.IgnoresTopicRemoval),
        ),
        Mutant(
            "registry-no-notify-on-unregister",
            ("CGRP-5",),
            "Unregistering a consumer does not notify the remaining members.",
            BrokerComponents(consumer_manager=bf.NoNotifyOnUnregister),
        ),
        Mutant(
            "registry-channels-never-expire",
            ("CGRP-6",),
            "The housekeeping scan never removes a channel that stopped sending heartbeats.",
            BrokerComponents(consumer_manager=bf.ChannelsNeverExpire),
        ),
        Mutant(
            "offset-empty-queue-keeps-offset",
            ("OFFSET-1",),
            "A pull on an empty queue answers NO_MESSAGE_IN_QUEUE with the requested offset as "
            "nextBeginOffset instead of 0.",
            BrokerComponents(message_store=bf.EmptyQueueKeepsOffset),
        ),
        Mutant(
            "offset-too-small-keeps-offset",
            ("OFFSET-2",),
            "A pull below the min offset answers OFFSET_TOO_SMALL with the requested offset as "
            "nextBeginOffset, so the consumer never moves up to the min offset.",
            BrokerComponents(message_store=bf.TooSmallKeepsOffset),
        ),
        Mutant(
            "offset-overflow-badly-keeps-offset",
            ("OFFSET-4",),
            "OFFSET_OVERFLOW_BADLY on a queue whose min offset is 0 keeps the requested offset instead of "
            "correcting it (to 0 as in seed 002 §1, or to the max as RocketMQ 4.9.4+ does): the consumer never "
            "gets back into the queue.",
            BrokerComponents(message_store=bf.OverflowBadlyKeepsOffset),
        ),
        Mutant(
            "retention-ignores-reserved-time",
            ("RETAIN-1",),
            "A clean run deletes every commit-log segment but the newest, however young its messages: "
            "unconsumed messages vanish before fileReservedTime (72 h).",
            BrokerComponents(message_store=bf.RetentionIgnoresReservedTime),
        ),
        Mutant(
            "retention-never-raises-min",
            ("RETAIN-7",),
            "Retention deletes files but never raises the queues' min offsets.",
            BrokerComponents(message_store=bf.RetentionNeverRaisesMin),
        ),
        Mutant(
            "query-offset-min-fallback",
            ("QOFF-13",),
            "With no committed offset the query answers the queue's min offset instead of QUERY_NOT_FOUND, "
            "taking the choice of where to start away from the consumer's consumeFromWhere.",
            BrokerComponents(consumer_manage_processor=bf.QueryFallsBackToMin),
        ),
        Mutant(
            "pull-no-match-not-found",
            ("PULL-1",),
            "NO_MATCHED_MESSAGE answers PULL_NOT_FOUND instead of PULL_RETRY_IMMEDIATELY: a consumer "
            "whose filter matched nothing waits instead of pulling on at nextBeginOffset.",
            BrokerComponents(pull_processor=bf.NoMatchIsNotFound),
        ),
        Mutant(
            "pull-commit-again-on-wake",
            ("PULL-4",),
            "A held pull's piggybacked commit offset is stored again when the request is woken, "
            "overwriting any newer commit made while it was held.",
            BrokerComponents(pull_processor=bf.CommitAgainOnWake),
        ),
        Mutant(
            "alloc-averagely-remainder-to-last",
            ("ALLOC-2",),
            "AllocateMessageQueueAveragely gives the q mod n extra queues to the last consumers instead of "
            "the first: balanced, but a different partition from every RocketMQ client's.",
            strategies={"averagely": af.AveragelyRemainderToLast},
        ),
        Mutant(
            "alloc-circle-starts-at-second",
            ("ALLOC-3",),
            "AllocateMessageQueueAveragelyByCircle deals the first queue to the second consumer.",
            strategies={"by_circle": af.CircleStartsAtSecond},
        ),
        Mutant(
            "pop-revive-ignores-late-acks",
            ("REVIVE-3",),
            "The revive service ignores the ACK records of the revive log, so a message acked after its "
            "checkpoint left memory is revived anyway (RocketMQ #7724, acked messages popped again).",
            BrokerComponents(pop_revive=pf.ReviveIgnoresLateAcks),
        ),
        Mutant(
            "pop-ack-key-without-pop-time",
            ("PACK-6",),
            "Checkpoints are matched with acks without their pop time: a change of invisible time makes a "
            "checkpoint that replaces the original one, whose other messages are then never revived.",
            BrokerComponents(pop_buffer=pf.AckKeyWithoutPopTime),
        ),
        Mutant(
            "pop-change-keeps-the-instant",
            ("PACK-9",),
            "A change of invisible time stamps its checkpoint with the change's instant although a pending "
            "checkpoint has that key (RocketMQ 5.5): a change of a checkpoint's first message within the pop's "
            "millisecond replaces the original checkpoint, and neither is revived.",
            BrokerComponents(pop_acks=pf.ChangeKeepsTheInstant),
        ),
        Mutant(
            "pop-invisible-from-request",
            ("PACK-1",),
            "A pop's invisible time counts from when the request arrived, not from when its batch was read, "
            "so messages handed out by a held pop have their invisibility cut short.",
            BrokerComponents(pop_processor=pf.InvisibleFromRequest),
        ),
        Mutant(
            "flow-batch-counts-as-one-permit",
            ("FLOW-2",),
            "The dispatcher charges one permit per batch entry instead of one per message, so a consumer "
            "receives more messages than it granted permits.",
            BrokerComponents(single_active_dispatcher=pf.BatchCountsAsOnePermit),
        ),
        Mutant(
            "flow-permits-go-negative",
            ("FLOW-2",),
            "The dispatcher reads for a consumer whose permits are already 0 (its guard is permits >= 0 where "
            "seed 003's readMoreEntries asks for > 0), so a consumer that granted nothing more still receives.",
            BrokerComponents(single_active_dispatcher=pf.PermitsGoNegative),
        ),
        Mutant(
            "client-pulls-dropped-queue",
            ("REBAL-4",),
            "The push consumer puts a dropped queue's PullRequest back instead of discarding it, so it keeps "
            "pulling a queue that a rebalance gave to another consumer.",
            client=ClientComponents(push_consumer=cf.PullsDroppedQueue),
        ),
        Mutant(
            "client-commits-dropped-results",
            ("REBAL-5",),
            "The consume service processes the result of a batch whose queue was dropped while the listener ran, "
            "and flushes that queue's offset to the broker at once.",
            client=ClientComponents(consume_service=cf.CommitsDroppedResults),
        ),
        Mutant(
            "client-commits-largest-consumed",
            ("CONSUME-2",),
            "The ProcessQueue answers one past the largest offset consumed so far instead of the smallest still "
            "in flight, so a commit can pass a message whose listener has not finished.",
            client=ClientComponents(process_queue=cf.CommitsLargestConsumed),
        ),
        Mutant(
            "client-unsorted-consumer-ids",
            ("REBAL-2",),
            "Rebalance allocates over the member list in the order the broker sent it, not sorted, so members "
            "with different views own overlapping shares and some queues have no owner.",
            client=ClientComponents(rebalance=cf.UnsortedConsumerIds),
        ),
        Mutant(
            "flow-filter-sends-every-entry",
            ("FLOW-12",),
            "The dispatcher sends every entry it read: corrupt entries and the broker's markers reach consumers and "
            "a delayed message goes out before its time (seed 003 lines 41-51 filter all three).",
            BrokerComponents(single_active_dispatcher=mf.SingleSendsEveryEntry,
                             multiple_consumers_dispatcher=mf.SharedSendsEveryEntry),
        ),
        Mutant(
            "flow-ignores-dispatch-rate",
            ("FLOW-13",),
            "The dispatcher reads as far as the permits go whatever the dispatch rate (seed 003 line 34 skips the "
            "read once the rate is exceeded).",
            BrokerComponents(single_active_dispatcher=mf.SingleIgnoresRate,
                             multiple_consumers_dispatcher=mf.SharedIgnoresRate),
        ),
        Mutant(
            "flow-unacked-released-below-limit",
            ("FLOW-14",),
            "A consumer blocked on maxUnackedMessagesPerConsumer is released by its first ack, not once acks bring it "
            "down to half the limit.",
            BrokerComponents(multiple_consumers_dispatcher=mf.ReleasedBelowTheLimit),
        ),
    )
}
