"""``mqtck record``: a trace of a real deployment, recorded off the wire.

A remoting proxy sits in front of a name server (:mod:`.proxy`). It rewrites the broker addresses in the
route data it passes back, so clients reach the brokers through it too, and forwards every byte a client
sends unchanged. What it sees is turned into trace schema v1 rows (:mod:`.wire`): sends with their queue
offsets, pull requests and answers, offset commits, heartbeats and unregisters, POP and acknowledgements,
each with the client it came from. The rows are the brokers' view (source ``broker:<name>``): the wire
shows what a broker accepted and answered, never what a listener did, so the audit says which checks such
a trace cannot judge (docs/audit.md).
"""
