"""A full disk, for real: the HTTP broker on a 32 MiB tmpfs this test mounts (STORE-23, STORE-27; the mark itself,
STORE-22, is judged by tests/store/test_disk_full_mark.py).

Sends go on until the file system has no room for a new segment: each is acknowledged or refused with 503
SERVICE_NOT_AVAILABLE naming the disk, the server never dies (it used to, with SIGBUS, after 4,678 sends on a
24 MiB file system), and every acknowledged message is read back. The first clean run finds the disk above
diskSpaceWarningLevelRatio (0.90) and keeps writes refused while pulls and offset commits go on; once retention
has freed the expired segments, a clean run finds the disk at most 0.85 used and writes resume.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conformance.targets.launch import launch_broker

#: The file system's size, and the segments: small enough to fill in seconds, large enough for the consume
#: queue file of one queue (300,000 units of 20 bytes).
FS_SIZE = "32m"
SEGMENT = str(1 << 20)
BODY = "x" * 1000
#: The first clean run comes 60 s after start (seed 002 §2); fileReservedTime is 1 h here.
FIRST_CLEAN_MS = 61_000
PAST_RESERVATION_MS = 3_700_000


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("not applicable here: mounting a tmpfs of a set size needs root")
    mount = tmp_path / "fs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_SIZE}", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _refused_for_disk(response: httpx.Response) -> str:
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("SERVICE_NOT_AVAILABLE", "disk"), error
    return str(error["rule"])


@pytest.mark.req("STORE-23", "STORE-27")
def test_a_full_disk_refuses_writes_loses_nothing_and_writes_resume(small_fs: Path) -> None:
    server = launch_broker("http", small_fs / "data", "--sim-clock", "--segment-bytes", SEGMENT,
                           "--file-reserved-hours", "1")
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert http.post("/topics", json={"topic": "F", "queues": 1}).status_code == 201
            acked = 0
            while True:
                r = http.post("/topics/F/queues/0/messages", json={"body": BODY, "tags": "A"})
                if r.status_code != 201:
                    assert "no space left" in _refused_for_disk(r)
                    break
                acked += 1
                assert acked < 100_000, "a 32 MiB file system never filled"
            http.post("/admin/clock/advance", json={"ms": FIRST_CLEAN_MS})
            rule = _refused_for_disk(http.post("/topics/F/queues/0/messages", json={"body": BODY}))
            assert "above diskSpaceWarningLevelRatio 90%" in rule, rule
            # Reads and commits go on, and every acknowledged message is there.
            pulled, offset = 0, 0
            while True:
                r = http.post("/topics/F/queues/0/pull", json={
                    "consumerGroup": "G", "queueOffset": offset, "maxMsgNums": 32, "subscription": "*"})
                assert r.status_code == 200, r.text
                doc = r.json()
                if not doc["messages"]:
                    break
                pulled += len(doc["messages"])
                offset = doc["nextBeginOffset"]
            assert pulled == acked > 1_000
            assert http.put("/groups/G/offsets/F/0", json={"offset": offset}).status_code in (200, 204)
            assert http.get("/groups/G/offsets/F/0").json()["offset"] == offset
            # Retention frees the expired segments (the disk is above diskMaxUsedSpaceRatio: any hour); the run
            # after that finds room, and writes resume.
            http.post("/admin/clock/advance", json={"ms": PAST_RESERVATION_MS})
            r = http.post("/topics/F/queues/0/messages", json={"body": BODY})
            assert r.status_code == 201, r.text
            assert r.json()["queueOffset"] == acked
    finally:
        err = server.stop()
    assert "Traceback" not in err, err
