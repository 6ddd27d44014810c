"""The PostgreSQL recorder's own append and read (``adapters.postgres``) against the
library's: same rows, same order, same refusals."""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import uuid4

import psycopg
import pytest
from eventsourcing.persistence import IntegrityError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.adapters.postgres import OneTripApplicationRecorder
from benchmarks.random_ledger import populate
from benchmarks.scratch import conninfo

pytestmark = pytest.mark.postgres


@pytest.fixture
def ledger(pg_url: str) -> Any:
    with open_ledger(pg_url) as opened:
        populate(opened, seed=5, steps=120)
        yield opened


def _recorder(ledger: Ledger) -> OneTripApplicationRecorder:
    recorder = ledger.store.recorder
    assert isinstance(recorder, OneTripApplicationRecorder)
    return recorder


@pytest.mark.parametrize("start, limit, stop, inclusive, topics", [
    (1, 10_000, None, True, False),
    (None, 50, None, True, False),
    (7, 25, None, False, False),
    (3, 1_000, 90, True, False),
    (40, 5, 41, False, False),
    (1, 10_000, None, True, True),
    (5, 30, 200, False, True),
])
def test_reads_the_rows_the_library_reads(ledger: Ledger, start: int | None, limit: int,
                                          stop: int | None, inclusive: bool,
                                          topics: bool) -> None:
    recorder = _recorder(ledger)
    wanted = sorted({n.topic for n in recorder.select_notifications(1, 10_000)})[:2] \
        if topics else []
    ours = recorder.select_notifications(start, limit, stop, wanted,
                                         inclusive_of_start=inclusive)
    theirs = PostgresApplicationRecorder.select_notifications(
        recorder, start, limit, stop, wanted, inclusive_of_start=inclusive)
    assert ours == theirs
    assert ours  # every case selects something
    assert all(type(n.state) is bytes for n in ours)


@pytest.mark.parametrize("start, limit, stop, inclusive", [
    (10, 50, 9, True), (10, 50, 10, False), (10, 50, 10, True), (10, 1, 10_000, False),
    (1, 3, 2, True),
])
def test_a_stop_at_or_before_the_start_and_a_limit_past_it_read_as_the_library(
        ledger: Ledger, start: int, limit: int, stop: int, inclusive: bool) -> None:
    recorder = _recorder(ledger)
    ours = recorder.select_notifications(start, limit, stop, inclusive_of_start=inclusive)
    theirs = PostgresApplicationRecorder.select_notifications(
        recorder, start, limit, stop, inclusive_of_start=inclusive)
    assert ours == theirs


def test_pages_up_to_a_stop_read_each_row_once_without_statistics(pg_url: str) -> None:
    """A catch-up reads the ledger in pages up to the head it saw. On a table the planner
    has no statistics for (a ledger grown fast, or just restored) a query bounded by that
    head read the whole range left and sorted it for every page: the rows read grew with
    the square of the catch-up's length. Each page must read about its own rows."""
    with open_ledger(pg_url) as opened:
        populate(opened, seed=11, steps=150)
        schema, table = _recorder(opened).names.schema, _recorder(opened).names.events
    before = _settled(pg_url, schema, table)  # a backend flushes its statistics as it ends
    with open_ledger(pg_url) as opened:
        recorder = _recorder(opened)
        head = recorder.max_notification_id() or 0
        start, pages = 1, 0
        while start <= head:
            start = recorder.select_notifications(start, 20, stop=head)[-1].id + 1
            pages += 1
    read = _settled(pg_url, schema, table) - before
    assert head >= 200 and pages >= 10
    assert head <= read <= 2 * head, f"{read} rows read for {head} events in {pages} pages"


def test_many_streams_are_read_by_their_keys_without_statistics(pg_url: str) -> None:
    """``select_streams`` (a consumer's providers, a batch's consumers) on a table the
    planner has no statistics for: the streams' own rows are read, not the whole table."""
    with open_ledger(pg_url) as opened:
        populate(opened, seed=11, steps=150)
        recorder = _recorder(opened)
        schema, table = recorder.names.schema, recorder.names.events
        events = recorder.select_notifications(1, 10_000)
        streams = list(dict.fromkeys(n.originator_id for n in events))[-20:]
    wanted = sum(1 for n in events if n.originator_id in set(streams))
    before = _settled(pg_url, schema, table)
    with open_ledger(pg_url) as opened:
        found = _recorder(opened).select_streams(streams, [0] * len(streams))
    read = _settled(pg_url, schema, table) - before
    assert sum(len(v) for v in found.values()) == wanted
    assert len(events) >= 10 * wanted
    assert read <= 2 * wanted, f"{read} rows read for {wanted} events of {len(streams)} streams"


