"""A projection's row groups: the rows it has read or changed, written back in batches.

Every read model table is read and written in *groups*: all the rows that share the value of
one column, the provider, consumer or migration they describe. A handler reads the group of
its event's stream, computes the group's new rows and puts them back; nothing reaches the
database until the runner takes the changes (:meth:`RowGroups.take`, :class:`Changes`) and
writes them with the projection's new position in one transaction. A group is replaced whole
(delete, then insert), so a batch of thousands of events costs one delete and one insert per
group it touched, however many events it held.

The cache outlives a commit (after a commit it is what the database holds), so a follower
never re-reads what it wrote. The groups put longest ago are let go when it grows too large (a
rebuild of any length runs in bounded memory), and all of it on any failure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, TypeVar
from uuid import UUID

from sqlalchemy import Connection, Delete, Select, Table, bindparam, delete, select

from allocation_ledger.projections import tables
from allocation_ledger.projections.store import insert_rows

Row = dict[str, Any]
T = TypeVar("T")
#: How many keys go into one ``IN (...)`` list.
CHUNK = 500


def _in_keys(column: Any) -> Any:
    """``column IN (:keys)``, the keys given when the statement runs.

    Every statement here is built once and run with its values as parameters: one built
    per call leaves a reference cycle (SQLAlchemy's bound parameters) that holds its values,
    the keys of a whole chunk, and a catch-up pauses the collector that would free it, so
    a rebuild's memory grew with every page it read and every batch it wrote.
    """
    return column.in_(bindparam("keys", expanding=True))


_STREAM_NAMES = select(tables.streams.c.stream_id, tables.streams.c.uuid).where(
    tables.streams.c.projection == bindparam("projection"),
    _in_keys(tables.streams.c.stream_id),
)


@dataclass(frozen=True)
class GroupTable:
    """A read model table and the column that groups its rows."""

    table: Table
    group_column: str
    name: str = field(init=False)  # the table's (a plain attribute: handlers read it a lot)
    select_groups: Select[Any] = field(init=False, repr=False, compare=False)
    delete_groups: Delete = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        column = self.table.c[self.group_column]
        object.__setattr__(self, "name", self.table.name)
        object.__setattr__(self, "select_groups", select(self.table).where(_in_keys(column)))
        object.__setattr__(self, "delete_groups", delete(self.table).where(_in_keys(column)))


class RowGroups:
    """The rows of one projection's tables that it has loaded or changed, by group.

    ``complete`` says the cache holds everything the database holds (a projection rebuilt
    from zero): a group it lacks is empty, and nothing is ever read back.
    """

    def __init__(self, projection: str, groups: Sequence[GroupTable], *, complete: bool):
        self.projection = projection
        self.groups = tuple(groups)
        self.complete = complete
        self._rows: dict[tuple[str, str], tuple[Row, ...]] = {}
        self._stored: set[tuple[str, str]] = set()  # groups with rows in the database
        self._dirty: set[tuple[str, str]] = set()
        # stream names, keyed by the stream id's ``int`` (cheaper to hash and compare than
        # the UUID: every event looks its stream up)
        self._names: dict[int, str] = {}
        self._new_names: dict[int, str] = {}

    # -- for handlers ------------------------------------------------------------------

    def rows(self, group: GroupTable, key: str) -> tuple[Row, ...]:
        """The rows of one group (empty if it has none)."""
        return self._rows.get((group.name, key), ())

    def put(self, group: GroupTable, key: str, rows: Iterable[Row]) -> None:
        """Replace the rows of one group (new row dicts: a row once put is never changed,
        since a batch being written reads it from another thread)."""
        cached = self._rows
        found = (group.name, key)
        cached.pop(found, None)  # to the end: the cache is in the order groups were put
        cached[found] = tuple(rows)
        self._dirty.add(found)

    def name(self, stream_id: UUID) -> str:
        """The provider, consumer or migration UUID of an event stream."""
        return self._names[stream_id.int]

    def name_stream(self, stream_id: UUID, uuid: str) -> None:
        """Remember whose stream ``stream_id`` is (from the stream's first event)."""
        self._names[stream_id.int] = uuid
        self._new_names[stream_id.int] = uuid

    # -- for the runner ----------------------------------------------------------------

    @property
    def size(self) -> int:
        """How many groups are cached."""
        return len(self._rows)

    def needs_read(self, stream_ids: Iterable[UUID]) -> bool:
        """True when :meth:`prefetch` of these streams would read the database."""
        if self.complete:
            return False
        for stream in stream_ids:
            name = self._names.get(stream.int)
            if name is None or any((g.name, name) not in self._rows for g in self.groups):
                return True
        return False

    def prefetch(self, conn: Connection, stream_ids: Iterable[UUID]) -> None:
        """Load the names and the groups of these streams, unless already cached."""
        if self.complete:
            return
        wanted = {s.int for s in stream_ids}
        for chunk in _chunks(sorted(f"{s:032x}" for s in wanted - self._names.keys())):
            found = conn.execute(_STREAM_NAMES, {"projection": self.projection, "keys": chunk})
            self._names.update({int(row.stream_id, 16): row.uuid for row in found})
        keys = sorted({self._names[s] for s in wanted if s in self._names})
        for group in self.groups:
            self._load(conn, group, [k for k in keys if (group.name, k) not in self._rows])

    def _load(self, conn: Connection, group: GroupTable, keys: list[str]) -> None:
        for chunk in _chunks(keys):
            found: dict[str, list[Row]] = defaultdict(list)
            for row in conn.execute(group.select_groups, {"keys": chunk}).mappings():
                found[row[group.group_column]].append(dict(row))
            for key in chunk:
                self._rows[(group.name, key)] = tuple(found.get(key, ()))
                if key in found:
                    self._stored.add((group.name, key))

    def take(self) -> Changes:
        """Everything changed since the last ``take``, to write in one transaction; from
        now on the cache treats it as written (if the write fails, drop the cache)."""
        changes = Changes(self.projection, sorted(self._new_names.items()))
        for group in self.groups:
            keys = sorted(k for (name, k) in self._dirty if name == group.name)
            stale = [k for k in keys if (group.name, k) in self._stored]
            rows = [row for k in keys for row in self._rows[(group.name, k)]]
            changes.groups.append((group, stale, rows))
        for key in self._dirty:
            if self._rows[key]:
                self._stored.add(key)
            else:
                self._stored.discard(key)
        self._dirty.clear()
        self._new_names.clear()
        return changes

    def trim(self, max_groups: int) -> None:
        """When the cache holds more than ``max_groups`` groups or stream names, let go of
        the groups put longest ago until about half that many are left, and of the names
        of streams none of whose groups is left: memory stays bounded however long the
        ledger, and what is let go is read back from the tables when an event names it
        again (call it before a prefetch, which reads back what the events to come need).

        The groups still changing stay (a host's, changed by every claim on it); those of
        streams that ended go (a consumer's, once it is deleted). Let go by age of their
        first put, every trim dropped the hosts' groups, and the next page read them back.
        """
        if len(self._rows) <= max_groups and len(self._names) <= max_groups:
            return
        keep = max_groups // 2
        for key in list(islice(self._rows, max(len(self._rows) - keep, 0))):
            if key not in self._dirty:  # unwritten changes stay until taken
                del self._rows[key]
                self._stored.discard(key)
        kept = {key for _, key in self._rows}
        for stream in [s for s, uuid in self._names.items() if uuid not in kept]:
            if stream not in self._new_names:
                del self._names[stream]
        for stream in list(islice(self._names, max(len(self._names) - max_groups, 0))):
            if stream not in self._new_names:  # more names than groups: the oldest go
                del self._names[stream]
        self.complete = False

    def forget(self) -> None:
        """Drop the cache (after a failed commit, or to bound memory); reads come back."""
        self._rows.clear()
        self._stored.clear()
        self._dirty.clear()
        self._names.clear()
        self._new_names.clear()
        self.complete = False


@dataclass
class Changes:
    """What one projection changed in a batch: the stream names it learnt, and per group
    table the groups whose stored rows go (``stale``) and the rows that replace them.

    It holds the very row objects of the cache, which handlers never change once put, so
    it can be written from another thread while the runner applies the next events.
    """

    projection: str
    names: list[tuple[int, str]]
    groups: list[tuple[GroupTable, list[str], list[Row]]] = field(default_factory=list)

    def write(self, conn: Connection) -> int:
        """Delete the stale groups and insert the new rows; the number of rows written."""
        written = 0
        if self.names:
            insert_rows(conn, tables.streams, [
                {"projection": self.projection, "stream_id": f"{s:032x}", "uuid": u}
                for s, u in self.names
            ])
            written += len(self.names)
        for group, stale, rows in self.groups:
            for chunk in _chunks(stale):
                conn.execute(group.delete_groups, {"keys": chunk})
            if rows:
                insert_rows(conn, group.table, rows)
            written += len(rows)
        return written


def _chunks(items: Sequence[T]) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), CHUNK):
        yield items[start:start + CHUNK]
