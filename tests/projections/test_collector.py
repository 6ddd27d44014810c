"""A large catch-up pauses Python's cyclic garbage collector, and leaves it as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.projections import runner
from allocation_ledger.projections.readmodels import ReadModels
from tests.builders import a_host, an_instance


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    with open_ledger("memory://") as opened:
        host = a_host(opened, vcpu=64)
        for _ in range(10):
            an_instance(opened, {host: {"VCPU": 1}})
        yield opened


@pytest.mark.parametrize("pause_gc, pause_from, paused", [
    (True, 1, True),
    (False, 1, False),
    (True, 10_000, False),  # a follower's small catch-up leaves it alone
])
def test_the_collector_is_off_during_a_large_catch_up_only(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch, pause_gc: bool, pause_from: int,
        paused: bool) -> None:
    monkeypatch.setattr(runner, "PAUSE_GC_FROM", pause_from)
    seen: list[bool] = []
    assert gc.isenabled()
    ReadModels.of(ledger).rebuild(batch_size=5, pause_gc=pause_gc,
                                  progress=lambda _position, _head: seen.append(gc.isenabled()))
    assert seen and set(seen) == {not paused}
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "PAUSE_GC_FROM", 1)
    gc.disable()
    try:
        ReadModels.of(ledger).rebuild(batch_size=5)
        assert not gc.isenabled()
    finally:
        gc.enable()
