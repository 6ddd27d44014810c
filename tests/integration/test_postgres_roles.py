"""The append-only deployment on real PostgreSQL roles: the owner runs ``db init``; the
application role appends through the append function and reads, and is refused every
change of the events table; the auditor role runs the read commands and cannot write.

The roles are cluster-wide: their names carry this issue's prefix and a random part, and
they are dropped afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from allocation_ledger import open_ledger
from allocation_ledger.cli import main
from allocation_ledger.domain.errors import StoreUnusable
from tests.builders import PROJECT, USER, a_host, an_instance, new_id
from tests.stores import postgres_schema_url

pytestmark = pytest.mark.postgres


def as_role(url: str, role: str) -> str:
    """``url`` with another user."""
    parts = urlsplit(url)
    host = parts.netloc.split("@")[-1]
    return urlunsplit((parts.scheme, f"{role}@{host}", parts.path, parts.query, ""))


def conninfo(url: str) -> str:
    """A psycopg connection string for ``url`` (without its parameters)."""
    parts = urlsplit(url)
    return urlunsplit(("postgresql", parts.netloc, parts.path, "", ""))


@pytest.fixture
def deployed() -> Iterator[tuple[str, str, str, str]]:
    """(owner URL, app URL, auditor URL, schema): a schema ``db init`` created, with an
    app role and an auditor role of its own."""
    suffix = uuid.uuid4().hex[:8]
    app, auditor = f"ledger12_app_{suffix}", f"ledger12_audit_{suffix}"
    with postgres_schema_url() as owner:
        with psycopg.connect(conninfo(owner), autocommit=True) as conn:
            for role in (app, auditor):
                conn.execute(f'CREATE ROLE "{role}" LOGIN')
        try:
            assert main(["db", "init", "--url", owner, "--app-role", app,
                         "--auditor-role", auditor]) == 0
            schema = owner.split("schema=")[1].split("&")[0]
            yield owner, as_role(owner, app), as_role(owner, auditor), schema
        finally:
            with psycopg.connect(conninfo(owner), autocommit=True) as conn:
                for role in (app, auditor):
                    conn.execute(f'DROP OWNED BY "{role}"')
                    conn.execute(f'DROP ROLE "{role}"')


def refused(url: str, statement: str) -> str:
    """The error PostgreSQL gives ``statement`` run by ``url``'s role."""
    with psycopg.connect(conninfo(url), autocommit=True) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege) as err:
        conn.execute(statement)
    return str(err.value)


def test_the_app_role_appends_but_cannot_change_the_events_table(
        deployed: tuple[str, str, str, str]) -> None:
    _, app_url, _, schema = deployed
    with psycopg.connect(conninfo(app_url), autocommit=True) as conn:
        assert conn.execute("SELECT has_schema_privilege(%s, 'CREATE')",
                            (schema,)).fetchone() == (False,)  # opening needs no DDL
    with open_ledger(app_url) as ledger:
        src, dst = a_host(ledger), a_host(ledger)
        vm = an_instance(ledger, {src: {"VCPU": 2}})
        migration = new_id()
        ledger.swap(vm.consumer_uuid, migration, vm.generation or 0)
        ledger.claim(vm.consumer_uuid, {dst: {"VCPU": 2}}, None, project_id=PROJECT,
                     user_id=USER)
        ledger.confirm(migration, ledger.migration(migration).generation or 0)
        assert ledger.provider(dst).usages["VCPU"] == 2
        assert ledger.provider(src).usages["VCPU"] == 0
    events = f'"{schema}".ledger_events'
    for statement in (f"UPDATE {events} SET topic = 'x'", f"DELETE FROM {events}",
                      f"TRUNCATE {events}",
                      f"INSERT INTO {events} (originator_id, originator_version, topic, state)"
                      " VALUES (gen_random_uuid(), 1, 'forged', '\\x7b7d')"):
        assert "permission denied" in refused(app_url, statement)
    assert main(["audit", "--url", app_url]) == 0


def test_the_auditor_role_reads_and_cannot_write(
        deployed: tuple[str, str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    _, app_url, auditor_url, schema = deployed
    with open_ledger(app_url) as ledger:
        host = a_host(ledger)
        vm = an_instance(ledger, {host: {"VCPU": 2}}).consumer_uuid
    assert main(["projections", "rebuild", "--url", app_url, "--quiet"]) == 0
    for command in (["audit"], ["digest", "--json"], ["projections", "status"],
                    ["history", "consumer", vm], ["history", "ledger"],
                    ["state-at", "provider", host, "--position", "3"],
                    ["state-at", "hosts", "--position", "3"]):
        assert main([*command, "--url", auditor_url]) == 0, command
    assert "No findings" in capsys.readouterr().out
    with open_ledger(auditor_url) as ledger, pytest.raises(StoreUnusable) as err:
        an_instance(ledger, {host: {"VCPU": 1}})
    assert "permission denied" in str(err.value)
    events = f'"{schema}".ledger_events'
    for statement in (f"UPDATE {events} SET topic = 'x'", f"DELETE FROM {events}",
                      f'INSERT INTO "{schema}".ledger_snapshots VALUES '
                      "(gen_random_uuid(), 1, 't', '\\x7b7d')",
                      f'DELETE FROM "{schema}".proj_host_usage',
                      f'SELECT * FROM "{schema}".ledger_events_append(ARRAY[gen_random_uuid()],'
                      " ARRAY[1::bigint], ARRAY['t'], ARRAY['\\x7b7d'::bytea], '1s', NULL, "
                      "NULL)"):
        assert "permission denied" in refused(auditor_url, statement)


def test_the_app_role_cannot_create_a_missing_schema_and_is_told_to_run_db_init(
        deployed: tuple[str, str, str, str]) -> None:
    owner, app_url, _, _ = deployed
    app = urlsplit(app_url).username
    empty = f"ledger12_empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(conninfo(owner), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{empty}"')
        conn.execute(f'GRANT USAGE ON SCHEMA "{empty}" TO "{app}"')
    try:
        with pytest.raises(StoreUnusable, match="db init"):
            open_ledger(app_url.split("?")[0] + f"?schema={empty}")
    finally:
        with psycopg.connect(conninfo(owner), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{empty}" CASCADE')
