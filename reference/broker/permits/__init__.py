"""Permit flow control on the broker (Pulsar, seed 003): the consumer grants, the broker spends.

Theory of operation
-------------------
A consumer tells the broker how many messages it can take (FLOW, *permits*, incremental credit);
the broker sends at most that many and counts each message against them; the consumer grants more
as its application takes messages from its receive queue. Nothing is sent without a permit, and a
consumer with permits is served as soon as there is something to send.

* :mod:`.protocol` – subscription types, positions, dispatched messages, the channel;
* :mod:`.batch` – batch entries (several messages, one stored entry);
* :mod:`.cursor` – the durable subscription cursor (mark-delete, individual acks, rewind);
* :mod:`.consumer` – a consumer's permits and pending messages;
* :mod:`.redelivery` – the redelivery tracker;
* :mod:`.entry_filter` – corrupt entries, markers and delayed messages taken out before dispatch;
* :mod:`.limits` – the dispatch rate and maxUnackedMessagesPerConsumer;
* :mod:`.dispatcher` – single-active (exclusive, failover) and shared dispatchers;
* :mod:`.service` – subscribe / flow / ack / redeliver / close, and the FLOW and DISPATCH rows.
"""
