"""PostgreSQL connections that find the primary among several hosts.

libpq takes a list of hosts and, with ``target_session_attrs=read-write``, connects only to
one that accepts writes: after a failover the ledger's next connection reaches the promoted
standby. The library's factory passes no such setting to its connection pool; this factory
adds it before the pool opens (a store URL's ``target_session_attrs``, see ``config``).
"""

from __future__ import annotations

from typing import Any

from eventsourcing.postgres import PostgresFactory

#: the setting (in the store's environment) this factory passes on to libpq
SESSION_ATTRS_KEY = "LEDGER_TARGET_SESSION_ATTRS"


class FailoverPostgresFactory(PostgresFactory):
    """The library's PostgreSQL factory, with libpq's ``target_session_attrs``."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        attrs = self.env.get(SESSION_ATTRS_KEY)
        kwargs = self.datastore.pool.kwargs
        if attrs and isinstance(kwargs, dict):  # the pool is not open yet
            kwargs["target_session_attrs"] = attrs
