"""One real server process per store kind (SQLite, PostgreSQL) for this package's tests;
each test makes its own providers and consumers with fresh UUIDs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.http.server import Client, running_server
from tests.stores import postgres_schema_url

STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(scope="module", params=STORES)
def server_port(request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The port of a server over a fresh store, once per store kind and test module."""
    if request.param == "sqlite":
        path: Path = tmp_path_factory.mktemp("http") / "ledger.db"
        with running_server(f"sqlite:///{path}") as port:
            yield port
    else:
        with postgres_schema_url() as url, running_server(url) as port:
            yield port


@pytest.fixture
def client(server_port: int) -> Iterator[Client]:
    """A client of the module's server."""
    c = Client(server_port)
    yield c
    c.close()


#: the body limit of :func:`limited_port`'s server
LIMITED_MAX_BODY = 2000


@pytest.fixture(scope="session")
def limited_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A server over SQLite with an admin token (``secret-admin``) and bodies of at most
    :data:`LIMITED_MAX_BODY` bytes: the one the limit and protocol tests share."""
    folder = tmp_path_factory.mktemp("limits")
    tokens = folder / "tokens"
    tokens.write_text("secret-admin nova admin\n")
    with running_server(f"sqlite:///{folder / 'ledger.db'}", str(tokens),
                        max_body=LIMITED_MAX_BODY) as port:
        yield port
