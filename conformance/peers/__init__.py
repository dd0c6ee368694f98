"""Peers: real implementations someone else wrote, installed by name and version from their registries.

A peer is what mqtck judges besides its own reference: today the Apache RocketMQ brokers (name server and
broker from Maven Central, run on loopback in a temp dir), the Java client's allocation strategies
(``kind`` "strategies": gated by their golden vectors and properties, see
:mod:`conformance.peers.strategies`) and real consumers (``kind`` "client": run through the client check
against the reference broker, see :mod:`conformance.peers.clients`). ``mqtck peer list`` shows the catalogue,
``mqtck peer install NAME`` resolves one, ``mqtck peer run NAME`` serves it in the foreground and
``mqtck gate NAME`` runs the conformance suite against it with its reviewed expectations
(``conformance/expectations/NAME.toml``).

Every failure to get a peer running is a :class:`PeerError` with one line saying why (unknown name, Maven
or Java missing, the registry unreachable, port busy, the broker never registered): the CLI prints it and
exits 2.
"""

from __future__ import annotations

from dataclasses import dataclass


class PeerError(Exception):
    """A peer cannot be installed or started; the message is one line that says why."""


@dataclass(frozen=True)
class PeerInfo:
    """One entry of the catalogue: ``name`` is what the commands take (``rocketmq-4.9.7``)."""

    name: str
    kind: str
    version: str
    description: str
    #: Registry coordinates resolved to run it (informative; Maven's in the poms of ``conformance/peers``).
    artifacts: tuple[str, ...] = ()
    #: Its name and version for a reader (``Apache RocketMQ 4.9.7``): a gate report's heading.
    title: str = ""
    #: The wire a broker peer speaks: ``remoting`` (RocketMQ, conformance/peers/rocketmq.py) or ``pulsar``
    #: (conformance/peers/pulsar.py).
    wire: str = "remoting"


