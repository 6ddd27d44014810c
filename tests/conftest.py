"""Shared fixtures: one contract, every store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from tests.stores import store_url

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
