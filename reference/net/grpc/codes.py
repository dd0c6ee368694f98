"""The one place where the reference's refusals and POP outcomes become RocketMQ 5 ``Status`` codes.

Why one table: the v5 client decides what a response means from ``status.code`` alone (protocols/rocketmq-grpc-v5.md
§2: MESSAGE_NOT_FOUND is an empty success, 40xxx a BadRequestException, ...), so every handler of the gRPC front
answers through :func:`refusal_code` and :func:`pop_code` and no handler spells a number.

A refusal is always :class:`reference.rules.errors.InvalidRequest` (field, rule, code). Its code is either one of
the core's own names (``TOPIC_NOT_EXIST``, ``INVALID_RECEIPT_HANDLE`` ...), mapped by :data:`CORE_TO_V5`, or, for
what the front checks itself, the name of a v5 code (``ILLEGAL_INVISIBLE_TIME``, ``CLIENT_ID_REQUIRED``,
``NOT_IMPLEMENTED`` ...). The core's generic ``INVALID_ARGUMENT`` is refined by the field it names
(:data:`FIELD_TO_V5`), as the Java proxy answers ILLEGAL_TOPIC for a bad topic name and ILLEGAL_CONSUMER_GROUP for
a bad group.
"""

from __future__ import annotations

from typing import Any

from reference.rules.codes import ResponseCode
from reference.rules.errors import InvalidRequest

#: The v5 ``apache.rocketmq.v2.Code`` numbers the front answers with (definition.proto).
OK = 20000
MULTIPLE_RESULTS = 30000
BAD_REQUEST = 40000
ILLEGAL_TOPIC = 40002
ILLEGAL_CONSUMER_GROUP = 40003
ILLEGAL_MESSAGE_TAG = 40004
ILLEGAL_MESSAGE_KEY = 40005
ILLEGAL_MESSAGE_GROUP = 40006
ILLEGAL_MESSAGE_PROPERTY_KEY = 40007
ILLEGAL_MESSAGE_ID = 40009
ILLEGAL_FILTER_EXPRESSION = 40010
ILLEGAL_INVISIBLE_TIME = 40011
ILLEGAL_DELIVERY_TIME = 40012
INVALID_RECEIPT_HANDLE = 40013
MESSAGE_PROPERTY_CONFLICT_WITH_TYPE = 40014
UNRECOGNIZED_CLIENT_TYPE = 40015
CLIENT_ID_REQUIRED = 40017
ILLEGAL_POLLING_TIME = 40018
FORBIDDEN = 40300
MESSAGE_NOT_FOUND = 40401
TOPIC_NOT_FOUND = 40402
CONSUMER_GROUP_NOT_FOUND = 40403
MESSAGE_BODY_TOO_LARGE = 41301
MESSAGE_BODY_EMPTY = 41302
TOO_MANY_REQUESTS = 42900
INTERNAL_SERVER_ERROR = 50001
NOT_IMPLEMENTED = 50100
UNSUPPORTED = 50500

#: Every name above, so that the front may raise InvalidRequest with a v5 code's own name.
V5_CODES: dict[str, int] = {
    name: value for name, value in globals().items() if name.isupper() and isinstance(value, int)
}

#: The core's refusal codes (reference.rules.errors and the POP core) to v5 codes.
CORE_TO_V5: dict[str, int] = {
    "TOPIC_NOT_EXIST": TOPIC_NOT_FOUND,
    "INVALID_FILTER": ILLEGAL_FILTER_EXPRESSION,
    "INVALID_RECEIPT_HANDLE": INVALID_RECEIPT_HANDLE,
    "SUBSCRIPTION_GROUP_NOT_EXIST": CONSUMER_GROUP_NOT_FOUND,
    "CONSUMER_NOT_ONLINE": CONSUMER_GROUP_NOT_FOUND,
    "NUM_MESSAGES_IN_BATCH": BAD_REQUEST,
}

#: The core's INVALID_ARGUMENT, refined by the field it names (core names and v5 names alike).
FIELD_TO_V5: dict[str, int] = {
    "topic": ILLEGAL_TOPIC,
    "consumerGroup": ILLEGAL_CONSUMER_GROUP,
    "group": ILLEGAL_CONSUMER_GROUP,
    "settings.subscription.group": ILLEGAL_CONSUMER_GROUP,
    "settings.subscription.subscriptions.topic": ILLEGAL_TOPIC,
    "invisibleTime": ILLEGAL_INVISIBLE_TIME,
    "invisible_duration": ILLEGAL_INVISIBLE_TIME,
    "pollTime": ILLEGAL_POLLING_TIME,
    "long_polling_timeout": ILLEGAL_POLLING_TIME,
    "expression": ILLEGAL_FILTER_EXPRESSION,
    "filter_expression": ILLEGAL_FILTER_EXPRESSION,
    "tags": ILLEGAL_MESSAGE_TAG,
    "tag": ILLEGAL_MESSAGE_TAG,
    "keys": ILLEGAL_MESSAGE_KEY,
    "message_group": ILLEGAL_MESSAGE_GROUP,
    "message_id": ILLEGAL_MESSAGE_ID,
    "message_queue.topic": ILLEGAL_TOPIC,
    "messages.topic": ILLEGAL_TOPIC,
    "receiptHandle": INVALID_RECEIPT_HANDLE,
    "receipt_handle": INVALID_RECEIPT_HANDLE,
}

#: A POP answer's response code to the v5 status of a ReceiveMessage stream, with the proxy's messages.
POP_TO_V5: dict[ResponseCode, tuple[int, str]] = {
    ResponseCode.SUCCESS: (OK, "OK"),
    ResponseCode.POLLING_TIMEOUT: (MESSAGE_NOT_FOUND, "no new message"),
    ResponseCode.POLLING_FULL: (TOO_MANY_REQUESTS, "polling full"),
}


def refusal_code(exc: InvalidRequest) -> int:
    """The v5 code of a refusal: a v5 name as is, a core code by :data:`CORE_TO_V5`, else by the field."""
    if exc.code in V5_CODES:
        return V5_CODES[exc.code]
    if exc.code in CORE_TO_V5:
        return CORE_TO_V5[exc.code]
    return FIELD_TO_V5.get(exc.field, BAD_REQUEST)


def pop_code(code: ResponseCode) -> tuple[int, str]:
    """The v5 (code, message) of a POP answer; an unexpected code is an internal error, said as such."""
    return POP_TO_V5.get(code, (INTERNAL_SERVER_ERROR, f"the broker answered the pop with {code.name}"))


def status(definition: Any, code: int, message: str = "OK") -> Any:
    """A ``Status`` message (``definition`` is the generated definition_pb2 module)."""
    return definition.Status(code=code, message=message)


def refusal_status(definition: Any, exc: InvalidRequest) -> Any:
    """The Status of a refusal: its code, and ``field: rule`` as the message."""
    return status(definition, refusal_code(exc), f"{exc.field}: {exc.rule}")
