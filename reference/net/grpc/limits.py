"""The gRPC front's receive limits: broker settings, defaulting to the RocketMQ 5 proxy's own defaults.

The proxy refuses a ReceiveMessage whose invisibility is under a floor and holds every receive between a shortest
and a longest long poll; a deployment tunes all three in its proxy config. The reference front takes the same
three as settings (``mqtck broker --grpc-min-invisible-ms / --grpc-min-hold-ms / --grpc-max-hold-ms``), so that it
can be judged under exactly the settings a real proxy is run with (conformance/peers/rocketmq_proxy.py), rather
than under defaults the suite's short invisible times and zero poll times cannot pass.
"""

from __future__ import annotations

from dataclasses import dataclass

#: ProxyConfig.minInvisibleTimeMillsForRecv: the shortest invisibility a ReceiveMessage may ask (10 s).
MIN_INVISIBLE_MS = 10_000
#: ProxyConfig.maxInvisibleTimeMills: the longest (12 h).
MAX_INVISIBLE_MS = 12 * 3_600_000
#: ProxyConfig.grpcClientConsumerMinLongPollingTimeoutMillis: the shortest hold of a receive (5 s).
MIN_HOLD_MS = 5_000
#: ProxyConfig.grpcClientConsumerMaxLongPollingTimeoutMillis: the longest hold of a receive (20 s).
MAX_HOLD_MS = 20_000


@dataclass(frozen=True)
class ReceiveLimits:
    """What a ReceiveMessage may ask and how long it is held; each field is the proxy's config key of the same
    meaning (module constants)."""

    #: minInvisibleTimeMillsForRecv
    min_invisible_ms: int = MIN_INVISIBLE_MS
    #: maxInvisibleTimeMills
    max_invisible_ms: int = MAX_INVISIBLE_MS
    #: grpcClientConsumerMinLongPollingTimeoutMillis
    min_hold_ms: int = MIN_HOLD_MS
    #: grpcClientConsumerMaxLongPollingTimeoutMillis
    max_hold_ms: int = MAX_HOLD_MS

    def __post_init__(self) -> None:
        """A setting the front could not honour is refused when the server starts, naming it."""
        for name in ("min_invisible_ms", "max_invisible_ms", "min_hold_ms", "max_hold_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"ReceiveLimits.{name}: must not be negative, got {getattr(self, name)}")
        if self.min_invisible_ms > self.max_invisible_ms:
            raise ValueError(f"ReceiveLimits.min_invisible_ms: must not exceed max_invisible_ms "
                             f"({self.max_invisible_ms}), got {self.min_invisible_ms}")
        if self.min_hold_ms > self.max_hold_ms:
            raise ValueError(f"ReceiveLimits.min_hold_ms: must not exceed max_hold_ms ({self.max_hold_ms}), "
                             f"got {self.min_hold_ms}")


#: The proxy's defaults: the front's limits unless a deployment (or ``mqtck broker``) sets others.
PROXY_DEFAULTS = ReceiveLimits()