#: Apache RocketMQ 4.9.8 publishes no rocketmq-broker / rocketmq-namesrv on Maven Central (only the client
#: side: rocketmq-client, -common, -remoting, -store): 4.9.7 is the newest 4.x broker that can be installed
#: by name and version. 5.5.0 is the newest 5.x with both name server and broker there.
CATALOGUE: dict[str, PeerInfo] = {
    p.name: p
    for p in (
        PeerInfo(
            "rocketmq-4.9.7", "broker", "4.9.7",
            "Apache RocketMQ 4.9.7 name server and broker (remoting protocol), one master on loopback",
            ("org.apache.rocketmq:rocketmq-namesrv:4.9.7", "org.apache.rocketmq:rocketmq-broker:4.9.7"),
            "Apache RocketMQ 4.9.7",
        ),
        PeerInfo(
            "rocketmq-5.5.0", "broker", "5.5.0",
            "Apache RocketMQ 5.5.0 name server and broker (remoting protocol, POP), one master on loopback",
            ("org.apache.rocketmq:rocketmq-namesrv:5.5.0", "org.apache.rocketmq:rocketmq-broker:5.5.0"),
            "Apache RocketMQ 5.5.0",
        ),
        PeerInfo(
            "rocketmq-proxy-5.5.0", "proxy", "5.5.0",
            "Apache RocketMQ 5.5.0 proxy in LOCAL mode (gRPC MessagingService, the broker inside) and name server, "
            "on loopback",
            ("org.apache.rocketmq:rocketmq-namesrv:5.5.0", "org.apache.rocketmq:rocketmq-proxy:5.5.0"),
            "Apache RocketMQ Proxy 5.5.0 (LOCAL)",
        ),
        PeerInfo(
            "java-client-4.9.8", "client", "4.9.8",
            "the Java client's DefaultMQPushConsumer (rocketmq-client 4.9.8), clustering, through the client check",
            ("org.apache.rocketmq:rocketmq-client:4.9.8",),
        ),
        PeerInfo(
            "java-lite-pull-4.9.8", "client", "4.9.8",
            "the Java client's DefaultLitePullConsumer (rocketmq-client 4.9.8), subscribed, auto commit, through "
            "the client check",
            ("org.apache.rocketmq:rocketmq-client:4.9.8",),
        ),
        PeerInfo(
            "go-client-2.1.2", "client", "2.1.2",
            "the Go client's push consumer (github.com/apache/rocketmq-client-go/v2 v2.1.2), clustering, through "
            "the client check; built with go build",
            ("go:github.com/apache/rocketmq-client-go/v2@v2.1.2",),
        ),
        PeerInfo(
            "cpp-client-0.4.4", "client", "0.4.4",
            "the C++ client's PushConsumer (PyPI rocketmq 0.4.4, rocketmq-client-cpp 1.2.3) through the client "
            "check; needs the interop-remoting tox env",
            ("pypi:rocketmq==0.4.4",),
        ),
        PeerInfo(
            "java-client-v5-5.2.0", "client", "5.2.0",
            "the RocketMQ 5 Java client's SimpleConsumer and PushConsumer (rocketmq-client-java 5.2.0, gRPC) through "
            "the POP client check",
            ("org.apache.rocketmq:rocketmq-client-java:5.2.0",), "Apache RocketMQ Java client 5.2.0 (gRPC)",
        ),
        PeerInfo(
            "python-client-v5-5.1.2", "client", "5.1.2",
            "the RocketMQ 5 Python client's SimpleConsumer and PushConsumer (PyPI rocketmq-python-client 5.1.2, "
            "gRPC) through the POP client check; needs the interop-v5 tox env",
            ("pypi:rocketmq-python-client==5.1.2",), "Apache RocketMQ Python client 5.1.2 (gRPC)",
        ),
        PeerInfo(
            "go-client-v5-5.1.2", "client", "5.1.2",
            "the RocketMQ 5 Go client's SimpleConsumer (github.com/apache/rocketmq-clients/golang/v5 v5.1.2, gRPC; "
            "it has no PushConsumer) through the POP client check; built with go build",
            ("go:github.com/apache/rocketmq-clients/golang/v5@v5.1.2",), "Apache RocketMQ Go client 5.1.2 (gRPC)",
        ),
        PeerInfo(
            "java-strategies-4.9.8", "strategies", "4.9.8",
            "the Java client's six AllocateMessageQueue* strategies (rocketmq-client 4.9.8) behind the exec protocol",
            ("org.apache.rocketmq:rocketmq-client:4.9.8",),
        ),
        # 4.0.7, not 4.0.8: 4.0.8's pulsar-metadata needs jetcd-core-shaded 4.0.8, which Maven Central lacks.
        PeerInfo(
            "pulsar-4.0.7", "broker", "4.0.7",
            "Apache Pulsar 4.0.7 standalone (broker, one bookie, RocksDB metadata; no functions worker, no stream "
            "storage) on loopback",
            ("org.apache.pulsar:pulsar-broker:4.0.7",),
            "Apache Pulsar 4.0.7", "pulsar",
        ),
        PeerInfo(
            "python-pulsar-client-3.13", "client", "3.13.0",
            "Apache Pulsar's Python client (PyPI pulsar-client 3.13.0, libpulsar C++ 4.2.0): its FLOWs and nack "
            "redeliveries judged against the reference's Pulsar front; pulsar-client is in the dev extra",
            ("pypi:pulsar-client==3.13.0",), "pulsar-client 3.13.0 (Python)", "pulsar",
        ),
        PeerInfo(
            "java-pulsar-client-4.0.7", "client", "4.0.7",
            "Apache Pulsar's Java client (pulsar-client 4.0.7): its FLOWs and nack redeliveries judged against the "
            "reference's Pulsar front",
            ("org.apache.pulsar:pulsar-client:4.0.7",), "pulsar-client 4.0.7 (Java)", "pulsar",
        ),
        # An independent Rust reimplementation (github.com/mxsm/rocketmq-rust), built with cargo from crates.io:
        # conformance/peers/rocketmq_rust.py.
        PeerInfo(
            "rocketmq-rust-1.0.0", "broker", "1.0.0",
            "rocketmq-rust 1.0.0 name server and broker (Rust reimplementation, remoting protocol, POP), built from "
            "crates.io with cargo, one master on loopback",
            ("crates:rocketmq-namesrv@1.0.0", "crates:rocketmq-broker@1.0.0"),
            "rocketmq-rust 1.0.0",
        ),
    )
}


def peer_info(name: str) -> PeerInfo:
    """The catalogue entry for ``name``; PeerError listing the known names otherwise."""
    try:
        return CATALOGUE[name]
    except KeyError:
        raise PeerError(f"unknown peer {name!r}; known: {', '.join(sorted(CATALOGUE))}") from None
