"""A ledger from before the hash chain: opening it is refused with what to do; ``db init``
chains its events in ledger order and records that it did; from then on it is a chained
ledger like any other, and the audit says the chain over the old events dates from the
migration."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import psycopg
import pytest

from allocation_ledger import open_ledger
from allocation_ledger.cli import main
from allocation_ledger.config import parse_url
from allocation_ledger.domain.errors import StoreUnusable
from tests.audit import tampering
from tests.audit.tampering import EventsTable
from tests.builders import a_host, an_instance


def make_it_old(url: str) -> None:
    """Take the chain away, as a ledger written before it looked (on PostgreSQL with the
    append function of that time)."""
    config = parse_url(url)
    if config.kind == "sqlite":
        with closing(sqlite3.connect(config.env["SQLITE_DBNAME"])) as conn:
            conn.execute("ALTER TABLE stored_events DROP COLUMN chain_hash")
            conn.execute("DROP TABLE stored_events_chain")
            conn.commit()
        return
    schema = config.env["POSTGRES_SCHEMA"]
    with psycopg.connect(EventsTable(url).conninfo, autocommit=True) as conn:
        for states in ("bytea[]", "json"):
            conn.execute(f'DROP FUNCTION "{schema}".ledger_events_append(uuid[], bigint[], '
                         f"text[], {states}, text, bytea, bytea)")
            conn.execute(f'CREATE FUNCTION "{schema}".ledger_events_append(uuid[], bigint[], '
                         f"text[], {states}, text) RETURNS SETOF bigint LANGUAGE sql AS "
                         "'SELECT 1::bigint WHERE false'")
        conn.execute(f'ALTER TABLE "{schema}".ledger_events DROP COLUMN chain_hash')
        conn.execute(f'DROP TABLE "{schema}".ledger_events_chain')


def test_an_old_ledger_is_refused_then_migrated_to_the_chain(
        durable_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with open_ledger(durable_url) as ledger:
        host = a_host(ledger, vcpu=16, memory_mb=None)
        for _ in range(3):
            an_instance(ledger, {host: {"VCPU": 2}})
    make_it_old(durable_url)
    with pytest.raises(StoreUnusable, match="db init"):
        open_ledger(durable_url)
    assert main(["audit", "--url", durable_url]) == 1
    assert "no hash chain yet" in capsys.readouterr().err

    assert main(["db", "init", "--url", durable_url]) == 0
    assert "13 existing events chained" in capsys.readouterr().out  # 4 commands, records and
    # the host's name too
    assert main(["audit", "--url", durable_url]) == 0
    assert "computed by the migration" in capsys.readouterr().out
    with open_ledger(durable_url) as ledger:  # the chain goes on from the migrated head
        an_instance(ledger, {host: {"VCPU": 2}})
    assert main(["audit", "--url", durable_url]) == 0
    assert main(["db", "init", "--url", durable_url]) == 0  # again: nothing to migrate
    assert "migrated" not in capsys.readouterr().out

    table = EventsTable(durable_url)
    rows = table.rows()
    edited = rows[5][4].replace(b'"VCPU":2', b'"VCPU":1')  # the first instance's creation
    table.replace([*rows[:5], tampering.with_state(rows[5], edited), *rows[6:]])
    assert main(["audit", "--url", durable_url, "--projections", "off"]) == 1
    assert f"chain breaks at #{rows[5][0]}" in capsys.readouterr().out
