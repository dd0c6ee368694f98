"""The POP judge: :func:`audit_pop` checks a trace against the POP requirements, from its rows alone.

It returns findings (empty when all hold): a message never acknowledged (*lost*), delivered again before its
invisibility ended, as replaced by change-invisible (*early-redelivery*, one per offending POP, as the Spark
auditor counts it), revived before then (*early-revive*), delivered or revived after it was acknowledged
(*redelivered-after-ack*, *revived-after-ack*), delivered again without a revive after its invisibility ended
(*unattributed-redelivery*), revived or redelivered with the wrong reconsume times (*reconsume-times*), or left
unacknowledged past its invisibility and never revived (*never-revived*). Each finding names the message and the
rows that prove it. The POP simulation (:mod:`reference.sim.pop_sim`) and the POP property suites use it as their
oracle; ``tests/audit/test_judges_vs_spark.py`` compares it with the Spark auditor on the same traces.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from reference.sim.findings import Finding

#: The rows a POP failure note shows (with :func:`reference.sim.timeline.format_timeline`).
POP_EVENTS = ("SEND", "POP", "ACK", "CHANGE_INVISIBLE", "REVIVE", "CRASH", "RESTART")
#: The requirement each POP anomaly breaks.
POP_REQUIREMENTS = {
    "lost": "REVIVE-7", "early-redelivery": "PACK-1", "unattributed-redelivery": "PACK-1", "early-revive": "REVIVE-2",
    "redelivered-after-ack": "PACK-3", "revived-after-ack": "REVIVE-3", "reconsume-times": "REVIVE-5",
    "never-revived": "REVIVE-2",
}


def _finding(kind: str, msg_id: str, message: str) -> Finding:
    return Finding(kind, POP_REQUIREMENTS[kind], message, msg_id=msg_id)


@dataclass
class _Delivery:
    pop: dict[str, Any]
    handles: set[str]
    end_us: int
    reconsume_times: int
    acked: bool = False
    revived: dict[str, Any] | None = None


def audit_pop(rows: list[dict[str, Any]], group: str, settle_ms: int = 30_000) -> list[Finding]:
    """Check the POP rows of ``group`` in a trace (see the module docstring); times are trace ``ts``."""
    horizon = max((r["ts"] for r in rows), default=0)
    events: dict[str, list[dict[str, Any]]] = defaultdict(list)
    sent: dict[str, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: (r["ts"], r["source"], r["seq"])):
        if r["event"] == "SEND":
            sent.setdefault(r["msg_id"], r)
        elif r["event"] in ("POP", "ACK", "CHANGE_INVISIBLE", "REVIVE") and r.get("group") == group:
            if r["event"] == "ACK" and r.get("status") != "OK":
                continue
            events[r["msg_id"]].append(r)
    findings: list[Finding] = []

    def at(r: dict[str, Any]) -> str:
        return f"{r['event']} at t={r['ts'] // 1000} seq={r['seq']}"

    for msg_id in sorted(set(sent) | set(events)):
        current: _Delivery | None = None
        acked = False
        for r in events.get(msg_id, []):
            kind = r["event"]
            if kind == "POP":
                if current is not None:
                    if current.acked:
                        findings.append(_finding("redelivered-after-ack", msg_id, f"{at(r)} after it was acked"))
                    elif r["ts"] < current.end_us:
                        findings.append(_finding(
                            "early-redelivery", msg_id,
                            f"{at(r)}, invisible until t={current.end_us // 1000} since {at(current.pop)}",
                        ))
                    elif current.revived is None:
                        findings.append(_finding("unattributed-redelivery", msg_id, f"{at(r)} without a revive"))
                    elif r["reconsume_times"] != current.revived["reconsume_times"]:
                        findings.append(_finding(
                            "reconsume-times", msg_id,
                            f"{at(r)} carries {r['reconsume_times']}, "
                            f"revived with {current.revived['reconsume_times']}",
                        ))
                current = _Delivery(r, {r["handle"]}, r["ts"] + r["invisible_ms"] * 1000, r["reconsume_times"])
            elif kind == "CHANGE_INVISIBLE" and current is not None and r["handle"] in current.handles:
                current.end_us = r["ts"] + r["invisible_ms"] * 1000
                new = json.loads(r.get("detail") or "{}").get("new_handle")
                if new:
                    current.handles.add(new)
            elif kind == "ACK" and current is not None and r["handle"] in current.handles:
                current.acked = acked = True
            elif kind == "REVIVE":
                if current is None:
                    findings.append(_finding("unattributed-redelivery", msg_id, f"{at(r)} of a message never popped"))
                elif current.acked:
                    findings.append(_finding("revived-after-ack", msg_id, f"{at(r)} after it was acked"))
                elif r["ts"] < current.end_us:
                    findings.append(_finding(
                        "early-revive", msg_id,
                        f"{at(r)} before its invisibility ended at t={current.end_us // 1000}",
                    ))
                elif r["reconsume_times"] != current.reconsume_times + 1:
                    findings.append(_finding(
                        "reconsume-times", msg_id,
                        f"{at(r)} carries {r['reconsume_times']}, popped with {current.reconsume_times}",
                    ))
                if current is not None:
                    current.revived = r
        cutoff = horizon - settle_ms * 1000
        if msg_id in sent and not acked and sent[msg_id]["ts"] <= cutoff:
            findings.append(_finding("lost", msg_id, f"sent at t={sent[msg_id]['ts'] // 1000}, never acknowledged"))
        if current is not None and not current.acked and current.revived is None and current.end_us < cutoff:
            findings.append(_finding(
                "never-revived", msg_id, f"{at(current.pop)} invisible until t={current.end_us // 1000}, not revived"
            ))
    return findings

