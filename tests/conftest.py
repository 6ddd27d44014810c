"""Shared fixtures: one contract, every store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from tests.stores import store_url


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow", action="store_true", default=False,
        help="also run the long trials marked slow (many-process races, kill -9 loops, "
             "failovers, large random differential runs); LEDGER_TEST_SLOW=1 does the same. "
             ".ci/run includes them; ./scripts/test.sh alone leaves them out.")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the tests marked slow unless asked for (``--slow``, ``LEDGER_TEST_SLOW=1``,
    or a ``-m`` expression, which then decides alone); pytest counts them as deselected."""
    if (config.getoption("--slow") or os.environ.get("LEDGER_TEST_SLOW") == "1"
            or config.getoption("markexpr")):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


STORES = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=STORES)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store URL, once per store kind."""
    with store_url(request.param, tmp_path) as found:
        yield found


@pytest.fixture
def ledger(url: str) -> Iterator[Ledger]:
    """A ledger over a fresh store, once per store kind."""
    with open_ledger(url) as opened:
        yield opened


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store another process (or the CLI) can open too."""
    with store_url(request.param, tmp_path) as found:
        yield found + ("&pool_size=2&max_overflow=2" if "?" in found else "")


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    """A fresh PostgreSQL schema URL (skips or fails as ``tests.stores`` says)."""
    with store_url("postgres", tmp_path) as found:
        yield found
