"""END_TRANSACTION (37) and the broker's CHECK_TRANSACTION_STATE (39) on the remoting wire.

The rules are the core's (:mod:`reference.broker.transaction`); this module adds what the wire needs:

* **Producers by group.** A check goes to a producer of the half's group over that producer's own connection
  (upstream's ProducerManager, filled by heartbeats' ``producerDataSet``), so the front remembers, per producer
  group, the connections whose heartbeats named it, and forgets a connection when it closes.
* **END_TRANSACTION** (EndTransactionRequestHeader: ``producerGroup``, ``tranStateTableOffset``,
  ``commitLogOffset``, ``commitOrRollback``, ``fromTransactionCheck``): UNKNOWN (0) is not answered, as
  upstream returns null; COMMIT (8) and ROLLBACK (12) call the core; a refusal is SYSTEM_ERROR with upstream's
  remark. The Java client sends it oneway, so the answer matters only to a tool that waits for it.
* **CHECK_TRANSACTION_STATE**, oneway, broker to producer: CheckTransactionStateRequestHeader
  (``tranStateTableOffset``, ``commitLogOffset``, ``msgId``, ``transactionId``, ``offsetMsgId``) and the half as
  one stored record in its real topic, which the client's TransactionListener.checkLocalTransaction sees.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

from reference.broker.broker import Broker
from reference.broker.transaction import TRANSACTION_NOT_TYPE
from reference.net.remoting.command import ONEWAY_FLAG, RemotingCommand, RequestCode
from reference.net.remoting.connection import RemotingConnection
from reference.net.remoting.fields import field_int, field_str
from reference.net.remoting.message_codec import encode_stored_record
from reference.net.remoting.producers import ProducerTable
from reference.rules.codes import ResponseCode
from reference.store.message import UNIQ_KEY, StoredMessage, offset_msg_id

log = logging.getLogger("mqtck.remoting")


class TransactionFront:
    """The producers a check can reach, and the two transaction request codes."""

    def __init__(self, broker: Broker, store_host: bytes, producers: ProducerTable) -> None:
        self.broker = broker
        self.store_host = store_host
        self.producers = producers
        self._opaque = itertools.count(1_000_000)
        broker.transactions.checker = self.check_transaction_state

    def table(self) -> dict[int, Any]:
        return {RequestCode.END_TRANSACTION: self.end_transaction}

    # -- END_TRANSACTION -----------------------------------------------------------------------
    def end_transaction(self, conn: RemotingConnection, cmd: RemotingCommand) -> RemotingCommand | None:
        kind = field_int(cmd, "commitOrRollback")
        if kind == TRANSACTION_NOT_TYPE:
            return None  # unknown: the half waits for the check (upstream answers nothing)
        result = self.broker.transactions.end(
            field_str(cmd, "producerGroup"), field_int(cmd, "commitLogOffset"), field_int(cmd, "tranStateTableOffset"),
            kind,
        )
        if not result.ok:
            log.info("remoting %s: END_TRANSACTION refused: %s", conn.key, result.remark)
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, result.remark)
        return cmd.make_response()

    # -- CHECK_TRANSACTION_STATE ---------------------------------------------------------------
    def check_transaction_state(self, group: str, half: StoredMessage) -> bool:
        """Ask the first live producer of ``group`` about ``half``; whether there was one to ask."""
        live = self.producers.connections(group)
        if not live:
            return False
        unique = half.properties.get(UNIQ_KEY, half.unique_id)
        live[0].send(RemotingCommand(
            int(RequestCode.CHECK_TRANSACTION_STATE), opaque=next(self._opaque), flag=ONEWAY_FLAG,
            ext_fields={
                "tranStateTableOffset": str(half.queue_offset), "commitLogOffset": str(half.commit_log_offset),
                "msgId": unique, "transactionId": unique,
                "offsetMsgId": offset_msg_id(self.store_host, half.commit_log_offset),
            },
            body=encode_stored_record(half, self.store_host),
        ))
        return True
