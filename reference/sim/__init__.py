"""Deterministic simulations on virtual time: a broker and its clients with injected faults, recorded as traces.

Theory of operation
-------------------
A simulation is the real reference broker and real reference clients, wired together on one
:class:`~reference.clock.SimClock` through a simulated network, with every random choice drawn from
one seeded RNG. Nothing reads the wall clock, so a run is a pure function of its scenario: the same
scenario gives the same trace, row for row, and a failing schedule can be shrunk and replayed.

==================  ==========================================================================
``engine``          SimRun: clock, scratch directory, trace and broker host of every run; plays a
                    timed schedule and settles
``steps``           the one step vocabulary of every workload (produce, crash, leave, join, slow, fail,
                    retention, broker restart), timed; ``timeline`` writes a schedule as a script
``host``            SimBrokerHost: the broker process (reference.broker.host.BrokerHost) with restarts
                    that take virtual time
``scenario``        the pull and rebalance workload's config and schedule
``simulation``      runs a scenario (push consumer group); returns the trace and a summary
``pop_sim``         the POP workload (push consumers over POP)
``permit_sim``      the permit workload (Pulsar-style flow control)
``network``         latency, reordering, loss, failing synchronous calls, unordered member lists
``listener``        an application listener with processing time and failures
``progress``        follows the trace to tell when a run has quiesced
``judges``          every workload's judges: ``pull`` (drop semantics, commit safety, at-least-once,
                    duplicates), ``pop`` (audit_pop), ``permits`` (overrun, freeze, redelivery counts)
``findings``        Finding: the one shape of a broken invariant, naming its requirement
``timeline``        prints rows as a readable timeline (failure notes of every workload)
==================  ==========================================================================

The trace judges (``judges.pull``, ``judges.pop``) read only trace rows, and are compared with the Spark auditor
on the same traces (``tests/audit/test_judges_vs_spark.py``).
"""
