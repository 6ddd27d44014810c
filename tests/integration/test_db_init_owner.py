"""``db init`` run by a schema's owner who has no CREATE on the database (the usual grant:
a DBA creates the schema for the team's role): it creates the ledger and the read models in
the schema without asking for the schema again, and a failure is one line, the database's
own words without SQLAlchemy's statement dump."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from allocation_ledger.cli import main
from tests.integration.test_postgres_roles import as_role, conninfo
from tests.stores import require_postgres

pytestmark = pytest.mark.postgres


@pytest.fixture
def owner_without_create() -> Iterator[tuple[str, str, str]]:
    """(superuser URL, a role without CREATE on the database, a schema it owns)."""
    base = require_postgres()
    suffix = uuid.uuid4().hex[:8]
    role, schema = f"ledger28_owner_{suffix}", f"t28_{suffix}"
    with psycopg.connect(conninfo(base), autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'CREATE SCHEMA "{schema}" AUTHORIZATION "{role}"')
        database = conn.execute("SELECT current_database()").fetchone()
        assert database is not None
        assert conn.execute("SELECT has_database_privilege(%s, %s, 'CREATE')",
                            (role, database[0])).fetchone() == (False,)
    try:
        yield base, role, schema
    finally:
        with psycopg.connect(conninfo(base), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


def test_the_owner_of_an_existing_schema_initialises_it(
        owner_without_create: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    base, role, schema = owner_without_create
    url = as_role(base, role) + ("&" if "?" in base else "?") + f"schema={schema}"
    for _ in range(2):  # and again: nothing to create the second time
        capsys.readouterr()
        assert main(["db", "init", "--url", url]) == 0, capsys.readouterr().err
    with psycopg.connect(conninfo(base)) as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,))}
    assert "proj_tracking" in tables and any("events" in t for t in tables)


def test_a_read_model_table_it_may_not_change_is_one_line(
        owner_without_create: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A read models' table another role made in the schema (from before the hash chain:
    no chain column) cannot be changed by the schema's owner: the error is one line."""
    base, role, schema = owner_without_create
    with psycopg.connect(conninfo(base), autocommit=True) as conn:
        conn.execute(f'CREATE TABLE "{schema}".proj_tracking (projection text PRIMARY KEY, '
                     "position bigint NOT NULL)")
    url = as_role(base, role) + ("&" if "?" in base else "?") + f"schema={schema}"
    capsys.readouterr()
    assert main(["db", "init", "--url", url]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [err.strip()]
    assert "must be owner of table proj_tracking" in err
    assert "[SQL:" not in err and "sqlalche.me" not in err and "unexpected" not in err
