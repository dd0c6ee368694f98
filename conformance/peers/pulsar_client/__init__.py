"""Apache Pulsar's clients as observed programs: the Java client (``PulsarRoundTrip.java`` on the runtime classpath
of ``pulsar-client`` that ``pom.xml`` resolves) and the Python client (``python_roundtrip``, PyPI ``pulsar-client``
3.13, in the ``dev`` extra) run the same round trip, and :mod:`conformance.peers.pulsar_observe` reads what the broker
did meanwhile."""
