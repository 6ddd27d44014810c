"""The store URL, and only the URL, decides where the ledger lives."""

from __future__ import annotations

from pathlib import Path

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.config import CONNINFO, parse_url
from allocation_ledger.domain.errors import InvalidRequest
from tests.builders import a_host


@pytest.mark.parametrize(("url", "kind", "expected"), [
    ("memory://", "memory", {"PERSISTENCE_MODULE": "eventsourcing.popo"}),
    ("sqlite:///ledger.db", "sqlite", {"SQLITE_DBNAME": "ledger.db"}),
    ("sqlite:////var/lib/ledger.db", "sqlite", {"SQLITE_DBNAME": "/var/lib/ledger.db"}),
    ("postgresql://ops:s3cret@db.example:6543/ledger?schema=cells&pool_size=3", "postgresql",
     {"POSTGRES_HOST": "db.example", "POSTGRES_PORT": "6543", "POSTGRES_USER": "ops",
      "POSTGRES_PASSWORD": "s3cret", "POSTGRES_DBNAME": "ledger", "POSTGRES_SCHEMA": "cells",
      "POSTGRES_POOL_SIZE": "3", "POSTGRES_ENABLE_DB_FUNCTIONS": "n"}),
    ("postgresql+psycopg://u@h/db", "postgresql", {"POSTGRES_DBNAME": "db"}),
    ("postgresql://u@h1:5441,h2/db?target_session_attrs=read-write&connect_timeout=3",
     "postgresql", {"POSTGRES_HOST": "h1,h2", "POSTGRES_DBNAME": "db",
                    "POSTGRES_CONNECT_TIMEOUT": "3",
                    "PERSISTENCE_MODULE":
                        "allocation_ledger.adapters.postgres:ConninfoPostgresFactory"}),
])
def test_urls_become_store_settings(url: str, kind: str, expected: dict[str, str]) -> None:
    config = parse_url(url)
    assert config.kind == kind
    assert {k: config.env[k] for k in expected} == expected


def test_a_multi_host_url_reaches_libpq_with_its_session_attributes() -> None:
    env = parse_url("postgresql://u@h1:5441,h2/db?target_session_attrs=read-write").env
    assert "target_session_attrs=read-write" in env[CONNINFO]
    assert "host=h1,h2" in env[CONNINFO] and "port=5441," in env[CONNINFO]


@pytest.mark.parametrize(("url", "says"), [
    ("mysql://u@h/db", "unsupported store URL"),
    ("sqlite://", "no database file"),
    ("postgresql://u@h/", "no database name"),
    ("postgresql://u@h/db?schem=x", 'invalid URI query parameter: "schem"'),
    ("sqlite:///ledger.db?mode=ro", "take no parameters"),
    ('postgresql://u@h/db?schema=x";COMMIT;CREATE/**/TABLE/**/public.pwned(i/**/int);--',
     "bad schema name"),
    ("postgresql://u@h/db?schema=1abc", "bad schema name"),
    ("postgresql://u@h/db?schema=" + "a" * 64, "bad schema name"),
    ("postgresql://u@h/db?schema=a%00b", "bad schema name"),
    ("postgresql://u@h:99999/db", "bad port"),
    ("postgresql://u@h:port/db", "bad port"),
    ("postgresql://u@h/db?pool_size=abc", "bad pool_size 'abc'"),
    ("postgresql://u@h/db?pool_size=0", "bad pool_size '0'"),
    ("postgresql://u@h/db?lock_timeout=-1", "bad lock_timeout"),
    ("sqlite:///ledger\x00.db", "printable text"),
])
def test_bad_urls_are_refused_with_the_reason(
        url: str, says: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGDATABASE", raising=False)
    with pytest.raises(InvalidRequest, match=says):
        parse_url(url)


def test_passwords_are_masked_in_reports() -> None:
    assert parse_url("postgresql://ops:s3cret@h/db").redacted_url == "postgresql://ops:***@h/db"


def test_the_environment_cannot_redirect_or_reconfigure_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library would read LEDGER_SQLITE_DBNAME (and the like) from os.environ."""
    elsewhere = tmp_path / "elsewhere.db"
    monkeypatch.setenv("LEDGER_SQLITE_DBNAME", str(elsewhere))
    monkeypatch.setenv("SQLITE_DBNAME", str(elsewhere))
    monkeypatch.setenv("DEEPCOPY_FROM_AGGREGATE_CACHE", "n")
    with open_ledger(f"sqlite:///{tmp_path / 'asked.db'}") as ledger:
        a_host(ledger)
        assert ledger.store.env.get("DEEPCOPY_FROM_AGGREGATE_CACHE") == "y"
    assert (tmp_path / "asked.db").exists()
    assert not elsewhere.exists()


def test_the_cache_holds_two_hundred_thousand_aggregates_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LEDGER_CACHE_SIZE", raising=False)
    assert parse_url("memory://").env["AGGREGATE_CACHE_MAXSIZE"] == "200000"
    monkeypatch.setenv("LEDGER_CACHE_SIZE", "30000")
    assert parse_url("sqlite:///x.db").env["AGGREGATE_CACHE_MAXSIZE"] == "30000"


@pytest.mark.parametrize("size", ["0", "-5", "lots"])
def test_a_cache_size_that_is_no_positive_number_is_refused(
    size: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LEDGER_CACHE_SIZE", size)
    with pytest.raises(InvalidRequest, match="LEDGER_CACHE_SIZE"):
        parse_url("memory://")


def test_libpq_options_pass_through_and_the_ledgers_own_are_taken_out() -> None:
    env = parse_url("postgresql://ops@db.example/ledger?sslmode=verify-full"
                    "&sslrootcert=/etc/ca.pem&schema=cells&application_name=ledger").env
    conninfo = dict(part.split("=", 1) for part in env[CONNINFO].split())
    assert conninfo == {"user": "ops", "host": "db.example", "dbname": "ledger",
                        "sslmode": "verify-full", "sslrootcert": "/etc/ca.pem",
                        "application_name": "ledger"}
    assert env["POSTGRES_SCHEMA"] == "cells"


def test_what_the_url_leaves_out_is_left_to_libpq(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGDATABASE", "from_env")
    env = parse_url("postgresql://?host=/var/run/postgresql").env
    assert env[CONNINFO] == "host=/var/run/postgresql"  # no user, port or password filled in
    assert env["POSTGRES_DBNAME"] == "from_env"
