"""Where one stored event sits in the ledger: its notification id (position).

The library reads events by stream or by position, not the position of a stream's event;
looking up a command wants it, so each store is asked in its own terms.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.popo import POPOApplicationRecorder
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.sqlite import SQLiteApplicationRecorder
from psycopg.sql import SQL, Identifier


def position_of(recorder: Any, stream: UUID, version: int) -> int | None:
    """The notification id of version ``version`` of ``stream``, ``None`` if not stored."""
    if isinstance(recorder, PostgresApplicationRecorder):
        statement = SQL("SELECT notification_id FROM {0}.{1} WHERE originator_id = %s AND "
                        "originator_version = %s").format(
            Identifier(recorder.datastore.schema), Identifier(recorder.events_table_name))
        with recorder.datastore.get_connection() as conn:
            row = conn.execute(statement, (stream, version)).fetchone()
        return None if row is None else int(row["notification_id"])
    if isinstance(recorder, SQLiteApplicationRecorder):
        with recorder.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT rowid FROM {recorder.events_table_name} "
                      "WHERE originator_id = ? AND originator_version = ?",
                      (stream.hex, version))
            found = c.fetchone()
        return None if found is None else int(found[0])
    if isinstance(recorder, POPOApplicationRecorder):
        # the in-memory store (tests, demos) keeps no index public: its notifications are
        # read in pages, which are in memory already
        start: int | None = None
        while page := recorder.select_notifications(start, 1000,
                                                    inclusive_of_start=start is None):
            for n in page:
                if n.originator_id == stream and n.originator_version == version:
                    return n.id
            start = page[-1].id
        return None
    raise TypeError(f"no position look-up for {type(recorder).__name__}")
