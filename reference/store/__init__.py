"""The reference broker's store: commit log, consume queues of 20-byte units, consumer offsets,
retention (seed 002). :class:`reference.store.store.MessageStore` is the entry point; each module
owns one rule or one file format, named after its RocketMQ counterpart.
"""
