"""``mqtck bench disk``: the data directory's footprint after many small messages over many topics.

Issue 41 found 3,000 small messages over 40 topics taking 334 MB, because every consume queue that got a
message was a fully allocated 6,000,000-byte file. This bench writes the same workload into a reference store
(``--topics`` topics of ``--queues`` queues, as auto-creation makes them, ``--messages`` messages of
``--body-bytes`` round-robin over every queue) and reports, per part of the data directory, the bytes the disk
really holds (``du``: allocated blocks) beside the files' lengths, so the effect of growing consume-queue files
and of ``--segment-bytes`` is a number, not a claim. Not a timing goal: a size.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from reference.clock import RealClock
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.store.store import MessageStore

HELP = "data-directory size (allocated and apparent bytes) after small messages over many topics"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--messages", type=int, default=3000, help="messages to append (default 3000)")
    parser.add_argument("--topics", type=int, default=40, help="topics (default 40)")
    parser.add_argument("--queues", type=int, default=4, help="queues per topic (default 4, as auto-created)")
    parser.add_argument("--body-bytes", type=int, default=100, help="body size in bytes (default 100)")
    parser.add_argument("--segment-bytes", type=int, default=None, help="commit-log segment size (default 64 MiB)")


def _sizes(directory: Path) -> dict[str, int]:
    """Allocated bytes (st_blocks * 512, what du counts) and apparent bytes of every file below ``directory``."""
    files = [p for p in directory.rglob("*") if p.is_file()]
    return {"allocated_bytes": sum(p.stat().st_blocks * 512 for p in files),
            "apparent_bytes": sum(p.stat().st_size for p in files), "files": len(files)}


def run(args: argparse.Namespace) -> dict[str, object]:
    overrides = {} if args.segment_bytes is None else {"commit_log_segment_bytes": args.segment_bytes}
    config = MessageStoreConfig(**overrides)
    root = Path(tempfile.mkdtemp(prefix="mqtck-bench-disk-"))
    try:
        store = MessageStore(root / "store", config, RealClock())
        try:
            topics = [f"DiskTopic{i}" for i in range(args.topics)]
            for topic in topics:
                store.create_topic(topic, args.queues)
            body = b"x" * args.body_bytes
            for i in range(args.messages):
                topic = topics[i % len(topics)]
                store.put_message(Message(topic, body, (i // len(topics)) % args.queues))
            store.flush_commit_log()
        finally:
            store.close()
        parts = {p.name: _sizes(p) for p in sorted((root / "store").iterdir()) if p.is_dir()}
        total = _sizes(root / "store")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"parameters": {"messages": args.messages, "topics": args.topics, "queues": args.queues,
                           "body_bytes": args.body_bytes, "segment_bytes": config.commit_log_segment_bytes},
            "total": total, "parts": parts}
