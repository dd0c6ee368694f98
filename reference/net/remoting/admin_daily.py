"""The broker-port requests of mqadmin's daily commands (issue 41), as one table appended to the broker's.

The handlers live by domain (:mod:`admin_stats` reads, :mod:`admin_groups` changes groups and offsets,
:mod:`query_message` finds messages by key); this module builds them over the running broker and adds what
they need from the broker's own table: the producers its heartbeats registered, and a stored send counted toward
``brokerStatus``'s ``msgPutTotalTodayNow``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from reference.broker.broker import Broker
from reference.net.remoting.admin_groups import AdminGroupHandlers
from reference.net.remoting.admin_stats import AdminStatsHandlers, BrokerStats
from reference.net.remoting.command import RemotingCommand, RequestCode
from reference.net.remoting.connection import RemotingConnection
from reference.net.remoting.producers import ProducerTable
from reference.net.remoting.query_message import QueryMessageHandler
from reference.rules.codes import ResponseCode

log = logging.getLogger("mqtck.remoting")
Handler = Callable[[RemotingConnection, RemotingCommand], RemotingCommand | None]
_SENDS = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)


def daily_admin_table(broker: Callable[[], Broker], store_host: bytes, producers: ProducerTable,
                      base: dict[int, Handler]) -> dict[int, Handler]:
    """The admin entries over ``broker()`` (read per request), plus the sends of ``base`` wrapped to count."""
    stats = BrokerStats(broker().clock.now_ms())
    table: dict[int, Handler] = {**AdminStatsHandlers(broker, stats).table(),
                                 **AdminGroupHandlers(broker, producers).table(),
                                 RequestCode.QUERY_MESSAGE: QueryMessageHandler(broker, store_host)}
    for code in _SENDS:
        table[code] = _counted(base[code], stats)
    return table


def _counted(send: Handler, stats: BrokerStats) -> Handler:
    def counted(conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand | None:
        answer = send(conn, cmd)
        if answer is not None and answer.code == ResponseCode.SUCCESS:
            stats.put_total += max(1, answer.ext_fields.get("msgId", "").count(",") + 1)
        return answer
    return counted
