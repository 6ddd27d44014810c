"""Fixtures for the audit tests: durable stores (the CLI opens its own connection) and a
frozen clock the event store can record."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from eventsourcing.persistence import Transcoding
from freezegun import freeze_time
from freezegun.api import FakeDatetime, FrozenDateTimeFactory

from allocation_ledger import Ledger, open_ledger

#: The moment the frozen clock starts at; tests name times as minutes after it.
T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    """``minutes`` after :data:`T0`."""
    return T0 + timedelta(minutes=minutes)


class FakeDatetimeAsISO(Transcoding):
    """freezegun's datetimes are a subclass the store's JSON transcoder does not know; this
    stores them exactly as real datetimes are stored (same name, same format)."""

    type = FakeDatetime
    name = "datetime_iso"

    def encode(self, obj: datetime) -> str:
        return obj.isoformat()

    def decode(self, data: str) -> datetime:
        return datetime.fromisoformat(data)


@pytest.fixture
def durable_ledger(durable_url: str) -> Iterator[Ledger]:
    """A ledger over :func:`durable_url`."""
    with open_ledger(durable_url) as opened:
        yield opened


@pytest.fixture
def clock(ledger: Ledger) -> Iterator[FrozenDateTimeFactory]:
    """Time frozen at :data:`T0`; ``clock.move_to(at(5))`` moves it."""
    with frozen(ledger) as factory:
        yield factory


def frozen(ledger: Ledger, start: datetime = T0) -> Any:
    """A freezegun clock whose datetimes ``ledger`` can store."""
    ledger.store.mapper.transcoder.register(FakeDatetimeAsISO())  # type: ignore[attr-defined]
    return freeze_time(start)
