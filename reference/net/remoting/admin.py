"""Admin requests of the remoting broker that no client library sends but tools do (RocketMQ's mqadmin).

UPDATE_AND_CREATE_TOPIC (17) is how a conformance harness creates a topic with a chosen queue count on any
RocketMQ broker (``mqadmin updateTopic`` sends it), instead of relying on auto-creation at route lookup,
which always gives the default queue count. Decode, call the core, encode: the rules (name, queue count)
are the store's.
"""

from __future__ import annotations

from reference.broker.broker import Broker
from reference.net.remoting.command import RemotingCommand
from reference.rules.errors import InvalidRequest

#: RocketMQ RequestCode.UPDATE_AND_CREATE_TOPIC.
UPDATE_AND_CREATE_TOPIC = 17


def update_and_create_topic(broker: Broker, cmd: RemotingCommand) -> RemotingCommand:
    """Create ``topic`` with ``readQueueNums`` queues (RocketMQ's header; ``writeQueueNums`` if absent)."""
    topic = cmd.ext_fields.get("topic", "")
    text = cmd.ext_fields.get("readQueueNums") or cmd.ext_fields.get("writeQueueNums") or ""
    try:
        queue_nums = int(text)
    except ValueError:
        raise InvalidRequest("readQueueNums", f"must be an integer, got {text!r}") from None
    broker.create_topic(topic, queue_nums)
    return cmd.make_response()