def _settled(url: str, schema: str, table: str) -> int:
    """Rows of ``table`` read so far, once the count stops moving (the ledger's backends
    flush their statistics as they end, a moment after their connections close)."""
    deadline, last = time.monotonic() + 15, -1
    while True:
        time.sleep(0.5)
        now = _rows_read(url, schema, table)
        if now == last or time.monotonic() > deadline:
            return now
        last = now


def _rows_read(url: str, schema: str, table: str) -> int:
    with psycopg.connect(conninfo(url), autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) "
            "FROM pg_stat_user_tables WHERE schemaname = %s AND relname = %s",
            (schema, table)).fetchone()
    return int(row[0]) if row else 0


def test_appends_and_refuses_like_the_library(ledger: Ledger) -> None:
    recorder = _recorder(ledger)
    head = recorder.max_notification_id() or 0
    stream = uuid4()
    events = [StoredEvent(stream, v, "t:T", b'{"n":%d}' % v) for v in (1, 2, 3)]
    assert list(recorder.insert_events(events) or []) == [head + 1, head + 2, head + 3]
    with pytest.raises(IntegrityError):  # version 3 is taken: the whole append is refused
        recorder.insert_events([StoredEvent(stream, 4, "t:T", b"{}"),
                                StoredEvent(stream, 3, "t:T", b"{}")])
    assert recorder.max_notification_id() == head + 3
    assert [e.originator_version for e in recorder.select_events(stream)] == [1, 2, 3]


def test_an_append_waits_for_an_earlier_uncommitted_one(ledger: Ledger, pg_url: str) -> None:
    """Notification ids commit in the order they are given: an append that would commit
    while an earlier id is still uncommitted could let a projection reading up to it skip
    the earlier one for good. The table lock makes it wait."""
    recorder = _recorder(ledger)
    table = f'"{recorder.datastore.schema}"."{recorder.events_table_name}"'
    with psycopg.connect(conninfo(pg_url)) as other:
        earlier = other.execute(  # another writer, mid-transaction, holds the next id
            f"INSERT INTO {table} (originator_id, originator_version, topic, state) "
            "VALUES (%s, 1, 't:T', '{}') RETURNING notification_id", (uuid4(),),
        ).fetchone()
        assert earlier is not None
        appended: list[int] = []
        writer = threading.Thread(target=lambda: appended.extend(
            recorder.insert_events([StoredEvent(uuid4(), 1, "t:T", b"{}")]) or []))
        writer.start()
        writer.join(0.5)
        assert writer.is_alive() and appended == []  # waiting for the earlier one
        other.commit()
    writer.join(10)
    assert appended and appended[0] > earlier[0]


JSON_STATES = [
    b'{"a":1}',
    b'{ "spaced" : [1, 2.50, {"x": null}] ,"t":true }',
    b'{"escapes":"quote \\" backslash \\\\ newline \\n tab \\t e \\u00e9 nul \\u0000"}',
    b'{"deep":{"k":[[],{},[{"v":"}"}]]},"n":-0.0,"big":123456789012345678901234567890}',
]


@pytest.mark.parametrize("states, as_json", [
    pytest.param(JSON_STATES, True, id="JSON states, as one JSON array"),
    pytest.param([*JSON_STATES, '{"name":"caf\u00e9 \u20ac"}'.encode()], True,
                 id="a state not ASCII: bytea array"),
    pytest.param([bytes(range(256)), b"\x00\xff{"], False, id="states not JSON: bytea array"),
])
def test_states_are_stored_byte_for_byte(ledger: Ledger, states: list[bytes],
                                         as_json: bool) -> None:
    recorder = _recorder(ledger)
    assert recorder.states_are_json  # the ledger's mapper writes plain JSON
    recorder.states_are_json = as_json
    stream = uuid4()
    ids = recorder.insert_events([StoredEvent(stream, v, "t:T", state)
                                  for v, state in enumerate(states, start=1)])
    assert list(ids or []) == sorted(ids or []) and len(ids or []) == len(states)
    stored = recorder.select_events(stream)
    assert [(e.originator_version, e.state) for e in stored] == list(
        enumerate(states, start=1))
    by_id = {n.id: n for n in recorder.select_notifications(min(ids or [0]), len(states))}
    assert [by_id[i].state for i in ids or []] == states  # each id got its own event


@pytest.mark.parametrize("as_json", [True, False], ids=["JSON states", "bytea states"])
def test_topics_are_stored_as_given(ledger: Ledger, as_json: bool) -> None:
    """The ids, versions and topics go to the server as array literals written by the
    recorder: a topic with the literal's own syntax in it (quotes, backslashes, commas,
    braces, spaces, NULL) still reads back exactly."""
    recorder = _recorder(ledger)
    recorder.states_are_json = as_json
    topics = ['m:"quoted"', "m:back\\slash\\", "m:a,b", "m:{braces}", "m: spaced ", "NULL",
              "m:caf\u00e9", ""]
    stream = uuid4()
    recorder.insert_events([StoredEvent(stream, v, topic, b"{}")
                            for v, topic in enumerate(topics, start=1)])
    stored = recorder.select_events(stream)
    assert [(e.originator_id, e.originator_version, e.topic) for e in stored] == [
        (stream, v, topic) for v, topic in enumerate(topics, start=1)]


