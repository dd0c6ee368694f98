"""Run the real Apache RocketMQ 5 proxy in LOCAL mode (the broker inside the proxy's JVM) with its name server.

This is how a RocketMQ 5 deployment serves the v5 gRPC clients: ``ProxyStartup -pm local -bc broker.conf
-pc rmq-proxy.json`` starts a ``BrokerController`` from ``broker.conf`` in its own JVM, then the proxy's gRPC
server (MessagingService) and its remoting server in front of it. The broker inside keeps its own remoting
port, registers with the name server like any broker, and takes exactly the settings the ``rocketmq-5.5.0`` peer
gives its broker (:meth:`RocketMQPeer._write_config`): the gate's expectations rely on them, and the runner's
control channel (restart, retention, settings) works on it unchanged.

What this launcher adds, each found in ``ProxyConfig`` (read off rocketmq-all-5.3.3, run against 5.5.0):

* every address is loopback: ``localServeAddr`` (what the proxy advertises) and the broker's ``brokerIP1``;
* ``minInvisibleTimeMillsForRecv`` is 10 s by default: a ReceiveMessage asking a shorter invisibility is refused
  (ILLEGAL_INVISIBLE_TIME). The suite's revive tests pop with 2-8 s, so the peer allows
  :data:`MIN_INVISIBLE_MS`: the broker's POP itself has no such floor;
* ``grpcClientConsumerMinLongPollingTimeoutMillis`` is 5 s by default: every ReceiveMessage is held at least that
  long, so a pop with poll time 0 could not be answered at once. The peer sets it to 0 (the broker's POP answers
  a zero poll time at once), and its 20 s maximum to :data:`MAX_LONG_POLLING_MS`, the longest hold the suite asks;
* the proxy's own remoting port (8080 by default) and gRPC port (8081) are chosen free.
"""

from __future__ import annotations

import json
import socket
import time

from conformance.peers import PeerError
from conformance.peers.maven import proxy_classpath
from conformance.peers.rocketmq import (
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    PortRace,
    RocketMQPeer,
    _Jvm,
    free_port,
    port_free,
)

#: The main class of the proxy; LOCAL mode (``-pm local``) builds the broker from ``-bc`` inside it.
PROXY_MAIN = "org.apache.rocketmq.proxy.ProxyStartup"
#: What ProxyStartup prints on stdout once its broker, gRPC and remoting servers started.
PROXY_STARTED = "rocketmq-proxy startup successfully"
#: The shortest invisibility a ReceiveMessage may ask (ProxyConfig.minInvisibleTimeMillsForRecv, 10 s by default).
MIN_INVISIBLE_MS = 1_000
#: The shortest hold of a ReceiveMessage (grpcClientConsumerMinLongPollingTimeoutMillis, 5 s by default).
MIN_LONG_POLLING_MS = 0
#: The longest hold of a ReceiveMessage (grpcClientConsumerMaxLongPollingTimeoutMillis, 20 s by default): the suite
#: holds pops up to 60 s (POLLING_FULL's), as the broker's POP allows.
MAX_LONG_POLLING_MS = 60_000
#: ``mqtck broker`` flags giving the reference's gRPC front these same receive limits: ``mqtck conform --target
#: grpc`` and ``mqtck diff --against grpc`` judge the reference under the settings the proxy runs with, not under
#: the proxy's defaults (reference/net/grpc/limits.py).
REFERENCE_FLAGS = ("--grpc-min-invisible-ms", str(MIN_INVISIBLE_MS), "--grpc-min-hold-ms", str(MIN_LONG_POLLING_MS),
                   "--grpc-max-hold-ms", str(MAX_LONG_POLLING_MS))
#: The proxy's config file and cluster name (its ``rocketMQClusterName`` must be the broker's cluster).
PROXY_CONFIG = "rmq-proxy.json"
CLUSTER = "mqtck"


class ProxyPeer(RocketMQPeer):
    """Name server + the RocketMQ 5 proxy in LOCAL mode (its broker inside) on loopback.

    ``target`` is ``grpc://127.0.0.1:GRPC?remoting=127.0.0.1:NAMESRV``: the proxy's MessagingService, and the
    name server through which the broker inside is reached for what v5 has no RPC for."""

    grpc_port = 0
    proxy_remoting_port = 0

    @property
    def target(self) -> str:
        return f"grpc://{self.host}:{self.grpc_port}?remoting={self.host}:{self.namesrv_port}"

    def _jars(self) -> list[str]:
        return proxy_classpath(self.info.version)

    def _write_config(self) -> None:
        super()._write_config()
        assert self.dir is not None
        if not self.grpc_port:
            self.grpc_port = free_port(self.host)
            self.proxy_remoting_port = free_port(self.host)
            if len({self.grpc_port, self.proxy_remoting_port, self.broker_port, self.namesrv_port}) < 4:
                raise PortRace("the free ports chosen for the proxy collide")
        settings = {
            "rocketMQClusterName": CLUSTER, "proxyMode": "LOCAL", "namesrvAddr": f"{self.host}:{self.namesrv_port}",
            "localServeAddr": self.host, "grpcServerPort": self.grpc_port,
            "remotingListenPort": self.proxy_remoting_port,
            "minInvisibleTimeMillsForRecv": MIN_INVISIBLE_MS,
            "grpcClientConsumerMinLongPollingTimeoutMillis": MIN_LONG_POLLING_MS,
            "grpcClientConsumerMaxLongPollingTimeoutMillis": MAX_LONG_POLLING_MS,
        }
        (self.dir / PROXY_CONFIG).write_text(json.dumps(settings, indent=2))

    def _choose_ports_again(self) -> None:
        super()._choose_ports_again()
        self.grpc_port = self.proxy_remoting_port = 0  # chosen again by _write_config

    def _launch_broker(self) -> _Jvm:
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while not all(port_free(self.host, p) for p in (self.grpc_port, self.proxy_remoting_port)):
            if time.monotonic() > deadline:
                raise PeerError(f"{self.info.name}: the proxy's ports {self.grpc_port}/{self.proxy_remoting_port} "
                                "stay busy")
            time.sleep(0.1)
        return self._launch(PROXY_MAIN, "-pm", "local", "-bc", "broker.conf", "-pc", PROXY_CONFIG,
                            marker=PROXY_STARTED)

    def _await_registered(self) -> None:
        """The broker inside registered with the name server, and the proxy's gRPC port accepts connections (it
        starts after the broker)."""
        super()._await_registered()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with socket.socket() as s:
                s.settimeout(1.0)
                if s.connect_ex((self.host, self.grpc_port)) == 0:
                    return
            time.sleep(0.2)
        raise PeerError(f"{self.info.name}: the proxy's gRPC port {self.grpc_port} never opened within "
                        f"{START_TIMEOUT_S:.0f} s")
