"""The rules of ``mqadmin updateTopic`` / ``updateTopicPerm`` that the reference cannot honour halfway.

RocketMQ keeps a topic's ``readQueueNums`` and ``writeQueueNums`` apart (a shrink is done by lowering the write
count first, waiting for consumers to drain, then the read count). The reference's store keeps one queue count per
topic, so it cannot show a route with 2 read and 4 write queues: it refuses a different pair, naming both fields,
rather than answer success and keep only one (issue 41).
"""

from __future__ import annotations

from reference.rules.errors import require


def check_queue_pair(read_nums: int | None, write_nums: int | None) -> int:
    """The one queue count a (read, write) pair stands for; InvalidRequest when they differ or both are absent."""
    require(read_nums is not None or write_nums is not None, "readQueueNums", "is required (or writeQueueNums)")
    if read_nums is not None and write_nums is not None:
        require(read_nums == write_nums, "writeQueueNums",
                f"must equal readQueueNums ({read_nums}), got {write_nums}: the reference broker keeps one queue "
                "count per topic and does not keep read and write queue counts apart")
    return read_nums if read_nums is not None else write_nums  # type: ignore[return-value]

