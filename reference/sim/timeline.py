"""A readable timeline of trace rows, for failure notes and for people.

One line per row: seconds since the first row, the source, the event and its essentials::

      12.345s client:10.0.3.7@1234   ASSIGN     T/2 @5 epoch=3
      12.351s broker:broker-a        PULL_RESP  T/2 @5 FOUND next=9 count=4 held=0ms

Filters keep a long run readable: ``queue`` (topic, queue id) and ``msg_id`` (one id or several) keep rows
about that queue or those messages (and the context rows CRASH, RESTART, UNSUBSCRIBE, END), ``client`` (one
or several) drops other clients' rows, ``events`` restricts the kinds. Beyond ``limit`` lines, the middle is
elided. Every simulation (pull and rebalance, POP, permits) writes its failure notes with this one formatter.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

#: Events always shown when filtering by queue or message: they explain everything around them.
_CONTEXT_EVENTS = frozenset({"CRASH", "RESTART", "UNSUBSCRIBE", "END"})


def describe_row(row: dict[str, Any]) -> str:
    """The essentials of one row, by event kind."""
    event = row["event"]
    where = f"{row.get('topic')}/{row.get('queue_id')}" if row.get("queue_id") is not None else ""
    parts: list[str] = []
    if event in ("SEND", "DELIVER", "CONSUME"):
        parts = [where, f"@{row.get('offset')}", str(row.get("msg_id"))]
        if event == "CONSUME":
            parts.append(str(row.get("status")))
        if event == "DELIVER" and row.get("reconsume_times"):
            parts.append(f"reconsume={row['reconsume_times']}")
    elif event in ("ASSIGN", "REVOKE"):
        parts = [where, f"@{row['offset']}" if row.get("offset") is not None else "", f"epoch={row.get('epoch')}"]
    elif event == "PULL_REQ":
        parts = [where, f"@{row.get('offset')}", f"max={row.get('max_nums')}", f"suspend={row.get('suspend_ms')}ms"]
    elif event == "PULL_RESP":
        parts = [where, f"@{row.get('offset')}", str(row.get("status")), f"next={row.get('next_offset')}",
                 f"count={row.get('count')}", f"held={row.get('held_ms')}ms"]
    elif event == "COMMIT":
        parts = [where, f"->{row.get('offset')}"]
        if row.get("client_id") and not row["source"].startswith("client:"):
            parts.append(f"from {row['client_id']}")
    elif event == "RETENTION":
        parts = [where, f"min={row.get('min_offset')}"]
    elif event in ("SUBSCRIBE", "UNSUBSCRIBE"):
        parts = [str(row.get("topic") or ""), str(row.get("expression") or ""), str(row.get("client_id") or "")]
    elif event in ("POP", "ACK", "CHANGE_INVISIBLE", "REVIVE"):
        parts = [where, f"@{row['offset']}" if row.get("offset") is not None else "", str(row.get("msg_id") or "")]
        parts += [f"{key}={row[key]}" for key in ("invisible_ms", "reconsume_times", "status")
                  if row.get(key) is not None]
        if row.get("handle"):
            parts.append(f"handle=[{row['handle']}]")
    elif event == "FLOW":
        parts = [f"+{row.get('count')} permits", str(row.get("client_id") or "")]
    elif event == "DISPATCH":
        parts = [str(row.get("msg_id") or ""), f"@{row.get('offset')}", str(row.get("client_id") or "")]
    if row.get("detail"):
        parts.append(str(row["detail"]))
    return " ".join(p for p in parts if p)


def _keep(row: dict[str, Any], queue: tuple[str, int] | None, msg_ids: frozenset[str] | None,
          clients: frozenset[str] | None, events: frozenset[str] | None) -> bool:
    if events is not None and row["event"] not in events:
        return False
    source = row["source"]
    if clients is not None and source.startswith("client:") and source[len("client:"):] not in clients:
        return False
    if row["event"] in _CONTEXT_EVENTS:
        return True
    if clients is not None and row.get("client_id") is not None and row["client_id"] not in clients:
        return False
    if queue is None and msg_ids is None:
        return True
    about_queue = queue is not None and (row.get("topic"), row.get("queue_id")) == queue
    about_message = msg_ids is not None and row.get("msg_id") in msg_ids
    return about_queue or about_message


def _as_set(value: str | Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset((value,)) if isinstance(value, str) else frozenset(value)


def format_timeline(
    rows: Iterable[dict[str, Any]], *, limit: int = 200, queue: tuple[str, int] | None = None,
    msg_id: str | Iterable[str] | None = None, client: str | Iterable[str] | None = None,
    events: Sequence[str] | None = None,
) -> str:
    rows = sorted(rows, key=lambda r: (r["ts"], r["source"], r["seq"]))
    if not rows:
        return "(no rows)"
    origin = rows[0]["ts"]
    kinds = frozenset(events) if events is not None else None
    kept = [r for r in rows if _keep(r, queue, _as_set(msg_id), _as_set(client), kinds)]
    lines = [
        f"{(r['ts'] - origin) / 1e6:10.3f}s {r['source'][:32]:<32} {r['event']:<10} {describe_row(r)}"
        for r in kept
    ]
    if len(lines) > limit:
        head, tail = limit // 2, limit - limit // 2
        lines = [*lines[:head], f"... {len(lines) - limit} rows elided ...", *lines[-tail:]]
    return "\n".join(lines)
