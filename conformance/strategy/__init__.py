"""The engine behind ``mqtck strategy check``: property-test an allocation strategy.

Theory of operation. A *strategy under test* (:mod:`.adapters`) answers allocation requests, whether
it is a Python object or a program speaking the JSON-lines exec protocol (:mod:`.protocol`). A
*scenario* (:mod:`.scenario`) is one consumer group as Hypothesis generates it: sorted queues over
1-3 brokers, sorted consumer ids, consumers outside the group, a consumer about to join and one
about to leave. The *properties* (:mod:`.properties`) are plain functions of a strategy and a
scenario that return a :class:`~.report.Failure` or nothing; what the strategy promises (a
:class:`~.declaration.Declaration`) decides which apply and which must hold. The engine
(:mod:`.engine`) runs one Hypothesis search per property, so each gets its own shrunk counterexample,
and :mod:`.render` turns the results into a table or JSON. The pytest suite in
``properties/allocation`` calls the same property functions against every built-in strategy.
"""