def test_a_large_append_keeps_its_order(ledger: Ledger) -> None:
    recorder = _recorder(ledger)
    events = [StoredEvent(uuid4(), 1, f"t:T{i % 7}", b'{"i":%d}' % i) for i in range(3000)]
    ids = list(recorder.insert_events(events) or [])
    assert ids == list(range(ids[0], ids[0] + 3000))
    found = recorder.select_notifications(ids[0], 3000)
    assert [(n.originator_id, n.topic, n.state) for n in found] == [
        (e.originator_id, e.topic, e.state) for e in events]


def test_each_store_keeps_its_own_lock_timeout(pg_url: str) -> None:
    """The append function is shared by every process that opens the store: each passes
    its own lock timeout (a later opener with another one changes nothing for the first)."""
    with open_ledger(pg_url + "&lock_timeout=1") as impatient, \
            open_ledger(pg_url + "&lock_timeout=30"):  # opened later, with its own
        recorder = _recorder(impatient)
        table = f'"{recorder.datastore.schema}"."{recorder.events_table_name}"'
        append_once = OneTripApplicationRecorder.insert_events.__wrapped__  # type: ignore[attr-defined]
        with psycopg.connect(conninfo(pg_url)) as other:
            other.execute(f"LOCK TABLE {table} IN ROW SHARE MODE")  # blocks the EXCLUSIVE lock
            started = time.monotonic()
            with pytest.raises(OperationalError, match="lock timeout"):
                append_once(recorder, [StoredEvent(uuid4(), 1, "t:T", b"{}")])
            waited = time.monotonic() - started
    assert 0.9 < waited < 10


def test_an_append_with_states_not_matching_its_events_is_refused_whole(ledger: Ledger) -> None:
    recorder = _recorder(ledger)
    head = recorder.max_notification_id()
    three_events = ([uuid4(), uuid4(), uuid4()], [1, 1, 1], ["t:T"] * 3)
    with recorder.datastore.get_connection() as conn, \
            pytest.raises(psycopg.Error, match="2 states for 3 events"):
        conn.execute(recorder._append_json,
                     (*three_events, '[{"a":1},{"b":2}]', "5s", None, None))
    assert recorder.max_notification_id() == head


def test_the_pool_hands_out_the_connection_returned_last(pg_url: str) -> None:
    """One thread's claims, one after another, stay on one warm backend (psycopg_pool went
    round all of them, each claim waking a backend that had slept), and a connection taken
    while another is out is another backend."""
    with open_ledger(pg_url + "&pool_size=4") as opened:
        pool = _recorder(opened).datastore.pool
        with pool.connection(), pool.connection(), pool.connection():
            pass  # three open, so the pool holds several to choose from
        host = str(uuid4())
        opened.register_provider(host, "h", inventories={"VCPU": {"total": 100}})
        pids: set[int] = set()
        for _ in range(6):
            opened.claim(str(uuid4()), {host: {"VCPU": 1}}, None, project_id="p",
                         user_id="u")
            with pool.connection() as conn:
                pids.add(conn.info.backend_pid)
        assert len(pids) == 1
        with pool.connection() as first, pool.connection() as second:
            assert first.info.backend_pid != second.info.backend_pid


def test_the_pool_closes_spares_left_idle_and_takes_no_broken_connection_back(
        pg_url: str) -> None:
    """A spare unused for ``max_idle`` is closed (before a server's idle limit closes it
    under the pool); a connection closed, or left in a transaction, is not handed out
    again as it was; with ``max_size`` out, a caller waits ``timeout`` and is refused."""
    with open_ledger(pg_url + "&pool_size=1&max_overflow=1") as opened:
        pool = _recorder(opened).datastore.pool
        with pool.connection() as kept, pool.connection() as spare, \
                pytest.raises(psycopg.OperationalError, match="no connection free"):
            pool.getconn(timeout=0.05)  # both out; then spare returned first, kept last
        pool.max_idle = 0.2
        with pool.connection() as conn:
            assert conn is kept  # the one returned last
            time.sleep(0.3)  # while the spare sits unused
        with pool.connection() as conn:
            assert conn is kept
        assert kept.closed is False and spare.closed is True
        with pool.connection() as conn:
            conn.execute("BEGIN")
            conn.execute("SELECT 1")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with pool.connection() as conn:
            conn.close()
        with pool.connection() as fresh:
            assert fresh is not conn and fresh.execute("SELECT 1").fetchone()
