"""The PostgreSQL append in one round trip, and reads of the ledger in binary.

The library's recorder appends with three round trips (entering the transaction, after the
insert, at commit) and encodes the events as an array of composite values row by row in
Python. This subclass queues the very same statements (BEGIN, the lock timeout, the same
``LOCK TABLE ... IN EXCLUSIVE MODE`` that keeps notification ids committed in order, the
same ``NOTIFY`` the projections listen for, the insert, COMMIT) in one pipeline and syncs
once, passing four plain arrays that psycopg encodes in C. The store's unique
(stream, version) key refuses a conflicting append exactly as before.

Reading notifications (the projections' catch-up, the audit's replay) asks for the same rows
as the library, in PostgreSQL's binary format as plain tuples: the library's text rows, as
dicts, cost three times as much per event to turn into Python values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from eventsourcing.persistence import (
    InterfaceError,
    Notification,
    OperationalError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.utils import retry
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Composed, Identifier


class OneTripApplicationRecorder(PostgresApplicationRecorder):
    """A ``PostgresApplicationRecorder`` whose append is one round trip."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._insert_arrays = SQL(
            "INSERT INTO {0}.{1} (originator_id, originator_version, topic, state) "
            "SELECT * FROM unnest(%s::uuid[], %s::bigint[], %s::text[], %s::bytea[]) "
            "RETURNING notification_id"
        ).format(Identifier(self.datastore.schema), Identifier(self.events_table_name))
        self._notify = SQL("NOTIFY {0}").format(Identifier(self.channel_name))
        self._select = SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state "
            "FROM {0}.{1}"
        ).format(Identifier(self.datastore.schema), Identifier(self.events_table_name))

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """Append ``stored_events`` atomically; their notification ids."""
        if not stored_events:
            return []
        params = (
            [e.originator_id for e in stored_events],
            [e.originator_version for e in stored_events],
            [e.topic for e in stored_events],
            [e.state for e in stored_events],
        )
        with self.datastore.get_connection() as conn:
            insert = conn.cursor()
            try:
                with conn.pipeline(), conn.cursor() as curs:
                    curs.execute("BEGIN")
                    for statement in self.lock_table_statements:
                        curs.execute(statement, prepare=True)
                    curs.execute(self._notify)
                    insert.execute(self._insert_arrays, params, prepare=True)
                    curs.execute("COMMIT")
            except psycopg.Error:
                # the datastore turns psycopg's errors into the library's (IntegrityError...)
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.execute("ROLLBACK")
                raise
            return [row["notification_id"] for row in insert.fetchall()]

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        """Up to ``limit`` notifications from ``start`` (to ``stop``, of ``topics``), in
        order: the library's query and result, read in binary."""
        where: list[SQL] = []
        params: list[Any] = []
        if start is not None:
            where.append(SQL("notification_id>=%s" if inclusive_of_start
                             else "notification_id>%s"))
            params.append(start)
        if stop is not None:
            where.append(SQL("notification_id<=%s"))
            params.append(stop)
        if topics:
            where.append(SQL("topic = ANY(%s)"))
            params.append(list(topics))
        statement: Composed = self._select
        if where:
            statement += SQL(" WHERE ") + SQL(" AND ").join(where)
        statement += SQL(" ORDER BY notification_id LIMIT %s")
        params.append(limit)
        with self.datastore.get_connection() as conn, conn.cursor(
            binary=True, row_factory=tuple_row
        ) as curs:
            curs.execute(statement, params, prepare=True)
            return [_notification(row) for row in curs.fetchall()]


def _notification(row: tuple[int, Any, int, str, bytes]) -> Notification:
    """``Notification(id=..., ...)`` without the frozen dataclass's per-field
    ``object.__setattr__`` (a third of the cost of reading a row)."""
    notification = object.__new__(Notification)
    object.__setattr__(notification, "__dict__", {
        "originator_id": row[1], "originator_version": row[2], "topic": row[3],
        "state": row[4], "id": row[0]})
    return notification
