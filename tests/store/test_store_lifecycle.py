"""A closed MessageStore refuses every read and write (StoreClosed) instead of answering from emptied tables.

Before the guard, a pull after close found no consume queue and answered NO_MESSAGE_IN_QUEUE with next offset
0, which a consumer reads as OFFSET_MOVED to 0 and rewinds to the start of the queue.
"""

from __future__ import annotations

import pytest

from reference.store.message import Message
from reference.store.store import StoreClosed


def _put(store, n: int) -> None:  # type: ignore[no-untyped-def]
    store.create_topic("T", 1)
    for i in range(n):
        store.put_message(Message("T", f"m{i}".encode(), 0))


def test_a_closed_store_refuses_pulls_instead_of_moving_the_offset_to_zero(make_store) -> None:  # type: ignore[no-untyped-def]
    store = make_store()
    _put(store, 3)
    store.close()
    with pytest.raises(StoreClosed, match="get_message is refused"):
        store.get_message("G", "T", 0, 3, 32, None)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.put_message(Message("T", b"late", 0)),
        lambda s: s.get_max_offset_in_queue("T", 0),
        lambda s: s.get_min_offset_in_queue("T", 0),
        lambda s: s.get_commit_log_max_offset(),
        lambda s: s.look_message_by_offset(0),
        lambda s: s.create_topic("U", 1),
        lambda s: s.run_retention(),
    ],
    ids=["put", "max-offset", "min-offset", "commit-log-max", "look", "create-topic", "retention"],
)
def test_every_read_and_write_refuses_after_close(make_store, call) -> None:  # type: ignore[no-untyped-def]
    store = make_store()
    _put(store, 2)
    store.close()
    with pytest.raises(StoreClosed):
        call(store)


def test_close_twice_is_harmless_and_a_reopened_store_has_everything(make_store) -> None:  # type: ignore[no-untyped-def]
    store = make_store()
    _put(store, 5)
    store.close()
    store.close()
    again = make_store()
    result = again.get_message("G", "T", 0, 0, 32, None)
    assert [m.body for m in result.messages] == [f"m{i}".encode() for i in range(5)]
    assert again.get_max_offset_in_queue("T", 0) == 5
