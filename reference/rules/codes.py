"""RocketMQ's response codes, and the rule that turns a store status into the code of a pull's answer.

One enum for every part: the broker core answers with these, the remoting transport writes their numbers on
the wire, the targets read them back, and the auditor judges a trace's PULL_RESP rows by
:func:`response_code_for`. The numbers are RocketMQ's (ResponseCode and RemotingSysResponseCode); only the
codes some part of the kit sends or reads are listed.
"""

from __future__ import annotations

import enum

from reference.rules.status import GetMessageStatus


class ResponseCode(enum.IntEnum):
    """Response codes, RocketMQ's names and numbers."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    #: RocketMQ 5 (ResponseCode.INVALID_PARAMETER; 215 is FLOW_CONTROL); 4.x brokers answer SYSTEM_ERROR.
    INVALID_PARAMETER = 29
    CONSUMER_NOT_ONLINE = 206
    #: An ack whose message is not where its offset says (RocketMQ 5 AckMessageProcessor).
    NO_MESSAGE = 208
    #: A pop found nothing and the pops held for its queue are already popPollingSize.
    POLLING_FULL = 209
    #: A pop found nothing and its poll time (0 included) has passed.
    POLLING_TIMEOUT = 210


#: GetMessageStatus -> a pull's response code (seed 000, PullMessageProcessor's switch). NO_MESSAGE_IN_QUEUE
#: and NO_MATCHED_LOGIC_QUEUE also depend on the requested offset (see :func:`response_code_for`).
STATUS_TO_CODE: dict[GetMessageStatus, ResponseCode] = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.NO_MESSAGE_IN_QUEUE: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.NO_MATCHED_LOGIC_QUEUE: ResponseCode.PULL_OFFSET_MOVED,
}
#: The statuses answered PULL_NOT_FOUND instead of PULL_OFFSET_MOVED when the pull asked for offset 0.
ZERO_OFFSET_NOT_FOUND = (GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.NO_MATCHED_LOGIC_QUEUE)


def response_code_for(
    status: GetMessageStatus, requested_offset: int, table: dict[GetMessageStatus, ResponseCode] = STATUS_TO_CODE
) -> ResponseCode:
    """The response code for a store status. ``table`` is only ever replaced by a seeded fault."""
    if status in ZERO_OFFSET_NOT_FOUND and requested_offset == 0:
        return ResponseCode.PULL_NOT_FOUND
    return table[status]


def derive_status(code: int, offset: int, min_offset: int, max_offset: int) -> str | None:
    """The GetMessageStatus name behind a PULL_MESSAGE response, from what the wire shows (None if ambiguous).

    The inverse of :func:`response_code_for`, for whoever sees only the wire (the remoting target, the recorder,
    the differ): the broker's correction table (seed 002 §1) is a function of (offset, min, max); the response
    code tells found / not found / moved, and the bounds tell which row of the table answered.
    """
    if code == ResponseCode.SUCCESS:
        return GetMessageStatus.FOUND.name
    if code == ResponseCode.PULL_RETRY_IMMEDIATELY:
        return GetMessageStatus.NO_MATCHED_MESSAGE.name
    if max_offset == 0 and code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_OFFSET_MOVED):
        return GetMessageStatus.NO_MESSAGE_IN_QUEUE.name
    if code == ResponseCode.PULL_NOT_FOUND and offset == max_offset:
        return GetMessageStatus.OFFSET_OVERFLOW_ONE.name
    if code == ResponseCode.PULL_OFFSET_MOVED:
        if offset < min_offset:
            return GetMessageStatus.OFFSET_TOO_SMALL.name
        if offset > max_offset:
            return GetMessageStatus.OFFSET_OVERFLOW_BADLY.name
    return None
