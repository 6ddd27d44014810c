"""PostgreSQL URLs as libpq reads them: its options reach every connection the ledger and
its read side make, and the ``PG*`` variables fill in what the URL leaves out."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import psycopg
import pytest

from allocation_ledger import open_ledger
from allocation_ledger.projections.readmodels import ReadModels
from tests.builders import a_host

pytestmark = pytest.mark.postgres
SOCKETS = "/var/run/postgresql"


def session_of(url: str, setting: str) -> str:
    """``setting`` as the ledger's own pool connection sees it."""
    with open_ledger(url) as ledger:
        a_host(ledger)
        datastore = ledger.store.recorder.datastore  # type: ignore[attr-defined]
        with datastore.get_connection() as conn:
            value: str = conn.execute(f"SHOW {setting}").fetchone()[setting]
        return value


def test_libpq_options_reach_the_store_and_the_read_side(pg_url: str) -> None:
    url = f"{pg_url}&sslmode=disable&application_name=ledger18-test"
    assert session_of(url, "application_name") == "ledger18-test"
    with open_ledger(url, read_side=True) as ledger:
        a_host(ledger)
        assert len(ledger.reads.free_capacity("VCPU", 1)) == 2
        with ReadModels.of(ledger).engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW application_name").scalar() == "ledger18-test"


def test_pg_variables_fill_in_what_the_url_leaves_out(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    parts = urlsplit(pg_url)
    monkeypatch.setenv("PGUSER", parts.username or "postgres")
    monkeypatch.setenv("PGHOST", parts.hostname or "127.0.0.1")
    monkeypatch.setenv("PGPORT", str(parts.port or 5432))
    monkeypatch.setenv("PGAPPNAME", "from-pgappname")
    monkeypatch.setenv("USER", "nobody-at-all")
    bare = f"postgresql:///{parts.path.lstrip('/')}?{parts.query}"
    assert session_of(bare, "application_name") == "from-pgappname"


@pytest.mark.skipif(not os.path.isdir(SOCKETS), reason=f"no {SOCKETS} on this machine")
def test_a_unix_socket_host_in_the_query(pg_url: str) -> None:
    parts = urlsplit(pg_url)
    try:
        psycopg.connect(host=SOCKETS, user=parts.username, dbname=parts.path.lstrip("/"),
                        connect_timeout=5).close()
    except psycopg.OperationalError as err:
        pytest.skip(f"the server refuses socket connections here: {err}")
    url = (f"postgresql://{parts.username}@/{parts.path.lstrip('/')}?{parts.query}"
           f"&host={SOCKETS}")
    assert session_of(url, "application_name") == ""  # connected, over the socket
    with open_ledger(url) as ledger:
        datastore = ledger.store.recorder.datastore  # type: ignore[attr-defined]
        with datastore.get_connection() as conn:
            assert conn.info.host == SOCKETS
