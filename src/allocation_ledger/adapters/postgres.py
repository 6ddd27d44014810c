"""The PostgreSQL append in one statement, and reads of the ledger in binary.

The library's recorder appends with three round trips (entering the transaction, after the
insert, at commit), six statements (BEGIN, the lock timeout, ``LOCK TABLE ... IN EXCLUSIVE
MODE``, ``NOTIFY``, the insert, COMMIT) and the events encoded as an array of composite
values row by row in Python. This subclass runs the very same statements inside one
PL/pgSQL function of its own, ``<events table>_append``, called in one statement (so in one
transaction, one round trip) with three plain arrays and the events' JSON states as one
JSON array, whose elements the server hands back as their exact text (a store with a cipher
or compression, or a state that is not ASCII, passes a ``bytea[]`` instead). The table lock
is what keeps notification ids committed in the order they are assigned, so that a
projection reading the ledger never skips an event committed late; it is held until the
statement's transaction commits, as before. (The library's own database-function insert,
``POSTGRES_ENABLE_DB_FUNCTIONS``, leaves the lock out, which is why the ledger stays off
it.) The store's unique (stream, version) key refuses a conflicting append exactly as
before. The functions are created, or replaced, with the tables, under the advisory lock
that serialises opening a store.

Reading notifications (the projections' catch-up, the audit's replay) asks for the same rows
as the library, in PostgreSQL's binary format as plain tuples: the library's text rows, as
dicts, cost three times as much per event to turn into Python values.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any, cast
from uuid import UUID

import psycopg
from eventsourcing.persistence import (
    InterfaceError,
    Notification,
    OperationalError,
    ProgrammingError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresFactory
from eventsourcing.utils import Environment, EnvType, retry
from psycopg.pq import DiagnosticField, ExecStatus
from psycopg.pq.abc import PGresult
from psycopg.rows import dict_row, tuple_row
from psycopg.sql import SQL, Composed, Identifier

from allocation_ledger.adapters import chain
from allocation_ledger.adapters.notifications import (
    events_filter,
    notification,
    stream_events,
)
from allocation_ledger.adapters.pgerrors import library_error
from allocation_ledger.adapters.pgpool import RecentFirstPool
from allocation_ledger.adapters.pgschema import (
    ABSENT,
    UNCHAINED,
    Names,
    append_functions,
    read_key,
    record_key,
    schema_state,
)
from allocation_ledger.adapters.turns import AdvisoryTurns
from allocation_ledger.config import CONNINFO
from allocation_ledger.domain.errors import StoreUnusable


def text_array(values: Sequence[str]) -> str:
    """A PostgreSQL array literal of ``values``, each quoted (backslashes and double quotes
    escaped), so any text reads back as itself."""
    return "{" + ",".join(
        ['"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' for value in values]
    ) + "}"


def _checked(result: PGresult) -> PGresult:
    """``result``, or its error raised as psycopg's class for its SQLSTATE (a connection
    lost has none: ``OperationalError``)."""
    if result.status in (ExecStatus.TUPLES_OK, ExecStatus.COMMAND_OK):
        return result
    state = (result.error_field(DiagnosticField.SQLSTATE) or b"").decode()
    message = (result.error_message or b"the server gave no result").decode(errors="replace")
    try:
        error = psycopg.errors.lookup(state) if state else psycopg.OperationalError
    except KeyError:
        error = psycopg.DatabaseError
    raise error(message)


class ConninfoPostgresFactory(PostgresFactory):
    """The library's PostgreSQL factory, connecting with a whole libpq connection string.

    The library hands its pool five fixed parameters (dbname, host, port, user, password),
    so no ``sslmode``, ``sslrootcert``, ``host=/var/run/postgresql``, ``options`` or
    ``target_session_attrs`` could reach libpq, and ``PGUSER``, ``PGHOST``, ``PGSSLMODE``
    and the other ``PG*`` variables were shadowed by the defaults filled in. Here the pool
    connects with the connection string the store URL gave (see ``config``), and libpq
    fills in whatever it leaves out, from the ``PG*`` variables as usual. The library's
    pool, made but never opened, is replaced with one of the same settings that hands out
    the connection returned last (``adapters/pgpool.py``).
    """

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        made: Any = self.datastore.pool  # the library's, made and never opened
        conninfo = self.env.get(CONNINFO)
        self.datastore.pool = RecentFirstPool(  # type: ignore[assignment]
            made.conninfo if conninfo is None else conninfo,
            kwargs=made.kwargs if conninfo is None else {"row_factory": dict_row},
            configure=self.datastore.after_connect_func(), max_size=made.max_size,
            timeout=made.timeout, max_lifetime=made.max_lifetime,
            password=made.get_password_func)


class OneTripApplicationRecorder(PostgresApplicationRecorder):
    """A ``PostgresApplicationRecorder`` whose append is one statement and extends the
    hash chain."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.names = Names(self.datastore.schema, self.events_table_name)
        schema, table = Identifier(self.datastore.schema), Identifier(self.events_table_name)
        self.sql_create_statements[self.create_table_statement_index] = Composed([SQL(
            self.sql_create_statements[self.create_table_statement_index].as_string()
            .replace("state bytea, ", "state bytea, chain_hash bytea, "))])
        self.sql_create_statements.append(SQL(
            "CREATE TABLE IF NOT EXISTS {0}.{1} (keyed boolean NOT NULL, key_check bytea, "
            "migrated_at timestamptz, migrated_up_to bigint)"
        ).format(schema, Identifier(self.names.chain_table)))
        self.sql_create_statements += append_functions(self.names, self.channel_name)
        self.chain_key = chain.key_from_environment()
        #: opened for an audit: see the SQLite recorder's
        self.chain_audit = self.chain_downgraded = False
        self._pads = self.chain_key.pads() if self.chain_key else (None, None)
        # this store's own lock timeout, passed on every call (the function is shared by
        # every process that opens the store)
        self._lock_timeout = f"{self.datastore.lock_timeout}s"
        call = ("SELECT * FROM {0}.{1}(%s::uuid[], %s::bigint[], %s::text[], %s::{2}, %s, "
                "%s::bytea, %s::bytea)")
        function = Identifier(self.names.function)
        #: the appends, rendered as text by :meth:`prepare` (psycopg renders a composed
        #: statement anew on every execution, about 20 us an append)
        self._append: str | Composed = SQL(call).format(schema, function, SQL("bytea[]"))
        self._append_json: str | Composed = SQL(call).format(schema, function, SQL("json"))
        # the JSON append as libpq prepares it ($1..$7), and the connections it is prepared on
        numbered = call
        for n in range(1, 8):
            numbered = numbered.replace("%s", f"${n}", 1)
        self._append_libpq: bytes | Composed = SQL(numbered).format(schema, function,
                                                                    SQL("json"))
        self._append_name = f"{self.names.schema}.{self.names.function}".encode()
        self._prepared_on: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()
        #: the store's states are JSON (no cipher, no compression: set by the event store)
        self.states_are_json = False
        self._select = SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state, "
            "chain_hash FROM {0}.{1}"
        ).format(schema, table)
        self._select_stream = SQL(
            "SELECT originator_version, topic, state FROM {0}.{1} WHERE originator_id = %s"
        ).format(schema, table)
        #: the texts of one stream's queries (by filter), made once each (:meth:`select_events`)
        self._stream_texts: dict[str, str] = {}
        # each stream looked up by its key, whatever the planner's statistics say: as a
        # join on the unnested arrays, a table without statistics (autovacuum off, a ledger
        # just restored) was scanned whole and hashed on every call, 10 ms at 100,000 events
        # for 20 streams; OFFSET 0 keeps the lateral lookup from being flattened into that
        self._select_streams = SQL(
            "SELECT e.originator_id, e.originator_version, e.topic, e.state "
            "FROM unnest(%s::uuid[], %s::bigint[]) AS w(id, after) CROSS JOIN LATERAL ("
            "SELECT s.originator_id, s.originator_version, s.topic, s.state FROM {0}.{1} s "
            "WHERE s.originator_id = w.id AND s.originator_version > w.after OFFSET 0) AS e "
            "ORDER BY e.originator_id, e.originator_version").format(schema, table)
        #: writers' turns on contended streams (``adapters/turns.py``)
        self.turns = AdvisoryTurns(self.datastore, self.datastore.lock_timeout, SQL(
            "SELECT originator_id, originator_version, topic, state FROM {0}.{1} "
            "WHERE originator_id = %s AND originator_version > %s ORDER BY originator_version"
        ).format(schema, table))

    def create_table(self) -> None:
        """Nothing: :meth:`prepare` decides whether anything is to be created."""

    def create_schema(self) -> None:
        """Create what is missing and replace the append functions (the owner's deploy
        step, ``allocation-ledger db init``)."""
        super().create_table()

    def prepare(self, *, create: bool = True) -> bool:
        """Create the schema where there is none (True), else create nothing, so a role
        without DDL rights opens it; refuse an unmigrated ledger or a wrong chain key. With
        ``create`` false (a store opened to be read) a missing schema is left as it is, for
        the caller to report."""
        with self.datastore.transaction(commit=False) as curs:
            state = schema_state(curs, self.names)
        if state == ABSENT and not create:
            return False
        if state == UNCHAINED:
            raise StoreUnusable(
                f"the ledger in schema {self.names.schema} has no hash chain yet: run "
                "`allocation-ledger db init` (as the schema's owner) to migrate it",
                schema=self.names.schema)
        if state == ABSENT:
            try:
                self.create_schema()
            except ProgrammingError as err:  # a role without CREATE on the schema
                raise StoreUnusable(
                    f"there is no ledger in schema {self.names.schema} and this role cannot "
                    f"create one ({err}): run `allocation-ledger db init` as the schema's "
                    "owner", schema=self.names.schema) from err
        with self.datastore.transaction(commit=state == ABSENT) as curs:
            if state == ABSENT:
                record_key(curs, self.names, self.chain_key)
            keyed, check = read_key(curs, self.names)
            self._append, self._append_json = (
                s if isinstance(s, str) else s.as_string(curs)
                for s in (self._append, self._append_json))
            if not isinstance(self._append_libpq, bytes):
                self._append_libpq = self._append_libpq.as_string(curs).encode()
        if chain.check_key(keyed, check, self.chain_key, f"schema {self.names.schema}",
                           audit=self.chain_audit and not create):
            self.chain_downgraded, self.chain_key = True, None  # read as stored
            self._pads = (None, None)
        return state == ABSENT

    def chain_facts(self) -> tuple[bool, str | None, int | None]:
        """Whether the chain is keyed; when and up to where a migration computed it."""
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(SQL("SELECT keyed, migrated_at, migrated_up_to FROM {0}").format(
                self.names.qualified(self.names.chain_table)))
            row = curs.fetchone()
        if row is None:
            return False, None, None
        at = row["migrated_at"]
        return bool(row["keyed"]), at.isoformat() if at else None, row["migrated_up_to"]

    def chain_hash_before(self, position: int) -> bytes | None:
        """The chain hash of the last event before ``position``."""
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(SQL("SELECT chain_hash FROM {0} WHERE notification_id < %s "
                             "ORDER BY notification_id DESC LIMIT 1").format(
                self.names.qualified(self.names.events)), (position,))
            row = curs.fetchone()
        return bytes(row["chain_hash"]) if row and row["chain_hash"] is not None else None

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """Append ``stored_events`` atomically; their notification ids."""
        if not stored_events:
            return []
        states = [e.state for e in stored_events]
        statement, passed = self._append, cast(Any, states)
        if self.states_are_json and all(state.isascii() for state in states):
            # one JSON array: psycopg writes a bytea[] element by element in Python
            # (~17 us each), the array is one join; the server gives back each element's
            # exact text, and ASCII reads the same in any server encoding
            statement, passed = self._append_json, (b"[" + b",".join(states) + b"]").decode()
        params = (
            # array literals written here: psycopg's list dumpers inspect every element
            # and cost about 30 us a claim; these are one join each
            "{" + ",".join([str(e.originator_id) for e in stored_events]) + "}",
            "{" + ",".join([str(e.originator_version) for e in stored_events]) + "}",
            text_array([e.topic for e in stored_events]),
            passed,
            self._lock_timeout,
            *self._pads,
        )
        if self.turns.holding():  # in this thread's transaction of turns, with its COMMIT
            return [row[0] for row in self.turns.commit(statement, params)]
        # straight from the pool (the datastore's get_connection, which only adds its
        # composite types, costs ~20 us; the pool is open: prepare() opened it through the
        # datastore when the store opened), psycopg's errors as the library's (IntegrityError)
        try:
            with self.datastore.pool.connection() as conn:
                assert conn.autocommit  # one statement, one transaction
                if statement is self._append_json:
                    return self._call_json(conn, params)
                with conn.cursor(row_factory=tuple_row) as c:
                    c.execute(statement, params, prepare=True)
                    return [row[0] for row in c.fetchall()]
        except psycopg.Error as err:
            raise library_error(err) from err

    def _call_json(self, conn: psycopg.Connection[Any], params: tuple[Any, ...]) -> list[int]:
        """The JSON append through libpq's own prepared call (psycopg's documented
        ``pgconn``), its parameters text already but for the chain's pads, in binary:
        psycopg's cursor, its dumpers and its rows cost about 85 us of client CPU an append
        more (``benchmarks.before_after``: single PostgreSQL claims, claims per CPU-second)."""
        pgconn, encoding = conn.pgconn, conn.info.encoding
        values = [p.encode(encoding) for p in params[:5]] + list(params[5:])
        for _ in range(2):
            if conn not in self._prepared_on:
                _checked(pgconn.prepare(self._append_name, cast(bytes, self._append_libpq)))
                self._prepared_on.add(conn)
            result = pgconn.exec_prepared(self._append_name, values,
                                          param_formats=(0, 0, 0, 0, 0, 1, 1))
            if result.error_field(DiagnosticField.SQLSTATE) != b"26000":
                break
            # gone: psycopg deallocates every prepared statement after a ROLLBACK or DROP
            self._prepared_on.discard(conn)
        _checked(result)
        return [int(result.get_value(row, 0) or 0) for row in range(result.ntuples)]

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
        order: the library's query and result, read in binary.

        With both ``start`` and ``stop``, ``stop`` bounds the ``LIMIT`` (a range holds at
        most ``stop - start + 1`` positions) and the rows past it are dropped here, not in
        the query: given ``notification_id<=stop``, a planner without fresh statistics (a
        fast-grown or restored ledger) reads the whole range and sorts it on disk for every
        page, so a catch-up in pages cost the square of its length (a rebuild of 100,000
        events: 0.84 s of the reading backend's CPU instead of 0.10; the rows read are
        counted in ``tests/integration/test_postgres_recorder.py``)."""
        where: list[SQL] = []
        params: list[Any] = []
        if start is not None:
            where.append(SQL("notification_id>=%s" if inclusive_of_start
                             else "notification_id>%s"))
            params.append(start)
            if stop is not None:
                first = start if inclusive_of_start else start + 1
                limit = max(min(limit, stop - first + 1), 0)
        elif stop is not None:
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
            found = [notification(*row) for row in curs.fetchall()]
        if start is not None and stop is not None:
            while found and found[-1].id > stop:
                found.pop()
        return found


    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def select_events(
        self, originator_id: UUID | str, *, gt: int | None = None, lte: int | None = None,
        desc: bool = False, limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        """The library's ``select_events``, in binary as plain tuples, each statement's text
        made once (the library composes and renders it on every call): a cached provider
        brought up to date with other writers' events reads a dozen of them per claim."""
        rest, params = events_filter(gt, lte, desc, limit, "%s")
        with self.datastore.get_connection() as conn, conn.cursor(
            binary=True, row_factory=tuple_row
        ) as curs:
            statement = self._stream_texts.get(rest)
            if statement is None:
                statement = self._stream_texts[rest] = (
                    self._select_stream.as_string(conn) + rest)
            curs.execute(statement, [originator_id, *params], prepare=True)
            rows = curs.fetchall()
        return stream_events(originator_id, rows, UUID)  # the rows' own ids are UUIDs

    def select_streams(self, streams: Sequence[UUID], after: Sequence[int],
                       ) -> dict[UUID, list[StoredEvent]]:
        """The events of these streams, of each those after its version in ``after`` (0:
        all), by stream and in order, in one query (binary)."""
        found: dict[UUID, list[StoredEvent]] = {stream: [] for stream in streams}
        if not streams:
            return found
        with self.datastore.get_connection() as conn, conn.cursor(
            binary=True, row_factory=tuple_row
        ) as curs:
            curs.execute(self._select_streams, (list(streams), list(after)), prepare=True)
            for stream, version, topic, state in curs.fetchall():
                found[stream].append(StoredEvent(stream, version, topic, state))
        return found

