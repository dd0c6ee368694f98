"""The reference strategies on the seeds' own worked examples, and the Java semantics they rest on."""

from __future__ import annotations

import pytest

from reference.allocation import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocationError,
    DashPrefixResolver,
    MessageQueue,
    PopShareAllocation,
    java_string_key,
    sort_cid_all,
    sort_mq_all,
    strategy_from_params,
)
from reference.allocation.consistent_hash import md5_hash
from reference.allocation.javalang import is_blank, java_split

CIDS = ["c1", "c2", "c3", "c4"]


def queues(n: int, broker: str = "broker-a", topic: str = "TopicTest") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def ids(result: list[MessageQueue]) -> list[int]:
    return [mq.queue_id for mq in result]


@pytest.mark.req("ALLOC-1")
def test_java_order_puts_supplementary_characters_before_high_bmp() -> None:
    names = ["bＡ", "b😀", "bz", "bé"]
    assert sorted(names) == ["bz", "bé", "bＡ", "b😀"]  # Python: code points
    assert sort_cid_all(names) == ["bz", "bé", "b😀", "bＡ"]  # Java: UTF-16 code units
    assert java_string_key("\ud800") < java_string_key("\uffff")  # lone surrogates sort too


@pytest.mark.req("ALLOC-1")
def test_message_queue_orders_by_topic_broker_then_numeric_queue_id() -> None:
    mqs = [MessageQueue("T", "broker-2", 10), MessageQueue("T", "broker-2", 9), MessageQueue("T", "broker-10", 1),
           MessageQueue("S", "z", 0), MessageQueue("T", "Broker-z", 3)]
    assert [(mq.topic, mq.broker_name, mq.queue_id) for mq in sort_mq_all(mqs)] == [
        ("S", "z", 0), ("T", "Broker-z", 3), ("T", "broker-10", 1), ("T", "broker-2", 9), ("T", "broker-2", 10)
    ]
    assert MessageQueue("T", "b", 2) < MessageQueue("T", "b", 10)
    assert len({MessageQueue("T", "b", 1), MessageQueue("T", "b", 1)}) == 1
    assert MessageQueue.from_json(MessageQueue("T", "b", 1).to_json()) == MessageQueue("T", "b", 1)


def test_message_queue_from_json_names_the_bad_field() -> None:
    with pytest.raises(ValueError, match="queueId"):
        MessageQueue.from_json({"topic": "T", "brokerName": "b", "queueId": "1"})
    with pytest.raises(ValueError, match="brokerName"):
        MessageQueue.from_json({"topic": "T", "queueId": 1})


def test_java_split_and_blank_follow_java() -> None:
    assert java_split("room1@", "@") == ["room1"]
    assert java_split("room1@@", "@") == ["room1"]
    assert java_split("@broker-z", "@") == ["", "broker-z"]
    assert java_split("", "@") == [""]
    assert java_split("@", "@") == []
    assert is_blank(" \t") and is_blank(None) and is_blank("")
    assert not is_blank("\u00a0")  # a no-break space is not Java whitespace


@pytest.mark.req("ALLOC-2")
def test_averagely_matches_the_seed_example_of_six_queues_and_four_consumers() -> None:
    strategy = AllocateMessageQueueAveragely()
    shares = [ids(strategy.allocate("g", cid, queues(6), CIDS)) for cid in CIDS]
    assert shares == [[0, 1], [2, 3], [4], [5]]
    assert strategy.name == "AVG"


@pytest.mark.req("ALLOC-3")
def test_circle_matches_the_seed_example_of_four_queues_and_three_consumers() -> None:
    strategy = AllocateMessageQueueAveragelyByCircle()
    shares = [ids(strategy.allocate("g", cid, queues(4), CIDS[:3])) for cid in CIDS[:3]]
    assert shares == [[0, 3], [1], [2]]


@pytest.mark.req("ALLOC-8")
@pytest.mark.parametrize(
    "cid, mq_all, cid_all, message",
    [
        ("", [], [], "currentCID is empty"),
        (None, queues(1), CIDS, "currentCID is empty"),
        ("c1", [], [], "mqAll is null or mqAll empty"),
        ("c1", None, CIDS, "mqAll is null or mqAll empty"),
        ("c1", queues(1), [], "cidAll is null or cidAll empty"),
    ],
)
def test_bad_arguments_are_refused_like_rocketmq(cid, mq_all, cid_all, message) -> None:
    for strategy in (AllocateMessageQueueAveragely(), AllocateMessageQueueAveragelyByCircle(),
                     AllocateMessageQueueConsistentHash()):
        with pytest.raises(AllocationError) as info:
            strategy.allocate("g", cid, mq_all, cid_all)
        assert str(info.value) == f"java.lang.IllegalArgumentException: {message}"


@pytest.mark.req("ALLOC-8")
def test_a_consumer_outside_the_group_gets_nothing() -> None:
    assert AllocateMessageQueueAveragely().allocate("g", "c9", queues(4), CIDS) == []
    assert AllocateMessageQueueConsistentHash().allocate("g", "c9", queues(4), CIDS) == []


@pytest.mark.req("ALLOC-4")
def test_consistent_hash_gives_each_queue_to_the_nearest_node_clockwise() -> None:
    """The ring itself, whatever the hash: nodes and queues placed by a hash of our choosing."""
    points = {"a-0": 100, "b-0": 200, "c-0": 300}
    mq_all = queues(4)
    at = {mq.java_str(): p for mq, p in zip(mq_all, (50, 100, 250, 350), strict=True)}
    ring = AllocateMessageQueueConsistentHash(1, hash_function=lambda key: points.get(key, at.get(key, 0)))
    owners = {cid: ids(ring.allocate("g", cid, mq_all, ["a", "b", "c"])) for cid in "abc"}
    # 50 -> a (100), 100 -> a (at its point), 250 -> c (300), 350 wraps around to a (100)
    assert owners == {"a": [0, 1, 3], "b": [], "c": [2]}


