"""Permit-based consumers (Pulsar, seed 003): a receive queue that grants the broker FLOW permits.

* :mod:`.consumer` – the consumer: receive queue, re-grant at half, acks, negative acks and the
  unacked-message timeout.
"""
