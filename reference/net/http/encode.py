"""The broker's answers as the HTTP front's response models (bodies as text and as exact base64)."""

from __future__ import annotations

import base64

from reference.broker.permits.protocol import DispatchedMessage, Position
from reference.broker.pop.protocol import PopResponse
from reference.broker.protocol import PullResponse
from reference.net.http import models as m


def _text(body: bytes) -> tuple[str, str]:
    """A body as UTF-8 text (invalid bytes replaced) and as exact base64."""
    return body.decode("utf-8", errors="replace"), base64.b64encode(body).decode("ascii")


def pull_result(r: PullResponse) -> m.PullResult:
    return m.PullResult(
        code=r.code.name, status=r.status.name if r.status else None, nextBeginOffset=r.next_begin_offset,
        minOffset=r.min_offset, maxOffset=r.max_offset, heldMs=r.held_ms,
        messages=[
            m.PulledMessage(queueOffset=x.queue_offset, msgId=x.unique_id, tags=x.tags, body=text, bodyBase64=b64)
            for x in r.messages for text, b64 in [_text(x.body)]
        ],
    )


def pop_result(r: PopResponse) -> m.PopResult:
    return m.PopResult(
        code=r.code.name, status=r.status, restNum=r.rest_num, popTime=r.pop_time,  # type: ignore[arg-type]
        invisibleTimeMs=r.invisible_time_ms, heldMs=r.held_ms,
        messages=[
            m.PoppedMessage(
                topic=x.topic, queueId=x.queue_id, queueOffset=x.queue_offset, msgId=x.msg_id, tags=x.tags,
                keys=x.keys, body=text, bodyBase64=b64, receiptHandle=x.handle, reconsumeTimes=x.reconsume_times,
                retry=x.retry, properties=dict(x.properties), storeTimestamp=x.store_timestamp,
                bornTimestamp=x.born_timestamp,
            )
            for x in r.messages for text, b64 in [_text(x.body)]
        ],
    )


def dispatched(x: DispatchedMessage) -> m.DispatchedMessage:
    text, b64 = _text(x.body)
    return m.DispatchedMessage(
        msgId=x.msg_id, offset=x.position.offset, batchIndex=x.position.batch_index, batchSize=x.batch_size,
        tags=x.tags, body=text, bodyBase64=b64, redeliveryCount=x.redelivery_count,
    )


def positions(refs: list[m.PositionRef]) -> list[Position]:
    """The request's message positions (ack, redeliver) as the permit service's."""
    return [Position(x.offset, x.batchIndex) for x in refs]
