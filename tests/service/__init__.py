"""Service contract tests: the Ledger API on every store kind (memory, SQLite, PostgreSQL).

Scenario tests take the function-scoped ``ledger`` fixture (a fresh store each). Long rule
tables take ``shared_ledger`` instead: one store per module and store kind, each row working
on hosts and consumers of its own, so a table of fifty rows costs fifty commands rather than
fifty PostgreSQL schemas.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from allocation_ledger import Ledger, open_ledger
from tests.stores import store_url

STORES = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def shared_ledger_fixture() -> Any:
    """A module-scoped ``shared_ledger`` fixture; assign it in the module that uses it:
    ``shared_ledger = shared_ledger_fixture()``."""

    @pytest.fixture(scope="module", params=STORES, name="shared_ledger")
    def fixture(
        request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[Ledger]:
        with store_url(request.param, tmp_path_factory.mktemp("shared")) as url, open_ledger(
            url
        ) as ledger:
            yield ledger

    return fixture
