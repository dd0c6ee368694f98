"""Deterministic simulations on virtual time: a broker and its clients with injected faults, recorded as traces.

Theory of operation
-------------------
A simulation is the real reference broker and real reference clients, wired together on one
:class:`~reference.clock.SimClock` through a simulated network, with every random choice drawn from
one seeded RNG. Nothing reads the wall clock, so a run is a pure function of its scenario: the same
scenario gives the same trace, row for row, and a failing schedule can be shrunk and replayed.

==================  ==========================================================================
``scenario``        what a run does: SimConfig and the steps (produce, wait, crash, join, ...)
``simulation``      runs a scenario (push consumer group); returns the trace and a summary
``network``         latency, reordering, loss, failing synchronous calls, unordered member lists
``host``            the broker process: graceful and crashing restarts with store recovery
``process``         a process's clock, which a crash stops
``listener``        an application listener with processing time and failures
``progress``        follows the trace to tell when a run has quiesced
``checks``          judges a trace: drop semantics, commit safety, at-least-once, duplicates
``timeline``        prints rows as a readable timeline (failure notes)
``pop_sim``         POP consumers (its own module)
``permit_sim``      Pulsar-style permit flow control (its own module)
==================  ==========================================================================
"""
