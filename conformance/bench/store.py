"""``mqtck bench store``: append and pull throughput of the reference store, with a profile.

Appends ``--messages`` messages of ``--body-bytes`` round-robin over ``--queues`` queues of one
topic, then pulls every queue from offset 0 to its end in batches of ``--batch`` with a "*"
subscription. A second, smaller run under cProfile says where the time goes (top functions by own
time, for append and for pull), so a regression can be traced without re-running by hand.

Goals on a 2-core machine (DESIGN.md: timing goals live in benches, not tests): append >= 50k msg/s
and pull >= 200k msg/s with 1 KiB bodies and batches of 32.
"""

from __future__ import annotations

import argparse
import cProfile
import shutil
import tempfile
import time
from pathlib import Path

from conformance.bench.profiling import top_functions
from reference.clock import RealClock
from reference.rules.filter import SubscriptionData
from reference.store.config import MessageStoreConfig
from reference.store.message import Message
from reference.store.store import MessageStore

HELP = "store append/pull throughput (msg/s, MiB/s) with a cProfile summary"

TOPIC = "BenchTopic"
#: Messages in the profiled run (profiling slows Python several-fold, so it runs smaller).
PROFILE_MESSAGES = 20_000
#: Functions listed per profile.
PROFILE_TOP = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--messages", type=int, default=200_000, help="messages to append (default 200000)")
    parser.add_argument("--body-bytes", type=int, default=1024, help="body size in bytes (default 1024)")
    parser.add_argument("--batch", type=int, default=32, help="maxMsgNums per pull (default 32)")
    parser.add_argument("--queues", type=int, default=4, help="queues of the topic (default 4)")
    parser.add_argument(
        "--data-dir", default=None, help="store directory (default: a temporary one, removed afterwards)"
    )
    parser.add_argument(
        "--segment-bytes", type=int, default=None,
        help="commit-log segment size (default: MessageStoreConfig's)",
    )


def _append(store: MessageStore, messages: int, body: bytes, queues: int) -> float:
    put = store.put_message
    batch = [Message(TOPIC, body, q, tags="TagA") for q in range(queues)]
    started = time.perf_counter()
    for i in range(messages):
        put(batch[i % queues])
    return time.perf_counter() - started


def _pull(store: MessageStore, queues: int, batch: int) -> tuple[float, int]:
    sub = SubscriptionData.parse(TOPIC, "*")
    get = store.get_message
    pulled = 0
    started = time.perf_counter()
    for q in range(queues):
        offset = 0
        end = store.get_max_offset_in_queue(TOPIC, q)
        while offset < end:
            result = get("bench", TOPIC, q, offset, batch, sub)
            pulled += len(result.messages)
            offset = result.next_begin_offset
    return time.perf_counter() - started, pulled


def _profile(config: MessageStoreConfig, root: Path, body: bytes, queues: int, batch: int) -> dict[str, object]:
    store = MessageStore(root / "profile", config, RealClock())
    store.create_topic(TOPIC, queues)
    try:
        append_profile = cProfile.Profile()
        append_profile.runcall(_append, store, PROFILE_MESSAGES, body, queues)
        pull_profile = cProfile.Profile()
        pull_profile.runcall(_pull, store, queues, batch)
    finally:
        store.close()
    return {
        "messages": PROFILE_MESSAGES,
        "append_top": top_functions(append_profile, PROFILE_TOP),
        "pull_top": top_functions(pull_profile, PROFILE_TOP),
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    overrides = {} if args.segment_bytes is None else {"commit_log_segment_bytes": args.segment_bytes}
    config = MessageStoreConfig(**overrides)
    body = bytes(i % 251 for i in range(args.body_bytes))
    temporary = args.data_dir is None
    root = Path(tempfile.mkdtemp(prefix="mqtck-bench-store-") if temporary else args.data_dir)
    try:
        store = MessageStore(root / "run", config, RealClock())
        store.create_topic(TOPIC, args.queues)
        try:
            append_s = _append(store, args.messages, body, args.queues)
            log_bytes = store.get_commit_log_max_offset() - store.get_commit_log_min_offset()
            pull_s, pulled = _pull(store, args.queues, args.batch)
        finally:
            store.close()
        profile = _profile(config, root, body, args.queues, args.batch)
    finally:
        if temporary:
            shutil.rmtree(root, ignore_errors=True)
    mib = 1024 * 1024
    return {
        "parameters": {
            "messages": args.messages, "body_bytes": args.body_bytes, "batch": args.batch,
            "queues": args.queues, "segment_bytes": config.commit_log_segment_bytes,
            "flush_disk_type": config.flush_disk_type, "data_dir": None if temporary else str(root),
        },
        "append": {
            "seconds": round(append_s, 3),
            "msgs_per_s": round(args.messages / append_s),
            "body_mib_per_s": round(args.messages * args.body_bytes / append_s / mib, 1),
            "log_mib_per_s": round(log_bytes / append_s / mib, 1),
        },
        "pull": {
            "seconds": round(pull_s, 3),
            "messages": pulled,
            "msgs_per_s": round(pulled / pull_s) if pull_s else None,
            "body_mib_per_s": round(pulled * args.body_bytes / pull_s / mib, 1) if pull_s else None,
        },
        "profile": profile,
    }
