"""PullResult: what a pull response means to the consumer (PullAPIWrapper.processPullResult).

The broker answers with a response code; the client works with a PullStatus. This module owns that
mapping (:data:`CODE_TO_PULL_STATUS`) and the client-side re-check of tags: the broker filters on
32-bit tag hash codes, so two tags with the same code both pass it, and the client keeps only the
messages whose tag string its subscription names.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from reference.broker.protocol import PullResponse
from reference.client.gateway import GatewayError
from reference.rules.codes import ResponseCode
from reference.rules.filter import SubscriptionData
from reference.store.message import StoredMessage


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


#: Response code -> pull status (MQClientAPIImpl.processPullResponse); any other code is an error.
CODE_TO_PULL_STATUS: dict[ResponseCode, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


#: The same, keyed by plain int (a lookup by IntEnum hashes as its int value; this spares the enum machinery).
_BY_CODE: dict[int, PullStatus] = {int(code): status for code, status in CODE_TO_PULL_STATUS.items()}


@dataclass(slots=True)
class PullResult:
    pull_status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    msg_found_list: list[StoredMessage]


def process_pull_result(response: PullResponse, subscription: SubscriptionData | None) -> PullResult:
    """The consumer's view of ``response``; raises GatewayError for a code that is no pull status."""
    status = _BY_CODE.get(response.code)
    if status is None:
        raise GatewayError(response.code.name, response.remark)
    msgs = list(response.messages)
    if msgs and subscription is not None and not subscription.subscribes_all:
        tags = subscription.tags
        msgs = [m for m in msgs if m.tags in tags]
    return PullResult(status, response.next_begin_offset, response.min_offset, response.max_offset, msgs)
