"""MessageStoreConfig: every number the store's rules depend on, named, with RocketMQ's value or ours.

Why one dataclass: the seeds' constants (72 h retention, deleteWhen "04", 75 % disk ratio, the
16 000-byte filter scan, the in-memory/in-disk transfer limits) are part of the behaviour a
conformance target is compared against. Naming them here lets a test, a mutant or an operator change
one and see which requirement notices. Values that differ from RocketMQ's say so and why.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field

#: The two flush modes. ASYNC: an append has reached the OS page cache (a killed process loses
#: nothing). SYNC: an append has also been msync'ed to the device (a power cut loses nothing).
FLUSH_DISK_TYPES = ("ASYNC", "SYNC")


def _machine_physical_memory() -> int:
    """Bytes of RAM, as RocketMQ's StoreUtil.TotalPhysicalMemorySize reads it from the OS."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # platforms without these sysconf names
        return 8 << 30


@dataclass
class MessageStoreConfig:
    #: Bytes per commit-log segment file. RocketMQ uses 1 GiB (mapedFileSizeCommitLog); 64 MiB keeps
    #: a fresh reference broker's disk footprint small while still rolling rarely.
    commit_log_segment_bytes: int = 64 << 20
    #: 20-byte units per consume-queue segment file (RocketMQ's mapedFileSizeConsumeQueue / 20).
    consume_queue_units_per_segment: int = 300_000
    #: Largest body a producer may send (RocketMQ's maxMessageSize, 4 MiB).
    max_message_size: int = 4 << 20
    #: A commit-log segment whose newest message is older than this may be deleted (seed 002 §2,
    #: fileReservedTime).
    file_reserved_time_hours: int = 72
    #: Hours of the day at which expired files are deleted, RocketMQ syntax "04" or "04;16" (seed 002
    #: §2, deleteWhen). Unlike RocketMQ, which reads the broker's local time zone, the hours are
    #: UTC so that a simulated run means the same thing on every machine.
    delete_when: str = "04"
    #: Disk usage (percent of the partition holding the store) above which expired files are deleted
    #: at any hour (seed 002 §2, diskMaxUsedSpaceRatio).
    disk_max_used_space_ratio: int = 75
    #: Disk usage (fraction) above which a clean run marks the disk full and the store refuses writes (seed 002 §2,
    #: -Drocketmq.broker.diskSpaceWarningLevelRatio=0.90; STORE-22).
    disk_space_warning_level_ratio: float = 0.90
    #: Disk usage (fraction) at or below which a clean run marks the disk writable again (seed 002 §2,
    #: -Drocketmq.broker.diskSpaceCleanForciblyRatio=0.85). RocketMQ also deletes unexpired files above it; the
    #: reference does not (RETAIN-3's note).
    disk_space_clean_forcibly_ratio: float = 0.85
    #: How often the clean service runs (seed 002 §2, cleanResourceInterval, 10 s).
    clean_resource_interval_ms: int = 10_000
    #: Delay before the clean service first runs after start (seed 002 §2: scheduleAtFixedRate's
    #: initial delay of 1000 * 60 ms).
    clean_resource_initial_delay_ms: int = 60_000
    #: At most this many commit-log segments are deleted by one clean run; a longer backlog of expired segments
    #: takes several runs, and each run corrects the queues' min offsets to what it left (RocketMQ's
    #: MappedFileQueue.DELETE_FILES_BATCH_MAX in 4.x, MessageStoreConfig.deleteFileBatchMax in 5.x: 10). Found
    #: by ``mqtck diff`` against 4.9.7: a queue whose messages span the tenth and eleventh segment keeps the min
    #: offset the first run gave it when the second empties it (RETAIN-7, RETAIN-9).
    delete_files_batch_max: int = 10
    #: How many clean runs a manual delete request forces (RocketMQ's MAX_MANUAL_DELETE_FILE_TIMES).
    manual_delete_file_times: int = 20
    #: Percent of physical memory that counts as "in memory": a message further than this behind the
    #: commit-log end is "in disk" and pulls take smaller batches (accessMessageInMemoryMaxRatio).
    access_message_in_memory_max_ratio: int = 40
    #: Physical memory in bytes used by the in-disk rule; tests set it small to make data "in disk".
    total_physical_memory_bytes: int = field(default_factory=_machine_physical_memory)
    #: Batch limits for pulls of in-memory data (maxTransferBytesOnMessageInMemory / ...CountOn...).
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    max_transfer_count_on_message_in_memory: int = 32
    #: Batch limits for pulls of in-disk data (maxTransferBytesOnMessageInDisk / ...CountOn...).
    max_transfer_bytes_on_message_in_disk: int = 64 * 1024
    max_transfer_count_on_message_in_disk: int = 8
    #: Bound of one pull's consume-queue scan, in BYTES of 20-byte units: the scan loop's counter
    #: advances by 20 per unit and stops at max(this, maxMsgNums * 20), so 16 000 means 800 units
    #: (seed 002 §1 ``MaxFilterMessageCount = 16000``; seed 000 ``Math.max(16000, maxMsgNums * 20)``).
    max_filter_scan_bytes: int = 16_000
    #: "ASYNC" (default): an append returns once its bytes are in the OS page cache, which survives a
    #: process kill. "SYNC": each append is also msync'ed to the device before it returns.
    flush_disk_type: str = "ASYNC"
    #: With ASYNC flush, how often the commit log's new bytes are msync'ed (RocketMQ's FlushRealTimeService:
    #: flushIntervalCommitLog 500 ms). This bounds what a machine crash loses: the page cache's unflushed tail.
    flush_interval_commit_log_ms: int = 500
    #: ... but only once this many 4 KiB pages are dirty (flushCommitLogLeastPages 4), or
    flush_commit_log_least_pages: int = 4
    #: ... whatever is dirty when this long has passed since the last complete flush
    #: (flushCommitLogThoroughInterval 10 s).
    flush_commit_log_thorough_interval_ms: int = 10_000
    #: What retention does to the min offset of a queue none of whose messages is left in the commit log:
    #: raise it to the queue's max offset (True: RocketMQ 5's ConsumeQueue.correctMinOffset, "let
    #: minLogicOffset point to a future slot", RETAIN-9) or leave it where it was (False: RocketMQ 4.x, whose
    #: pulls then skip the removed messages as MESSAGE_WAS_REMOVING). ``mqtck diff`` runs the reference with
    #: False against a 4.x broker, as that broker's expectations file says.
    raise_min_of_emptied_queue: bool = True
    #: Where a read past the max offset of a queue whose min offset is 0 is sent: back to 0 (False: seed 002,
    #: RocketMQ before 4.9.4) or to the max (True: RocketMQ 4.9.4 and later, ISSUE #4215). OFFSET-4 allows both;
    #: ``mqtck diff`` runs the reference with True against a broker that does it, as its expectations file says.
    offset_overflow_to_max: bool = False
    #: How much a permit dispatcher reads for a consumer's permits: that many messages, never starting an entry once
    #: they are spent (False: the reference's strict rule, FLOW-11), or that many *entries* (True: Pulsar's
    #: calculateToRead with preciseDispatcherFlowControl off, so whole entries may be started at 0 permits or below).
    #: ``mqtck diff`` runs the reference with True against Pulsar, as pulsar-4.0.7.toml says.
    permit_read_entries_per_permit: bool = False
    #: How often the consumer offset table is written to disk (RocketMQ's flushConsumerOffsetInterval).
    offset_persist_interval_ms: int = 5_000
    #: This broker's address as recorded in each message and in its offset message id (STOREHOST).
    store_host: tuple[str, int] = ("127.0.0.1", 10911)

    def __post_init__(self) -> None:
        positive = (
            "commit_log_segment_bytes", "consume_queue_units_per_segment", "max_message_size",
            "clean_resource_interval_ms", "total_physical_memory_bytes",
            "max_transfer_bytes_on_message_in_memory", "max_transfer_count_on_message_in_memory",
            "max_transfer_bytes_on_message_in_disk", "max_transfer_count_on_message_in_disk",
            "max_filter_scan_bytes", "offset_persist_interval_ms", "delete_files_batch_max",
            "flush_interval_commit_log_ms", "flush_commit_log_thorough_interval_ms",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"MessageStoreConfig.{name}: must be > 0, got {getattr(self, name)!r}")
        non_negative = (
            "file_reserved_time_hours", "clean_resource_initial_delay_ms", "manual_delete_file_times",
            "flush_commit_log_least_pages",
        )
        for name in non_negative:
            if getattr(self, name) < 0:
                raise ValueError(f"MessageStoreConfig.{name}: must be >= 0, got {getattr(self, name)!r}")
        for name in ("disk_max_used_space_ratio", "access_message_in_memory_max_ratio"):
            if not 0 <= getattr(self, name) <= 100:
                raise ValueError(f"MessageStoreConfig.{name}: must be a percentage in [0, 100]")
        if self.flush_disk_type not in FLUSH_DISK_TYPES:
            raise ValueError(f"MessageStoreConfig.flush_disk_type: must be one of {FLUSH_DISK_TYPES}")
        self.delete_when_hours()  # validates the syntax now rather than at 04:00
        host, port = self.store_host
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"MessageStoreConfig.store_host: {host!r} is not an IPv4 address") from None
        if not 0 <= port <= 0xFFFF:
            raise ValueError(f"MessageStoreConfig.store_host: port {port} is not in [0, 65535]")

    def delete_when_hours(self) -> frozenset[int]:
        """The UTC hours named by ``delete_when`` ("04;16" -> {4, 16})."""
        hours = set()
        for piece in self.delete_when.split(";"):
            piece = piece.strip()
            if not piece.isdigit() or not 0 <= int(piece) <= 23:
                raise ValueError(
                    f"MessageStoreConfig.delete_when: {self.delete_when!r} must be hours 00-23 joined by ';'"
                )
            hours.add(int(piece))
        return frozenset(hours)

    def in_memory_budget_bytes(self) -> int:
        """How far behind the commit-log end a message may be and still count as in memory."""
        return self.total_physical_memory_bytes * self.access_message_in_memory_max_ratio // 100
