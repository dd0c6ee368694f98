"""The reference broker: pull processing, long polling, consumer registry, offsets (and later POP)."""
