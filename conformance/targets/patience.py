"""How long a check waits on a target for what no requirement times, and the wait for sent messages to show.

Shared by the conformance suite and the differ (``conformance.diff``), which drive the same targets and meet the
same asynchrony: a kit module, so that the differ need not import the test suite.
"""

from __future__ import annotations

import time

from conformance.targets import Target

#: How long a test waits over the wire for what no requirement times: the answer to a request that is not held,
#: a send showing in its consume queue (Apache dispatches it asynchronously), a route, a notification. A wait
#: that ends early once the thing happens costs nothing when a broker conforms, and CI runs two JVM brokers
#: beside another lane on two cores, where a broker stalls for seconds (4.9.7 once left a send or pull of
#: REMOTING-8 unanswered for over 5 s there). A broker that never does it still fails, after this long. Waits
#: that a requirement bounds (a long poll's wake, a hold's time-out) keep their own constants.
PATIENCE_S = 30.0


def visible(target: Target, topic: str, queue: int, count: int) -> None:
    """Return once the queue's max offset reaches ``count``: Apache RocketMQ builds the consume queue after it
    acknowledged a send, so a read at once may miss the last messages (at once with clock control)."""
    if "clock_control" in target.capabilities:
        return
    deadline = time.monotonic() + PATIENCE_S
    while target.min_max(topic, queue)[1] < count:
        assert time.monotonic() < deadline, f"the messages sent to {topic}/{queue} never showed in its queue"
        time.sleep(0.02)
