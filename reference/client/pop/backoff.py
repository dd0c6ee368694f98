"""Retry back-off of a push consumer over POP, by reconsume times.

A consumer whose listener asks to retry a message does not send it back (as a pull consumer does):
it changes the message's invisible time so that it comes back after a back-off that grows with the
number of deliveries (seed 004 §2.1: "消费者就通过 changeInvisibleTime 按照重试次数来修改下一次的可见
时间"). The table is RocketMQ's retry schedule (messageDelayLevel from level 3: 10 s ... 2 h, which the
gRPC clients receive as ``customized_backoff`` 1 s, 5 s, 10 s, 30 s, 1 m ...); the first delivery
(reconsume times 0) waits the first entry.
"""

from __future__ import annotations

from collections.abc import Sequence

_S, _M, _H = 1_000, 60_000, 3_600_000
#: customized_backoff.next of the gRPC push consumer (rocketmq-grpc-v5 §2 settings).
DEFAULT_BACKOFF_MS: tuple[int, ...] = (
    1 * _S, 5 * _S, 10 * _S, 30 * _S, 1 * _M, 2 * _M, 3 * _M, 4 * _M, 5 * _M, 6 * _M, 7 * _M, 8 * _M, 9 * _M,
    10 * _M, 20 * _M, 30 * _M, 1 * _H, 2 * _H,
)


def backoff_ms(reconsume_times: int, table: Sequence[int] = DEFAULT_BACKOFF_MS) -> int:
    """The invisible time to set after a failed delivery of a message delivered ``reconsume_times``
    times before (the last entry repeats)."""
    return table[min(max(reconsume_times, 0), len(table) - 1)]
