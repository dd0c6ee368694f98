"""What a broker request needs: the topics and groups it touches, each with the permission it needs.

As RocketMQ 4.9.7's ``PlainAccessValidator.parse`` reads them:

* a send (SEND_MESSAGE, SEND_MESSAGE_V2) needs PUB on its topic; a send to a retry topic ``%RETRY%G`` needs SUB on
  the group the header names instead (``group``, or V2's producer group ``a``);
* a pull needs SUB on its topic and its group; an offset commit SUB on its group and its topic;
* a heartbeat needs SUB on each consumer group it registers and each topic they subscribe;
* a send-back, an unregister (of a consumer) and a consumer list need SUB on the group; a message query SUB on
  the topic;
* any other request needs nothing but the signature (and the admin codes an admin account).

A group G is the resource ``%RETRY%G``, as RocketMQ keys it, so a topic and a group of the same name stay apart and
a pull of the retry topic is judged as the group.

Where 4.9.7 checks nothing the reference is stricter (ACL-4, profile strict): a SEND_BATCH_MESSAGE needs what a
send needs; a QUERY_CONSUMER_OFFSET what a commit needs; a send to ``%RETRY%G`` whose header names no group needs
SUB on G (4.9.7 reads a ``group`` field the SEND_MESSAGE header does not have, and so checks nothing).
"""

from __future__ import annotations

from reference.net.remoting.acl.permission import Perm
from reference.net.remoting.command import RemotingCommand, RequestCode, loads_body
from reference.net.remoting.send_header import send_header, uses_v2_names
from reference.rules.topics import RETRY_GROUP_TOPIC_PREFIX, is_retry_topic, retry_topic

#: RocketMQ's message-trace topic: a request needing only PUB on it is let through (4.9.7's validate does so, so
#: that tracing clients need no permission for it).
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"


class UnreadableRequest(ValueError):
    """The request's fields the check needs cannot be read (RocketMQ then refuses it with the parse error)."""


def group_resource(group: str) -> str:
    """RocketMQ keys a group's permissions by its retry topic."""
    return retry_topic(group)


def is_group_resource(resource: str) -> bool:
    return is_retry_topic(resource)


def group_of(resource: str) -> str:
    """The group a group resource ``%RETRY%G`` stands for."""
    return resource[len(RETRY_GROUP_TOPIC_PREFIX):]


def describe(resource: str) -> str:
    """How a refusal names a resource: ``group:G`` or ``topic:T``."""
    return f"group:{group_of(resource)}" if is_group_resource(resource) else f"topic:{resource}"


class _Needs:
    """The resources in the order they were added (RocketMQ's put order; a name added twice keeps its place)."""

    def __init__(self) -> None:
        self.perms: dict[str, Perm] = {}

    def add(self, resource: str | None, perm: Perm) -> None:
        if resource is not None:  # RocketMQ's addResourceAndPerm ignores a null resource
            self.perms[resource] = perm

    def group(self, group: str | None, perm: Perm = Perm.SUB) -> None:
        self.add(group_resource(group) if group is not None else None, perm)


def _send(cmd: RemotingCommand, needs: _Needs) -> None:
    ext, _ = send_header(cmd)
    topic = ext.get("topic")
    if topic is not None and is_group_resource(topic):
        named = cmd.ext_fields.get("a") if uses_v2_names(cmd) else cmd.ext_fields.get("group")
        needs.add(group_resource(named) if named is not None else topic, Perm.SUB)
    else:
        needs.add(topic, Perm.PUB)


def _heartbeat(cmd: RemotingCommand, needs: _Needs) -> None:
    try:
        doc = loads_body(cmd.body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UnreadableRequest(f"the heartbeat body is not JSON: {exc}") from None
    consumers = doc.get("consumerDataSet") if isinstance(doc, dict) else None
    if consumers is not None and not isinstance(consumers, list):
        raise UnreadableRequest("consumerDataSet must be a list")
    for data in consumers or []:
        if not isinstance(data, dict):
            raise UnreadableRequest("consumerDataSet must hold objects")
        needs.group(data.get("groupName"))
        for sub in data.get("subscriptionDataSet") or []:
            if not isinstance(sub, dict):
                raise UnreadableRequest("subscriptionDataSet must hold objects")
            needs.add(sub.get("topic"), Perm.SUB)


def needed_permissions(cmd: RemotingCommand) -> dict[str, Perm]:
    """resource -> the permission ``cmd`` needs on it, in the order RocketMQ adds them (empty: only the signature
    is checked)."""
    ext = cmd.ext_fields
    code = cmd.code
    needs = _Needs()
    if code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        _send(cmd, needs)
    elif code == RequestCode.PULL_MESSAGE:
        needs.add(ext.get("topic"), Perm.SUB)
        needs.group(ext.get("consumerGroup"))
    elif code in (RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.QUERY_CONSUMER_OFFSET):
        needs.group(ext.get("consumerGroup"))
        needs.add(ext.get("topic"), Perm.SUB)
    elif code == RequestCode.HEART_BEAT:
        _heartbeat(cmd, needs)
    elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
        needs.group(ext.get("group"))
    elif code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        needs.group(ext.get("consumerGroup"))
    elif code == RequestCode.QUERY_MESSAGE:
        needs.add(ext.get("topic"), Perm.SUB)
    return needs.perms
