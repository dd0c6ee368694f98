"""The scenarios a RocketMQ 5 (POP) client under test is run through, and what each one can judge.

Each scenario gets a fresh topic and group on the same reference broker (its gRPC front), prefilled with
messages whose bodies are ``m0`` ... ``m{N-1}`` before the client starts, so that a subject names a message by its
body in MQTCK_FAIL and the judges find it by the id the broker gave it. The client consumes until it has
consumed every message successfully (MQTCK_COUNT) and stops by itself, which a graceful client ends with
NotifyClientTermination. The push-killed scenario runs two push consumers of the group and kills one with SIGKILL
while it holds messages it has not acknowledged.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Seed 004 §2.1: a message popped is invisible to every consumer until its invisible time ends; the scenarios'
#: simple consumers receive with 10 s (the proxy's and the reference's least: ProxyConfig.minInvisibleTimeMillsForRecv).
RECEIVE_INVISIBLE_S = 10
#: What a simple consumer's application sets the invisible time of a failed message to: 2 s, so it comes back soon.
RETRY_INVISIBLE_S = 2
#: How long a simple consumer's receive waits for messages (its await duration, the long poll).
AWAIT_S = 5
#: Queues of a scenario's topic (the proxy's auto-created topics have 4 too).
QUEUES = 4
#: The push consumers' invisible time when they name none (auto_renew): the reference's and the proxy's 60 s
#: (reference.net.grpc.receive.DEFAULT_INVISIBLE_MS). The killed consumer's messages come back no earlier.
PUSH_INVISIBLE_S = 60
#: How long the reference's consumer registry keeps a silent v5 client (``--channel-expired-ms``) in the runs that
#: kill a push consumer. The front renews a live client's auto_renew messages, and gives a gone client's back 1 s
#: after the registry drops it (RENEW-1), so this is when a killed push consumer's messages come back. 70 s: the
#: invisible time plus the clients' 10 s heartbeat interval. A killed consumer's last heartbeat was at most 10 s
#: before the kill, and its last receive before the kill, so its messages come back no earlier than their 60 s
#: (PCLIENT-9 and the audit's early redelivery), and without waiting out the registry's default 120 s.
KILLED_CLIENT_EXPIRY_MS = 70_000
#: How often the registry looks for silent clients in those runs (``--channel-scan-ms``; 10 s by default).
KILLED_CLIENT_SCAN_MS = 1_000
#: Slack after the invisible time for the revive to run and the survivor to receive the message again.
REVIVE_SLACK_S = 30
#: Push-killed: the latest the first consumer is killed after both registered, holding messages or not.
KILL_WITHIN_S = 15.0
#: How long the harness waits for a client's first heartbeat in its group (a JVM starting under load is slow).
REGISTER_WITHIN_S = 60.0


@dataclass(frozen=True)
class PopScenario:
    name: str
    description: str
    mode: str  # MQTCK_MODE: "simple" or "push"
    messages: int
    #: Bodies the application fails, and on how many deliveries each (MQTCK_FAIL, MQTCK_FAIL_ATTEMPTS).
    fail: tuple[str, ...]
    fail_attempts: int
    judges: tuple[str, ...]
    #: The longest the scenario runs from the first client's registration.
    duration_s: float
    #: Bodies whose invisible time a simple consumer's application extends before consuming them (MQTCK_EXTEND).
    extend: tuple[str, ...] = ()
    #: MQTCK_CONSUME_DELAY_MS: how long consuming one message takes.
    consume_delay_ms: int = 0
    #: Push-killed: a second consumer of the group joins; the first is killed this long after both run.
    kill_at_s: float | None = None


#: Every scenario judges these from the one client's run: acks, nacks, handles, termination.
_SINGLE = ("PCLIENT-1", "PCLIENT-2", "PCLIENT-3", "PCLIENT-5", "PCLIENT-6", "PCLIENT-7", "PCLIENT-8")

SCENARIOS: dict[str, PopScenario] = {
    s.name: s
    for s in (
        PopScenario(
            "simple-retry",
            f"SimpleConsumer: 20 messages on {QUEUES} queues, received with {RECEIVE_INVISIBLE_S} s invisible time; "
            f"the application fails m3 and m11 once and sets their invisible time to {RETRY_INVISIBLE_S} s, extends "
            "m5's before consuming it, acks everything else; stops once all 20 succeeded",
            mode="simple", messages=20, fail=("m3", "m11"), fail_attempts=1, extend=("m5",), judges=_SINGLE,
            duration_s=60.0,
        ),
        PopScenario(
            "push-retry",
            f"PushConsumer: 20 messages on {QUEUES} queues; the listener returns FAILURE for m3 and m11 on their first "
            "two deliveries, SUCCESS otherwise; stops once all 20 succeeded",
            mode="push", messages=20, fail=("m3", "m11"), fail_attempts=2,
            judges=(*(r for r in _SINGLE if r != "PCLIENT-6"), "PCLIENT-4"), duration_s=60.0,
        ),
        PopScenario(
            "push-killed",
            "two PushConsumers of one group share 40 messages that take 10 s each to consume (the first, 20 threads in "
            "the official clients, holds them for 20 s); once both run and the first holds messages (at least 2 s "
            "after the second registered) the first is killed with SIGKILL: every "
            f"message it held unacknowledged comes back after its invisible time ({PUSH_INVISIBLE_S} s when the client "
            "names none) and never before, and the survivor acks it",
            mode="push", messages=40, fail=(), fail_attempts=0, consume_delay_ms=10_000, kill_at_s=2.0,
            judges=("PCLIENT-9", "PCLIENT-10", "PCLIENT-5"),
            duration_s=KILL_WITHIN_S + PUSH_INVISIBLE_S + REVIVE_SLACK_S + 20.0,
        ),
    )
}
