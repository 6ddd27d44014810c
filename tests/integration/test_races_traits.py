"""Trait and aggregate writes racing on one store (SQLite, PostgreSQL): the store's unique
key decides, never a lock in Python. Two creations of one custom trait: one creates it,
the other finds it (no error, one event); writers of one provider's traits at the same
generation: exactly one wins, the others get ``ProviderGenerationConflict``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.domain.errors import ProviderGenerationConflict
from allocation_ledger.domain.ids import trait_stream_id
from tests.builders import a_host, new_id
from tests.stores import store_url

STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls on threads released together; each one's value or error."""
    barrier = threading.Barrier(len(calls))
    found: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait(timeout=30)
        try:
            found[i] = calls[i]()
        except Exception as err:  # the outcome under test
            found[i] = err

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return found


@pytest.mark.parametrize("kind", STORES)
def test_one_trait_created_by_many_at_once(kind: str, tmp_path: Path) -> None:
    with store_url(kind, tmp_path) as url:
        ledgers = [open_ledger(url) for _ in range(4)]
        try:
            for round_ in range(5):
                name = f"CUSTOM_RACE_{round_}"
                found = race([lambda lg=lg, n=name: lg.create_trait(n) for lg in ledgers])
                assert sorted(found) == [False, False, False, True], found
                events = list(ledgers[0].store.events.get(trait_stream_id(name)))
                assert len(events) == 1
        finally:
            for lg in ledgers:
                lg.close()


@pytest.mark.parametrize("kind", STORES)
def test_writers_of_one_providers_traits_at_one_generation(kind: str, tmp_path: Path) -> None:
    with store_url(kind, tmp_path) as url, open_ledger(url) as first, \
            open_ledger(url) as second:
        for _ in range(5):
            host = a_host(first)
            gen = first.provider(host).generation
            found = race([
                lambda h=host, g=gen: first.set_traits(h, ["HW_CPU_X86_AVX2"], g),
                lambda h=host, g=gen: second.set_aggregates(h, [new_id()], g),
                lambda h=host, g=gen: second.set_traits(h, ["HW_CPU_X86_SSE"], g),
            ])
            won = [f for f in found if not isinstance(f, Exception)]
            lost = [f for f in found if isinstance(f, Exception)]
            assert len(won) == 1, found
            assert all(isinstance(f, ProviderGenerationConflict) for f in lost), lost
            assert all(f.expected == gen and f.actual == won[0].generation for f in lost)
            assert first.provider(host).generation == won[0].generation == gen + 1


