"""SQLite appends queue on a lock file beside the database (``adapters.sqlite``)."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.adapters.sqlite import LOCK_SUFFIX, QueuedSQLiteApplicationRecorder
from allocation_ledger.config import parse_url
from tests.builders import a_host, an_instance


def test_an_append_waits_while_another_writer_holds_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with open_ledger(f"sqlite:///{path}") as ledger:
        recorder = ledger.store.recorder
        assert isinstance(recorder, QueuedSQLiteApplicationRecorder)
        assert recorder.lock_path == f"{path}{LOCK_SUFFIX}"
        host = a_host(ledger, vcpu=8)
        head = recorder.max_notification_id()
        fd = os.open(recorder.lock_path, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)  # another writer, mid-append
        claimed = threading.Event()
        claimer = threading.Thread(
            target=lambda: (an_instance(ledger, {host: {"VCPU": 1}}), claimed.set()))
        try:
            claimer.start()
            assert not claimed.wait(0.5)
            assert recorder.max_notification_id() == head  # nothing appended meanwhile
        finally:
            os.close(fd)  # the other writer commits
        claimer.join(10)
        assert claimed.is_set()
        assert ledger.provider(host).usages["VCPU"] == 1



def test_a_hung_holder_delays_an_append_by_the_lock_timeout_only(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger(EventStore({**parse_url(url).env, "SQLITE_LOCK_TIMEOUT": "1"}))
    try:
        host = a_host(ledger, vcpu=8)
        recorder = ledger.store.recorder
        assert isinstance(recorder, QueuedSQLiteApplicationRecorder)
        assert recorder.lock_path is not None
        fd = os.open(recorder.lock_path, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)  # held by a writer that never lets go
        try:
            started = time.monotonic()
            an_instance(ledger, {host: {"VCPU": 1}})
            waited = time.monotonic() - started
        finally:
            os.close(fd)
    finally:
        ledger.close()
    assert 0.9 < waited < 5
    assert "appending without it" in caplog.text


def test_connections_are_the_librarys_but_keep_their_statements(tmp_path: Path) -> None:
    """The connections that replace the library's (it prepared every statement of an
    append anew) keep the library's settings: the lock timeout, WAL, rows by name,
    autocommit; idle ones are reused."""
    from allocation_ledger.adapters.sqlite import StatementCachingDatastore

    with open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:
        a_host(ledger, vcpu=8)
        datastore = ledger.store.recorder.datastore
        assert isinstance(datastore, StatementCachingDatastore)
        assert datastore.lock_timeout == 30
        with datastore.transaction(commit=False) as c:
            c.execute("PRAGMA journal_mode")
            assert c.fetchone()["journal_mode"] == "wal"
            c.execute("PRAGMA busy_timeout")
            assert c.fetchone()[0] == 30_000
        with datastore.get_connection(commit=False) as first:
            assert first._sqlite_conn.isolation_level is None
        with datastore.get_connection(commit=True) as again:
            assert again is first
