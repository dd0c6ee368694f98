"""The POP client check's judges (conformance/client_check/pop_checks.py) on traces written by hand: a client that
behaves passes, each fault on purpose fails the requirement it breaks, and a run without evidence is not applicable.
The real clients are judged end to end in tests/peers/test_v5_client_peers.py and test_pop_client_python.py."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.client_check.pop_checks import CHECKS, PopContext

GROUP, TOPIC, CLIENT, OTHER = "G", "T", "c1", "c2"


class Trace:
    """Rows in the broker's order, with the schema's columns the judges read."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.ts = 1_000_000

    def add(self, event: str, after_ms: int = 10, **columns: Any) -> dict[str, Any]:
        self.ts += after_ms * 1000
        row = {"seq": len(self.rows), "ts": self.ts, "event": event, "group": GROUP, **columns}
        self.rows.append(row)
        return row

    def pop(self, msg: str, handle: str, client: str = CLIENT, attempt: int = 1, invisible_ms: int = 10_000,
            after_ms: int = 10) -> None:
        self.add("POP", after_ms, client_id=client, topic=TOPIC, msg_id=msg, handle=handle, invisible_ms=invisible_ms,
                 reconsume_times=attempt - 1)

    def ack(self, handle: str, msg: str, client: str = CLIENT, status: str = "OK") -> None:
        self.add("ACK", client_id=client, handle=handle, msg_id=msg, status=status)

    def change(self, handle: str, new: str, msg: str, invisible_ms: int, client: str = CLIENT) -> None:
        # A trace row's detail is JSON text, as the trace writes it.
        self.add("CHANGE_INVISIBLE", client_id=client, handle=handle, msg_id=msg, invisible_ms=invisible_ms,
                 detail=f'{{"new_handle": "{new}"}}')


def consumed(msg: str, attempt: int, result: str) -> dict[str, Any]:
    return {"event": "consumed", "message_id": msg, "attempt": attempt, "result": result, "body": msg}


def judge(rid: str, trace: Trace, **ctx: Any) -> str:
    context = PopContext(GROUP, TOPIC, frozenset({CLIENT}), **ctx)
    return CHECKS[rid](trace.rows, context).status


def retried() -> tuple[Trace, list[dict[str, Any]]]:
    """m1 succeeds; m2 fails once, is made invisible for 1 s, comes back and succeeds."""
    t = Trace()
    t.pop("m1", "h1")
    t.pop("m2", "h2")
    t.ack("h1", "m1")
    t.change("h2", "h2b", "m2", 1_000)
    t.pop("m2", "h3", attempt=2, after_ms=1_000)
    t.ack("h3", "m2")
    return t, [consumed("m1", 1, "SUCCESS"), consumed("m2", 1, "FAILURE"), consumed("m2", 2, "SUCCESS")]


@pytest.mark.req("PCLIENT-1")
def test_every_success_must_be_acked() -> None:
    trace, lines = retried()
    assert judge("PCLIENT-1", trace, consumed=lines) == "pass"
    trace.rows = [r for r in trace.rows if not (r["event"] == "ACK" and r["handle"] == "h3")]
    assert judge("PCLIENT-1", trace, consumed=lines) == "fail"
    assert judge("PCLIENT-1", trace, consumed=[]) == "not-applicable"


@pytest.mark.req("PCLIENT-2", "PCLIENT-3")
def test_a_failure_is_not_acked_but_made_invisible_again() -> None:
    trace, lines = retried()
    assert judge("PCLIENT-2", trace, consumed=lines) == "pass"
    assert judge("PCLIENT-3", trace, consumed=lines) == "pass"
    acked = Trace()
    acked.pop("m2", "h2")
    acked.ack("h2", "m2")  # the client acked what the application failed, and never changed it
    assert judge("PCLIENT-2", acked, consumed=lines[1:2]) == "fail"
    assert judge("PCLIENT-3", acked, consumed=lines[1:2]) == "fail"
    assert judge("PCLIENT-3", acked, consumed=lines[:1]) == "not-applicable"


