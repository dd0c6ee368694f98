"""PULL requirements of held pulls checked without clock control: a real-time counterpart of the simulated-time
``test_held_pull_commits_once`` (``test_pull_conformance``), so that a broker reached over the wire is tested too.

The arrival that wakes the held pull is a send; the answer to the pull is read before the committed offset is
queried, because a broker writes the response of a re-executed pull after processing it (RocketMQ:
``executeRequestWhenWakeup`` runs ``processRequest(channel, request, false)`` and then writes the response).
"""

from __future__ import annotations

import pytest

from conformance.targets import Target

#: Suspend timeout of the held pull: long enough that the arrival, not the time-out, answers it.
SUSPEND_MS = 5_000


@pytest.mark.req("PULL-4")
@pytest.mark.needs("pull", "long_poll", "commit_offset", "query_offset")
def test_woken_pull_does_not_commit_again(target: Target) -> None:
    target.create_topic("CW", 1)
    pending = target.start_pull("G", "CW", 0, 0, suspend_ms=SUSPEND_MS, commit_offset=2)
    assert target.query_offset("G", "CW", 0) == ("SUCCESS", 2), "stored when the request was first processed"
    target.commit_offset("G", "CW", 0, 5)
    target.send("CW", 0, b"wake")
    r = pending.result()
    assert r.code == "SUCCESS" and [m.body for m in r.messages] == [b"wake"], r
    assert target.query_offset("G", "CW", 0) == ("SUCCESS", 5), "the woken pull committed its offset a second time"
