"""FIFO consumption over gRPC: a group whose subscription group config says ``consumeMessageOrderly``.

What the 5.x proxy does for such a group (rocketmq-all-5.3.3, read for this module; docs/grpc.md "FIFO groups"):

* GrpcClientSettingsManager.mergeSubscriptionData answers the consumer's settings with ``subscription.fifo`` =
  the group's consumeMessageOrderly, looked up at every settings read (so a group an operator changes is FIFO at
  the consumer's next receive);
* ReceiveMessageActivity pops with ``order`` = that fifo flag (ConsumerProcessor.popMessage sets
  PopMessageRequestHeader.order): the broker's ordered POP (seed 004 §4.2, the core's :mod:`reference.broker.pop.
  order_info`): one batch in flight per queue, no retry topic, no checkpoint;
* the proxy's client half (MQClientAPIImpl.processPopResponse) sets an ordered message's reconsumeTimes to its
  orderCountInfo count when that count is above 0, and GrpcConverter writes ``delivery_attempt`` =
  reconsumeTimes + 1: a first delivery is attempt 1, the same batch again after its invisibility attempt 2;
* RouteActivity.queryAssignment gives a FIFO group every readable queue by its own id (a non-FIFO group gets one
  entry of id -1 per broker);
* AckMessage and ChangeInvisibleDuration are the unordered RPCs: the broker tells an ordered handle by its revive
  queue id (999) and acks it orderly (commitAndNext frees the queue) or moves its next visible time; the core
  does both (:class:`reference.broker.pop.order_ack.OrderAckProcessor`), so the front's ack module is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

from reference.allocation.message_queue import MessageQueue
from reference.broker.broker import Broker
from reference.broker.pop.order_ack import is_ordered_handle
from reference.broker.pop.protocol import PoppedMessage, PopResponse
from reference.broker.pop.receipt import ReceiptHandle
from reference.net.grpc.state import FrontState


def is_fifo(state: FrontState, group: str) -> bool:
    """Whether ``group`` is a FIFO group: its subscription group config (mqadmin updateSubGroup, kept in the
    broker's table) says consumeMessageOrderly. Read at each call, as the proxy reads the group's config."""
    return state.broker.subscription_groups.consumes_orderly(group)


def delivery_attempt(popped: PoppedMessage, answer: PopResponse) -> int:
    """The proxy's delivery_attempt: an ordered message's consume count (orderCountInfo, per offset) replaces its
    reconsume times when above 0; either way plus one."""
    count = answer.order_counts.get((popped.retry, popped.queue_id, popped.queue_offset), 0)
    return (count if count > 0 else popped.reconsume_times) + 1


def assignment(state: FrontState, topic: str) -> list[MessageQueue]:
    """RouteActivity's answer for a FIFO group: every queue of the topic by its own id, on this broker."""
    broker = state.broker
    queues = broker.store.topics().get(topic, 0)
    return [MessageQueue(topic, broker.config.broker_name, q) for q in range(queues)]


def resolve(broker: Broker, group: str, topic: str, text: str) -> ReceiptHandle:
    """The handle a ForwardMessageToDeadLetterQueue names, checked before the message is dead-lettered: an
    ordered one against its batch in flight (it has no checkpoint), any other against its checkpoint."""
    if is_ordered_handle(text):
        return broker.pop_service.order_acks.resolve(group, topic, text)[0]
    resolved: ReceiptHandle = broker.pop_service.acks.resolve(group, topic, text).handle
    return resolved


def settings_fifo(state: FrontState) -> Callable[[str], bool]:
    """What the settings reply's ``subscription.fifo`` is for a group (the Telemetry handshake asks it)."""
    return lambda group: is_fifo(state, group)
