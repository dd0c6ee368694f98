"""The mqtck reference implementation: a broker, name server and clients whose behaviour is the spec.

Everything under this package is sans-I/O in the sense of h11: protocol and queueing logic never reads
a socket or the wall clock. Time comes from a :class:`reference.clock.Clock`; bytes on disk are the
store's own business (it *is* the disk layer); network I/O belongs to the transports in
``reference.net``.
"""