@pytest.mark.req("PCLIENT-4")
def test_the_retry_delay_grows_with_the_attempt() -> None:
    def twice(first_ms: int, second_ms: int) -> Trace:
        t = Trace()
        t.pop("m", "h1")
        t.change("h1", "h1b", "m", first_ms)
        t.pop("m", "h2", attempt=2)
        t.change("h2", "h2b", "m", second_ms)
        return t

    assert judge("PCLIENT-4", twice(1_000, 5_000)) == "pass"
    assert judge("PCLIENT-4", twice(5_000, 1_000)) == "fail"
    assert judge("PCLIENT-4", twice(1_000, 1_000)) == "fail"
    assert judge("PCLIENT-4", retried()[0]) == "not-applicable"


@pytest.mark.req("PCLIENT-5")
def test_only_handles_the_client_received_are_acked() -> None:
    trace, _ = retried()
    assert judge("PCLIENT-5", trace) == "pass"
    forged = Trace()
    forged.pop("m", "h1")
    forged.ack("never-given", "m")
    assert judge("PCLIENT-5", forged) == "fail"
    foreign = Trace()
    foreign.pop("m", "h9", client=OTHER)
    foreign.ack("h9", "m")  # another consumer's handle
    assert judge("PCLIENT-5", foreign) == "fail"
    assert judge("PCLIENT-5", Trace()) == "not-applicable"


@pytest.mark.req("PCLIENT-6")
def test_after_a_change_the_new_handle_is_used() -> None:
    def extended(ack_with: str) -> Trace:
        t = Trace()
        t.pop("m", "h1")
        t.change("h1", "h2", "m", 10_000)
        t.ack(ack_with, "m")
        return t

    assert judge("PCLIENT-6", extended("h2")) == "pass"
    assert judge("PCLIENT-6", extended("h1")) == "fail"
    assert judge("PCLIENT-6", retried()[0]) == "not-applicable"  # changed, then redelivered: a new delivery


@pytest.mark.req("PCLIENT-7", "PCLIENT-8")
def test_a_graceful_stop_says_goodbye_and_receives_nothing_after() -> None:
    trace, _ = retried()
    trace.add("UNSUBSCRIBE", client_id=CLIENT)
    assert judge("PCLIENT-7", trace, graceful_ids=frozenset({CLIENT})) == "pass"
    assert judge("PCLIENT-8", trace) == "pass"
    trace.pop("m3", "h4")
    assert judge("PCLIENT-8", trace) == "fail"
    silent, _ = retried()
    assert judge("PCLIENT-7", silent, graceful_ids=frozenset({CLIENT})) == "fail"
    assert judge("PCLIENT-7", silent) == "not-applicable"
    assert judge("PCLIENT-8", silent) == "not-applicable"


@pytest.mark.req("PCLIENT-9", "PCLIENT-10")
def test_a_killed_consumers_messages_come_back_after_their_invisible_time_and_none_is_lost() -> None:
    def killed(back_after_ms: int | None) -> Trace:
        t = Trace()
        t.pop("m1", "h1", invisible_ms=60_000)
        t.pop("m2", "h2", invisible_ms=60_000)
        t.ack("h1", "m1")
        if back_after_ms is not None:
            t.pop("m2", "h3", client=OTHER, attempt=2, after_ms=back_after_ms)
            t.ack("h3", "m2", client=OTHER)
        return t

    both = {"killed_ids": frozenset({CLIENT}), "sent": frozenset({"m1", "m2"})}
    on_time = killed(61_000)
    assert judge("PCLIENT-9", on_time, end_ts_us=on_time.ts, **both) == "pass"
    assert judge("PCLIENT-10", on_time, **both) == "pass"
    early = killed(5_000)
    assert judge("PCLIENT-9", early, end_ts_us=early.ts, **both) == "fail"
    lost = killed(None)
    assert judge("PCLIENT-9", lost, end_ts_us=lost.ts + 120_000_000, **both) == "fail"
    assert judge("PCLIENT-9", lost, end_ts_us=lost.ts, **both) == "not-applicable"  # the run ended too soon
    assert judge("PCLIENT-10", lost, **both) == "fail"
