"""The producers the broker knows, from heartbeats: the core keeps consumers only.

Two requests need them: a transaction's check-back (CHECK_TRANSACTION_STATE goes to one live connection of the
half message's producer group) and mqadmin's ``producerConnection`` (GET_PRODUCER_CONNECTION_LIST). One table,
fed by every heartbeat's ``producerDataSet`` and emptied of a connection when it closes, serves both.
"""

from __future__ import annotations

from typing import Any

from reference.net.remoting.connection import RemotingConnection


class ProducerTable:
    """producer group -> {connection: (client id, language, version)}, in heartbeat order."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[RemotingConnection, tuple[str, str, int]]] = {}

    def heartbeat(self, conn: RemotingConnection, doc: dict[str, Any], language: str, version: int) -> None:
        """Remember ``conn`` under every producer group its heartbeat names (CLIENT_INNER_PRODUCER too: harmless)."""
        for data in doc.get("producerDataSet") or []:
            group = str(data.get("groupName", "")) if isinstance(data, dict) else ""
            if group:
                self._groups.setdefault(group, {})[conn] = (str(doc.get("clientID", "")), language, version)

    def channel_closed(self, conn: RemotingConnection) -> None:
        for group in list(self._groups):
            self._groups[group].pop(conn, None)
            if not self._groups[group]:
                del self._groups[group]

    def connections(self, group: str) -> list[RemotingConnection]:
        """The group's open connections, the earliest registered first."""
        return [c for c in self._groups.get(group, {}) if not c.closed]

    def online(self, group: str) -> list[dict[str, Any]]:
        """The group's open connections as mqadmin's ``producerConnection`` lists them."""
        members = self._groups.get(group, {})
        return [{"clientId": cid, "clientAddr": f"{c.peer[0]}:{c.peer[1]}", "language": lang, "version": ver}
                for c, (cid, lang, ver) in members.items() if not c.closed]
