"""The disk-full mark (STORE-22): set by a clean run above diskSpaceWarningLevelRatio, cleared by one at or below
diskSpaceCleanForciblyRatio, unchanged between; while set, writes are refused (STORE-27: with SERVICE_NOT_AVAILABLE)
and reads go on. The same on a
real full file system: tests/net/test_disk_full.py."""

from __future__ import annotations

import pytest

from reference.store.disk import DiskFull
from reference.store.message import Message


@pytest.mark.req("STORE-22")
def test_the_mark_follows_the_two_ratios_and_refuses_writes(make_store, disk) -> None:  # type: ignore[no-untyped-def]
    store = make_store()
    store.create_topic("T", 1)
    store.put_message(Message("T", b"before", 0))
    for ratio, writable in ((0.95, False), (0.87, False), (0.91, False), (0.85, True), (0.89, True), (0.90, True)):
        disk.ratio = ratio
        store.run_retention()
        if writable:
            store.put_message(Message("T", b"ok", 0))
            continue
        with pytest.raises(DiskFull):
            store.put_message(Message("T", b"refused", 0))
        with pytest.raises(DiskFull):
            store.put_messages([Message("T", b"batch", 0)])
    assert store.get_max_offset_in_queue("T", 0) == 4, "the three writable rounds stored one message each"


@pytest.mark.req("STORE-27")
def test_a_full_disk_refuses_with_service_not_available_and_reads_go_on(make_store, disk) -> None:  # type: ignore[no-untyped-def]
    store = make_store()
    store.create_topic("T", 1)
    store.put_message(Message("T", b"before", 0))
    for ratio in (0.95, 0.87, 0.91):
        disk.ratio = ratio
        store.run_retention()
        with pytest.raises(DiskFull) as refused:
            store.put_message(Message("T", b"refused", 0))
        assert (refused.value.code, refused.value.field) == ("SERVICE_NOT_AVAILABLE", "disk")
        found = store.get_message("G", "T", 0, 0, 32, None)
        assert found.messages and found.messages[0].body == b"before", "reads go on"
