"""Which launcher serves a peer of ``kind`` "broker" (:class:`~conformance.peers.rocketmq.RocketMQPeer`) or "proxy"
(:class:`~conformance.peers.rocketmq_proxy.ProxyPeer`): what ``mqtck peer run`` and ``mqtck gate`` start. Its own
module, so that the broker launcher does not import the proxy launcher built on it."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import IO

from conformance.peers import PeerInfo
from conformance.peers.rocketmq import RocketMQPeer
from conformance.peers.rocketmq import served as served_with
from conformance.peers.rocketmq_proxy import ProxyPeer


def launcher(info: PeerInfo) -> type[RocketMQPeer]:
    """The class that runs ``info``: the proxy's, rocketmq-rust's, or Apache's broker's."""
    from conformance.peers.rocketmq_rust import RustBrokerPeer, is_rust

    return ProxyPeer if info.kind == "proxy" else RustBrokerPeer if is_rust(info) else RocketMQPeer


def served(info: PeerInfo, namesrv_port: int = 0, *, log: IO[str] | None = None,
           channel_expired_timeout_ms: int | None = None) -> AbstractContextManager[str]:
    """The peer running with its control channel for as long as the block runs; yields its target
    (``remoting://…?control=…`` for a broker, ``grpc://…?remoting=…&control=…`` for a proxy)."""
    return served_with(info, namesrv_port, log=log, channel_expired_timeout_ms=channel_expired_timeout_ms,
                       peer_class=launcher(info))


def install(info: PeerInfo, say: IO[str] | None = None) -> None:
    """What a served peer runs, in the peer cache: Maven's classpath for Apache's, cargo's binaries for rocketmq-rust
    (built the first time: ``say`` gets its progress). PeerError when it cannot be had."""
    from conformance.peers.maven import server_classpath
    from conformance.peers.rocketmq_rust import install as install_rust
    from conformance.peers.rocketmq_rust import is_rust

    if is_rust(info):
        install_rust(info, say)
    else:
        server_classpath(info.kind, info.version)
