"""ACL 1.0 cases: requests with and without credentials, and whether a broker with ``fixtures/acl/plain_acl.yml``
must refuse each. The same cases run against the reference (``tests/net/test_acl_remoting.py``) and against
Apache RocketMQ 4.9.7 with ``aclEnable=true`` (``tests/peers/test_acl_rocketmq.py``), so the reference's refusals
are RocketMQ's."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from reference.net.remoting.acl.signature import SessionCredentials, sign_fields
from reference.net.remoting.client import RemotingClient
from reference.net.remoting.command import RemotingCommand, RequestCode, ext_value
from reference.net.remoting.message_codec import BatchEntry, encode_batch_body, encode_properties

ACL_FILE = Path(__file__).resolve().parent.parent / "fixtures" / "acl" / "plain_acl.yml"
USER = SessionCredentials("mqtckUser", "mqtckUserSecret")
ADMIN = SessionCredentials("mqtckAdmin", "mqtckAdminSecret")
WRONG_SECRET = SessionCredentials("mqtckUser", "notTheSecret")
UNKNOWN = SessionCredentials("nobodyKnowsMe", "whatever-secret")
#: Topics the cases use, created by the admin account first (4 queues each).
TOPICS = ("AclTopic", "AclReadOnly", "AclWriteOnly", "AclDenied", "AclOther")
GET_ROUTEINFO_BY_TOPIC = RequestCode.GET_ROUTEINFO_BY_TOPIC


def create_topic_fields(topic: str) -> dict[str, str]:
    return {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}


def send_fields(topic: str) -> dict[str, str]:
    return {"producerGroup": "AclProducer", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
            "queueId": "0", "sysFlag": "0", "bornTimestamp": str(int(time.time() * 1000)), "flag": "0",
            "properties": encode_properties({"UNIQ_KEY": uuid.uuid4().hex.upper(), "WAIT": "true"}),
            "reconsumeTimes": "0", "unitMode": "false", "batch": "false"}


def send_v2_fields(topic: str) -> dict[str, str]:
    """SEND_MESSAGE_V2's one-letter header names (RocketMQ's SendMessageRequestHeaderV2)."""
    names = {"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d", "queueId": "e",
             "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i", "reconsumeTimes": "j",
             "unitMode": "k", "batch": "m"}
    return {names[k]: v for k, v in send_fields(topic).items()}


def batch_body() -> bytes:
    return encode_batch_body([BatchEntry(body, {"UNIQ_KEY": uuid.uuid4().hex.upper()}) for body in (b"one", b"two")])


def pull_fields(topic: str, group: str) -> dict[str, str]:
    return {"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
            "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0"}


def heartbeat_body(group: str, topic: str) -> bytes:
    return json.dumps({"clientID": "127.0.0.1@acl", "producerDataSet": [], "consumerDataSet": [{
        "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False, "subscriptionDataSet": [{
            "topic": topic, "subString": "*", "tagsSet": [], "codeSet": [], "subVersion": 0, "classFilterMode": False,
        }]}]}).encode("utf-8")


@dataclass(frozen=True)
class Case:
    name: str
    code: int
    fields: dict[str, str]
    body: bytes = b""
    credentials: SessionCredentials | None = USER
    #: The refusal's reason (a part of it), or None when the ACL lets the request through.
    refused: str | None = None
    #: Sign, then change the body: what a man in the middle would do.
    tamper: bool = False
    #: The requirement the case proves, when it is not one every case proves (ACL-1 to ACL-3): a broker whose
    #: expectations list it deviates there.
    req: str | None = None


def cases() -> list[Case]:
    body = b"acl body"
    return [
        Case("unsigned send", RequestCode.SEND_MESSAGE, send_fields("AclTopic"), body, None,
             "No accessKey is configured"),
        Case("unknown access key", RequestCode.SEND_MESSAGE, send_fields("AclTopic"), body, UNKNOWN,
             "No acl config for nobodyKnowsMe"),
        Case("wrong secret", RequestCode.SEND_MESSAGE, send_fields("AclTopic"), body, WRONG_SECRET,
             "Check signature failed for accessKey=mqtckUser"),
        Case("body changed after signing", RequestCode.SEND_MESSAGE, send_fields("AclTopic"), body, USER,
             "Check signature failed for accessKey=mqtckUser", tamper=True),
        Case("send with PUB|SUB", RequestCode.SEND_MESSAGE, send_fields("AclTopic"), body),
        Case("send with PUB", RequestCode.SEND_MESSAGE, send_fields("AclWriteOnly"), body),
        Case("send with SUB only", RequestCode.SEND_MESSAGE, send_fields("AclReadOnly"), body, USER,
             "No default permission for topic:AclReadOnly"),
        Case("send to a DENY topic", RequestCode.SEND_MESSAGE, send_fields("AclDenied"), body, USER,
             "No default permission for topic:AclDenied"),
        Case("send under the DENY default", RequestCode.SEND_MESSAGE, send_fields("AclOther"), body, USER,
             "No default permission for topic:AclOther"),
        Case("pull with SUB", RequestCode.PULL_MESSAGE, pull_fields("AclReadOnly", "AclGroup")),
        Case("pull of a PUB-only topic", RequestCode.PULL_MESSAGE, pull_fields("AclWriteOnly", "AclGroup"), b"",
             USER, "No default permission for topic:AclWriteOnly"),
        Case("pull for a DENY group", RequestCode.PULL_MESSAGE, pull_fields("AclTopic", "AclDeniedGroup"), b"",
             USER, "No default permission for group:AclDeniedGroup"),
        Case("pull for a group under the SUB default", RequestCode.PULL_MESSAGE, pull_fields("AclTopic", "AclAny")),
        Case("heartbeat", RequestCode.HEART_BEAT, {}, heartbeat_body("AclGroup", "AclTopic")),
        Case("heartbeat subscribing a DENY topic", RequestCode.HEART_BEAT, {}, heartbeat_body("AclGroup", "AclDenied"),
             USER, "No default permission for topic:AclDenied"),
        Case("query offset", RequestCode.QUERY_CONSUMER_OFFSET,
             {"consumerGroup": "AclGroup", "topic": "AclTopic", "queueId": "0"}),
        Case("commit offset for a DENY group", RequestCode.UPDATE_CONSUMER_OFFSET,
             {"consumerGroup": "AclDeniedGroup", "topic": "AclTopic", "queueId": "0", "commitOffset": "0"}, b"",
             USER, "No default permission for group:AclDeniedGroup"),
        Case("consumer list of a DENY group", RequestCode.GET_CONSUMER_LIST_BY_GROUP,
             {"consumerGroup": "AclDeniedGroup"}, b"", USER, "No default permission for group:AclDeniedGroup"),
        Case("send V2 to a DENY topic", RequestCode.SEND_MESSAGE_V2, send_v2_fields("AclDenied"), body, USER,
             "No default permission for topic:AclDenied"),
        Case("send V2 with PUB", RequestCode.SEND_MESSAGE_V2, send_v2_fields("AclWriteOnly"), body),
        Case("batch (Java: SEND_BATCH_MESSAGE) to a DENY topic", RequestCode.SEND_BATCH_MESSAGE,
             {**send_v2_fields("AclDenied"), "m": "true"}, batch_body(), USER,
             "No default permission for topic:AclDenied", req="ACL-4"),
        Case("batch (C++: SEND_MESSAGE, batch=1) to a DENY topic", RequestCode.SEND_MESSAGE,
             {**send_fields("AclDenied"), "batch": "1"}, batch_body(), USER,
             "No default permission for topic:AclDenied"),
        Case("batch (Java) with PUB", RequestCode.SEND_BATCH_MESSAGE, {**send_v2_fields("AclWriteOnly"), "m": "true"},
             batch_body()),
        Case("send back to a DENY group", RequestCode.CONSUMER_SEND_MSG_BACK,
             {"offset": "0", "group": "AclDeniedGroup", "delayLevel": "0", "originMsgId": "0" * 32,
              "originTopic": "AclTopic", "unitMode": "false", "maxReconsumeTimes": "16"}, b"", USER,
             "No default permission for group:AclDeniedGroup"),
        Case("send back from a DENY topic (only the group is checked)", RequestCode.CONSUMER_SEND_MSG_BACK,
             {"offset": "0", "group": "AclGroup", "delayLevel": "0", "originMsgId": "0" * 32,
              "originTopic": "AclDenied", "unitMode": "false", "maxReconsumeTimes": "16"}),
        Case("pull with topic and group both denied (the first in HashMap order is named)", RequestCode.PULL_MESSAGE,
             pull_fields("AclWriteOnly", "AclDeniedGroup"), b"", USER, "No default permission for topic:AclWriteOnly"),
        Case("commit with group and topic both denied", RequestCode.UPDATE_CONSUMER_OFFSET,
             {"consumerGroup": "AclDeniedGroup", "topic": "AclDenied", "queueId": "0", "commitOffset": "0"}, b"",
             USER, "No default permission for topic:AclDenied"),
        Case("unsigned heartbeat with a broken body", RequestCode.HEART_BEAT, {}, b"{", None,
             "No accessKey is configured"),
        Case("signed heartbeat with a broken body", RequestCode.HEART_BEAT, {}, b"{", USER, "AclException"),
        Case("query the offset of a DENY group", RequestCode.QUERY_CONSUMER_OFFSET,
             {"consumerGroup": "AclDeniedGroup", "topic": "AclTopic", "queueId": "0"}, b"", USER,
             "No default permission for group:AclDeniedGroup", req="ACL-4"),
        Case("send to the retry topic of a DENY group", RequestCode.SEND_MESSAGE,
             send_fields("%RETRY%AclDeniedGroup"), body, USER, "No default permission for group:AclDeniedGroup",
             req="ACL-4"),
        Case("unregister a DENY group", RequestCode.UNREGISTER_CLIENT,
             {"clientID": "127.0.0.1@acl", "consumerGroup": "AclDeniedGroup"}, b"", USER,
             "No default permission for group:AclDeniedGroup"),
        Case("unregister a producer", RequestCode.UNREGISTER_CLIENT,
             {"clientID": "127.0.0.1@acl", "producerGroup": "AclProducer"}),
        Case("max offset of a DENY topic (no resource checked)", RequestCode.GET_MAX_OFFSET,
             {"topic": "AclDenied", "queueId": "0"}),
        Case("create a topic, not admin", RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_fields("AclNew"), b"", USER,
             "Need admin permission for request code=17, but accessKey=mqtckUser is not"),
        Case("create a topic, admin", RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_fields("AclNew"), b"", ADMIN),
    ]


def request_fields(case: Case) -> dict[str, str]:
    """What goes on the wire for ``case``: its fields, signed with its credentials (if any)."""
    fields = {k: ext_value(v) for k, v in case.fields.items()}
    return sign_fields(fields, case.body, case.credentials) if case.credentials is not None else fields


def run_case(broker: RemotingClient, case: Case) -> RemotingCommand:
    body = case.body + b"!" if case.tamper else case.body
    return broker.invoke(case.code, request_fields(case), body, timeout_s=15)


def prepare(broker_address: str) -> None:
    """Create :data:`TOPICS` with the admin account."""
    admin = RemotingClient(broker_address, credentials=ADMIN)
    try:
        for topic in TOPICS:
            response = admin.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, create_topic_fields(topic), timeout_s=15)
            assert response.code == 0, (topic, response.code, response.remark)
    finally:
        admin.close()

