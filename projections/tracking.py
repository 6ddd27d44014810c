"""Each projection's position in the ledger, kept beside its rows.

A position is the ``eventsourcing`` notion of tracking: the notification id of the last
ledger event a projection shows (0: none yet). It moves only by :func:`advance`, inside the
transaction that writes the rows those events produced, and only from the value the writer
last read: if another process moved it meanwhile, nothing is written and the writer starts
again from the stored position. That is what makes processing exactly-once, even with two
runners on one projection or a runner killed mid-batch.

:class:`ProjectionTracking` is the library's :class:`~eventsourcing.persistence.TrackingRecorder`
over that table, so ``wait()`` (read your own writes) is the library's.
"""

from __future__ import annotations

from eventsourcing.persistence import Tracking, TrackingRecorder
from sqlalchemy import Connection, Engine, bindparam, select, update

from allocation_ledger.projections import tables
from allocation_ledger.projections.store import upsert_dialect

_t = tables.tracking.c
#: Built once, run with its values (a statement built per batch left a reference cycle
#: behind, which a catch-up, with the collector paused, kept until its end).
_ADVANCE = (
    update(tables.tracking)
    .where(_t.projection == bindparam("name"), _t.notification_id == bindparam("old"))
    .values(notification_id=bindparam("new"), chain_hash=bindparam("hashed"))
)


def ensure(engine: Engine, projection: str, application_name: str) -> None:
    """Give ``projection`` a position (0) if it has none."""
    statement = upsert_dialect(engine).insert(tables.tracking).values(
        projection=projection, application_name=application_name, notification_id=0
    ).on_conflict_do_nothing()
    with engine.begin() as conn:
        conn.execute(statement)


def position(conn: Connection, projection: str) -> int:
    """The stored position of ``projection`` (0 if it has none)."""
    found = conn.execute(
        select(_t.notification_id).where(_t.projection == projection)
    ).scalar_one_or_none()
    return int(found or 0)


def advance(conn: Connection, projection: str, old: int, new: int,
            chain_hash: bytes | None = None) -> bool:
    """Move the position from ``old`` to ``new`` (where the ledger's chain hash is
    ``chain_hash``); ``False`` if it is no longer ``old``.

    Run it first in the batch's transaction: the update also takes the row's lock
    (PostgreSQL) or the database's write lock (SQLite), so a racing runner waits, then sees
    the position it expected gone.
    """
    result = conn.execute(_ADVANCE, {"name": projection, "old": old, "new": new,
                                     "hashed": chain_hash})
    return result.rowcount == 1


def followed(conn: Connection, projection: str) -> tuple[int, bytes | None]:
    """The stored position of ``projection`` and the chain hash recorded with it."""
    found = conn.execute(select(_t.notification_id, _t.chain_hash)
                         .where(_t.projection == projection)).one_or_none()
    return (int(found[0]), found[1]) if found else (0, None)


def reset(conn: Connection, projection: str) -> None:
    """Set the position back to 0 (the caller deletes the rows in the same transaction)."""
    conn.execute(
        update(tables.tracking).where(_t.projection == projection)
        .values(notification_id=0, chain_hash=None)
    )


class ProjectionTracking(TrackingRecorder):
    """The ``eventsourcing`` tracking recorder of one projection, over ``proj_tracking``."""

    def __init__(self, engine: Engine, projection: str) -> None:
        self.engine = engine
        self.projection = projection

    def insert_tracking(self, tracking: Tracking) -> None:
        """Record a position on its own (the runner advances it with its rows instead)."""
        with self.engine.begin() as conn:
            current = position(conn, self.projection)
            if tracking.notification_id > current:
                advance(conn, self.projection, current, tracking.notification_id)

    def max_tracking_id(self, application_name: str) -> int | None:
        """The projection's position in ``application_name``'s ledger (``None``: none)."""
        with self.engine.connect() as conn:
            found = conn.execute(
                select(_t.notification_id).where(
                    _t.projection == self.projection, _t.application_name == application_name
                )
            ).scalar_one_or_none()
        return int(found) if found else None