@pytest.mark.req("ALLOC-19")
def test_consistent_hash_uses_the_first_four_md5_bytes_big_endian() -> None:
    # md5("") = d41d8cd98f00b204e9800998ecf8427e
    assert md5_hash("") == 0xD41D8CD9
    with pytest.raises(AllocationError, match="illegal virtualNodeCnt :-1"):
        AllocateMessageQueueConsistentHash(-1)
    empty_ring = AllocateMessageQueueConsistentHash(0)
    assert all(empty_ring.allocate("g", cid, queues(8), CIDS) == [] for cid in CIDS)


@pytest.mark.req("ALLOC-5")
def test_machine_room_takes_only_queues_of_the_groups_rooms() -> None:
    mq_all = queues(5, "room1@broker-a") + queues(5, "room2@broker-b")
    strategy = AllocateMessageQueueByMachineRoom({"room1"})
    shares = [strategy.allocate("g", cid, mq_all, CIDS[:2]) for cid in CIDS[:2]]
    taken = [mq for share in shares for mq in share]
    assert sorted(taken) == sorted(queues(5, "room1@broker-a")), "every queue of the room, each to one consumer"


@pytest.mark.req("ALLOC-20")
def test_machine_room_deals_its_queues_in_order_remainder_first() -> None:
    mq_all = queues(5, "room1@broker-a") + queues(5, "room2@broker-b")
    strategy = AllocateMessageQueueByMachineRoom({"room1"})
    shares = [ids(strategy.allocate("g", cid, mq_all, CIDS[:2])) for cid in CIDS[:2]]
    assert shares == [[0, 1, 4], [2, 3]]


@pytest.mark.req("ALLOC-6")
def test_nearby_covers_a_room_without_consumers_from_every_room() -> None:
    mq_all = sort_mq_all(queues(2, "IDC1-broker-a") + queues(2, "IDC2-broker-b") + queues(3, "IDC3-broker-c"))
    cid_all = ["IDC1-c1", "IDC2-c2"]
    strategy = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), DashPrefixResolver())
    shares = {cid: strategy.allocate("g", cid, mq_all, cid_all) for cid in cid_all}
    assert sorted(shares["IDC1-c1"] + shares["IDC2-c2"]) == mq_all, "the consumerless room's queues too, once each"
    for cid, room in (("IDC1-c1", "IDC1-"), ("IDC2-c2", "IDC2-")):
        own = [mq for mq in mq_all if mq.broker_name.startswith(room)]
        assert set(own) <= set(shares[cid]), f"{cid} gets its own room's queues"


@pytest.mark.req("ALLOC-21")
def test_nearby_shares_every_room_and_refuses_a_roomless_consumer() -> None:
    mq_all = sort_mq_all(queues(2, "IDC1-broker-a") + queues(2, "IDC2-broker-b"))
    cid_all = ["IDC1-c1", "IDC1-c2"]
    strategy = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), DashPrefixResolver())
    shares = {cid: strategy.allocate("g", cid, mq_all, cid_all) for cid in cid_all}
    assert {mq.broker_name for mq in shares["IDC1-c1"]} == {"IDC1-broker-a", "IDC2-broker-b"}
    assert strategy.name == "MACHINE_ROOM_NEARBY-AVG"
    with pytest.raises(AllocationError, match="Machine room is null for consumer id -c2"):
        strategy.allocate("g", "IDC1-c1", mq_all, ["-c2", "IDC1-c1"])


@pytest.mark.req("ALLOC-15")
def test_pop_with_share_num_zero_gives_everyone_every_broker_with_queue_id_minus_one() -> None:
    pop = PopShareAllocation(AllocateMessageQueueAveragely(), 0)
    result = pop.allocate("g", "c9", queues(2) + queues(1, "broker-b"), CIDS)
    assert [(mq.broker_name, mq.queue_id) for mq in result] == [("broker-a", -1), ("broker-a", -1), ("broker-b", -1)]


@pytest.mark.req("ALLOC-16")
def test_pop_shares_the_next_consumers_allocations_wrapping_around() -> None:
    pop = PopShareAllocation(AllocateMessageQueueAveragely(), 1)
    shares = [ids(pop.allocate("g", cid, queues(8), CIDS)) for cid in CIDS]
    assert shares == [[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6, 7], [6, 7, 0, 1]]


@pytest.mark.req("ALLOC-17")
def test_pop_with_more_consumers_than_queues_assigns_every_consumer() -> None:
    for share_num in (0, 1, 2):
        pop = strategy_from_params("pop_share", {"popShareQueueNum": share_num,
                                                 "innerStrategy": "AllocateMessageQueueAveragely"})
        cid_all = [f"c{i}" for i in range(5)]
        assert all(pop.allocate("g", cid, queues(2), cid_all) for cid in cid_all), share_num


@pytest.mark.req("ALLOC-22")
def test_pop_with_more_consumers_than_queues_gives_one_queue_each_by_position() -> None:
    pop = strategy_from_params("pop_share", {"popShareQueueNum": 1, "innerStrategy": "AllocateMessageQueueAveragely"})
    cid_all = [f"c{i}" for i in range(5)]
    assert [ids(pop.allocate("g", cid, queues(2), cid_all)) for cid in cid_all] == [[0], [1], [0], [1], [0]]
    with pytest.raises(AllocationError, match="currentCID is empty"):
        pop.allocate("g", " ", queues(2), cid_all)  # the broker's own check uses isBlank
