"""Fixtures of the projection tests: a large randomized ledger, built once per session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from allocation_ledger import open_ledger
from benchmarks.random_ledger import populate

LARGE_SEED, LARGE_STEPS = 2024, 2500


@dataclass(frozen=True)
class LargeLedger:
    """A SQLite ledger of a few thousand events, and where its commands ended."""

    path: Path
    head: int
    command_ends: frozenset[int]

    @property
    def url(self) -> str:
        """Its store URL."""
        return f"sqlite:///{self.path}"


@pytest.fixture(scope="session")
def large_ledger(tmp_path_factory: pytest.TempPathFactory) -> LargeLedger:
    """A ledger of ``LARGE_STEPS`` random commands (copy the file before writing to it)."""
    path = tmp_path_factory.mktemp("large") / "ledger.db"
    with open_ledger(f"sqlite:///{path}") as ledger:
        world = populate(ledger, LARGE_SEED, LARGE_STEPS, hosts=6)
        head = ledger.store.recorder.max_notification_id() or 0
    return LargeLedger(path, head, frozenset(world.command_ends))
