"""The permit judges: the flow-control invariants of a permit subscription, each broken one a finding.

Two are judged while a run plays, because they are about an instant rather than a row: *overrun* (the broker
read for a consumer at 0 permits or below, FLOW-2; or started a batch entry so, *entry-overrun*, FLOW-11:
:func:`overrun_findings` from the client's counters; permits below 0 are no finding, since a batch is never
split) and *freeze*
(at a quiet instant, a consumer that may receive has permits while its subscription has messages to send:
:func:`freeze_findings`). One is judged from the trace rows afterwards: *redelivery-count* (in a shared
subscription the k-th dispatch of a message must carry redelivery count k; in exclusive and failover ones
always 0: :func:`redelivery_count_findings`). *lost* (a message the subscription never acknowledged) is the
simulation's own verdict when it does not settle (:func:`permit_finding`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from reference.broker.broker import Broker
from reference.broker.permits.protocol import SubType
from reference.client.permits.consumer import PermitConsumerClient
from reference.sim.findings import Finding

#: The rows a permit failure note shows (with :func:`reference.sim.timeline.format_timeline`).
PERMIT_EVENTS = ("FLOW", "DISPATCH", "CRASH", "RESTART")
#: The requirement each permit anomaly breaks.
PERMIT_REQUIREMENTS = {"overrun": "FLOW-2", "entry-overrun": "FLOW-11", "freeze": "FLOW-3",
                       "redelivery-count": "FLOW-6", "lost": "FLOW-10"}


def permit_finding(kind: str, message: str, client_id: str | None = None) -> Finding:
    """A permit anomaly ``kind`` (a key of :data:`PERMIT_REQUIREMENTS`), naming the requirement it breaks."""
    return Finding(kind, PERMIT_REQUIREMENTS[kind], message, client_id=client_id)


def overrun_findings(client: PermitConsumerClient, t: int) -> list[Finding]:
    """A consumer sent messages by a read, or a batch entry, that started when it had no permits left."""
    out = []
    if client.overdrawn_reads:
        out.append(permit_finding(
            "overrun", f"t={t} {client.client_id}: {client.overdrawn_reads} read(s) started at 0 permits or below "
            f"(received {client.received}, granted {client.granted})", client.client_id,
        ))
    if client.overdrawn_entries:
        out.append(permit_finding(
            "entry-overrun", f"t={t} {client.client_id}: {client.overdrawn_entries} entry(ies) started at 0 permits "
            f"or below (received {client.received}, granted {client.granted})", client.client_id,
        ))
    return out


def freeze_findings(broker: Broker, t: int) -> list[Finding]:
    """Consumers that may receive, hold permits, and have messages waiting: a frozen dispatcher."""
    out = []
    for sub in broker.permits.subscriptions.values():
        dispatcher = sub.dispatcher
        eligible = [dispatcher.active] if hasattr(dispatcher, "active") else list(dispatcher.consumers)
        backlog = bool(getattr(dispatcher, "replay", ())) or sub.cursor.has_new()
        for consumer in eligible:
            if consumer is not None and consumer.permits > 0 and backlog:
                out.append(permit_finding(
                    "freeze", f"t={t} {consumer.client_id} has {consumer.permits} permits and messages are waiting",
                    consumer.client_id,
                ))
    return out


def redelivery_count_findings(rows: list[dict[str, Any]], sub_type: SubType) -> list[Finding]:
    """Shared: the k-th dispatch of a message (within one broker run) carries k; others carry 0."""
    out = []
    dispatches: dict[str, int] = defaultdict(int)
    for r in sorted(rows, key=lambda r: (r["ts"], r["source"], r["seq"])):
        if r["event"] == "CRASH" and r["source"].startswith("broker:"):
            dispatches.clear()  # the broker's tracker does not survive a restart
        if r["event"] != "DISPATCH":
            continue
        count = json.loads(r["detail"])["redelivery_count"]
        expected = dispatches[r["msg_id"]] if sub_type is SubType.SHARED else 0
        if count != expected:
            nth = dispatches[r["msg_id"]]
            text = f"{r['msg_id']} dispatch #{nth} carried {count}, expected {expected}"
            out.append(permit_finding("redelivery-count", text))
        dispatches[r["msg_id"]] += 1
    return out
