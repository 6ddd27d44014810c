"""The audit replays the store a batch at a time: what it tells on the way (progress) is
told at the events it names, and the garbage collector it pauses meanwhile is on again
afterwards (and left off if it was off)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.audit import audit, ledger_events, run
from benchmarks.random_ledger import populate


@pytest.fixture(scope="module")
def ledger() -> Iterator[Ledger]:
    """An in-memory ledger after 300 random commands."""
    with open_ledger("memory://") as opened:
        populate(opened, seed=20240502, steps=300)
        yield opened


def test_progress_is_told_at_every_nth_event_across_batches(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "PROGRESS_EVERY", 7)
    monkeypatch.setattr(run, "batches", lambda store, start, stop: ledger_events.batches(
        store, start, stop, batch=50))  # batches of 50: a progress falls across them
    end = ledger.store.recorder.max_notification_id() or 0
    told: list[tuple[int, int]] = []
    report = audit(ledger.store, start=5, progress=lambda p, e: told.append((p, e)))
    positions = list(range(5, end + 1))  # a memory store numbers events without gaps
    assert report.ok and report.events == len(positions)
    assert told == [(p, end) for p in positions[6::7]] + [(end, end)]


def test_the_collector_is_paused_during_the_replay_only(ledger: Ledger) -> None:
    enabled: list[bool] = []
    assert gc.isenabled()
    audit(ledger.store, progress=lambda p, e: enabled.append(gc.isenabled()))
    assert enabled and not any(enabled)
    assert gc.isenabled()
    gc.disable()
    try:
        audit(ledger.store)
        assert not gc.isenabled()
    finally:
        gc.enable()
