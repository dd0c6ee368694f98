"""More fronts on one broker: what a serving loop starts beside its own wire, sharing its broker core.

Why: the real RocketMQ 5 proxy in LOCAL mode serves gRPC beside the broker's remoting port, on one store; the
``grpc://`` conformance target does its admin over remoting and its POP over gRPC. A server that runs one loop
(``reference.net.remoting.server.serve_remoting``) takes a list of :data:`FrontStarter` and starts each once its
broker is open, on the same loop, so the single-threaded core is only ever driven from that loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from reference.broker.host import BrokerHost


class ServedFront(Protocol):
    """A running front: the URL its serving line names, how many held requests it answered late (a simulated
    clock's advance stops at the instant one is, as for the remoting front's), and how to stop it."""

    @property
    def url(self) -> str: ...

    @property
    def late_answers(self) -> int: ...

    def broker_restarted(self) -> None:
        """The broker was replaced (a control-channel restart): end what was held on the old one."""

    async def close(self) -> None: ...


#: Starts a front on the running loop over an open broker host.
FrontStarter = Callable[[BrokerHost], Awaitable[ServedFront]]
