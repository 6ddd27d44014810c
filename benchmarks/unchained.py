"""The ledger's append without the hash chain, for the benchmark only: the cost of the
chain is the chained claim rate over this one's, measured in the same run.

On SQLite the twin appends as the library does (no head read, no link); on PostgreSQL it
calls a function with the same table lock, NOTIFY and insert as the chained append, less
the head read and the links (the append from before the chain). Its store is a scratch
store of its own, so no chained ledger ever holds an unchained event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteCursor
from psycopg.sql import SQL, Identifier

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.adapters.postgres import OneTripApplicationRecorder
from allocation_ledger.adapters.sqlite import QueuedSQLiteApplicationRecorder
from allocation_ledger.application.ledger import Ledger
from allocation_ledger.config import parse_url

_BODY = """
BEGIN
  PERFORM set_config('lock_timeout', lock_timeout, true);
  LOCK TABLE {table} IN EXCLUSIVE MODE;
  NOTIFY {channel};
  RETURN QUERY INSERT INTO {table} (originator_id, originator_version, topic, state)
  SELECT * FROM unnest(ids, versions, topics, {states}) RETURNING notification_id;
END
"""
_STATES = {"bytea[]": "states",
           "json": "ARRAY(SELECT convert_to(s.state::text, 'UTF8') FROM "
                   "json_array_elements(states) WITH ORDINALITY AS s(state, n) ORDER BY n)"}


class UnchainedSQLiteRecorder(QueuedSQLiteApplicationRecorder):
    """The queued SQLite append, without the chain."""

    def insert_chained(self, c: SQLiteCursor,
                       stored_events: Sequence[StoredEvent]) -> Sequence[int]:
        """The library's insert, one row at a time (no head read, no link)."""
        returning = []
        for s in stored_events:
            c.execute(f"INSERT INTO {self.events_table_name} (originator_id, "
                      "originator_version, topic, state) VALUES (?, ?, ?, ?)",
                      (s.originator_id.hex if isinstance(s.originator_id, UUID)
                       else s.originator_id, s.originator_version, s.topic, s.state))
            returning.append(c.lastrowid)
        return returning


class UnchainedPostgresRecorder(OneTripApplicationRecorder):
    """The one-statement PostgreSQL append, without the chain."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        function = Identifier(f"{self.names.function}_unchained")
        table = self.names.qualified(self.names.events)
        for states, rows in _STATES.items():
            self.sql_create_statements.append(SQL(
                "CREATE OR REPLACE FUNCTION {schema}.{function}(ids uuid[], versions bigint[], "
                "topics text[], states {states}, lock_timeout text, inner_key bytea, "
                "outer_key bytea) RETURNS SETOF bigint LANGUAGE plpgsql AS $BODY$ {body} "
                "$BODY$").format(schema=Identifier(self.names.schema), function=function,
                                 states=SQL(states), body=SQL(_BODY).format(
                    table=table, channel=Identifier(self.channel_name), states=SQL(rows))))
        call = ("SELECT * FROM {0}.{1}(%s::uuid[], %s::bigint[], %s::text[], %s::{2}, %s, "
                "%s::bytea, %s::bytea)")
        schema = Identifier(self.names.schema)
        self._append = SQL(call).format(schema, function, SQL("bytea[]"))
        self._append_json = SQL(call).format(schema, function, SQL("json"))


def open_unchained(url: str) -> Ledger:
    """A ledger over the (fresh, scratch) store ``url`` whose appends keep no chain."""
    config = parse_url(url)
    recorder = (UnchainedSQLiteRecorder if config.kind == "sqlite"
                else UnchainedPostgresRecorder)
    env = {**config.env,
           "APPLICATION_RECORDER_TOPIC": f"{recorder.__module__}:{recorder.__qualname__}"}
    return Ledger(EventStore(env))
