"""The Pulsar binary protocol front (``mqtck broker --pulsar``) over the reference permit dispatcher (seed 003).

* codec: :mod:`.schema` (the protobuf messages, our own table from the wire notes), :mod:`.frame` (sizes, CRC-32C,
  entries), :mod:`.topics` (Pulsar topic names to store topics, message ids);
* handlers, one table per domain: :mod:`.session` (CONNECT, lookups, PING), :mod:`.produce` (PRODUCER, SEND),
  :mod:`.consume` (SUBSCRIBE, FLOW, ACK, REDELIVER, CLOSE_CONSUMER);
* server: :mod:`.connection` (one asyncio connection and its producers and consumers), :mod:`.server`;
* errors: :mod:`.errors` (a refusal to ``CommandError``'s ServerError with ``field: rule``).
"""
