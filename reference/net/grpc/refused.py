"""The RPCs the reference does not serve over v5, refused with NOT_IMPLEMENTED and why (never left to gRPC's
UNIMPLEMENTED, which the client reports as a transport failure and retries).

* EndTransaction: no transaction message is ever stored (SendMessage refuses TRANSACTION), so none can end.
* RecallMessage: no delay message is ever stored (SendMessage refuses DELAY), so none can be recalled.
* SyncLiteSubscription: lite topics are not part of the reference.
* PullMessage, UpdateOffset, GetOffset, QueryOffset: the v5 pull consumer's RPCs; the reference serves offset
  pulls over remoting (``mqtck broker --remoting``), where the suite's pull requirements are tested.
"""

from __future__ import annotations

REASONS: dict[str, str] = {
    "EndTransaction": "transactions are not supported by the reference: no TRANSACTION message is ever stored",
    "RecallMessage": "recalling is not supported by the reference: no DELAY message is ever stored",
    "SyncLiteSubscription": "lite topics are not supported by the reference",
    "PullMessage": "the v5 pull consumer is not served over gRPC; pull over remoting (mqtck broker --remoting)",
    "UpdateOffset": "the v5 pull consumer is not served over gRPC; commit offsets over remoting",
    "GetOffset": "the v5 pull consumer is not served over gRPC; query offsets over remoting",
    "QueryOffset": "the v5 pull consumer is not served over gRPC; query offsets over remoting",
}


def reason(rpc: str) -> str:
    return f"{rpc}: {REASONS[rpc]}"
