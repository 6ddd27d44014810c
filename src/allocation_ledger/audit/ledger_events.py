"""Reading the ledger in order: notifications in batches, decoded into domain events.

The ledger is the store's application sequence: every event of every stream, numbered by
its position (the notification id). Positions may have gaps (PostgreSQL sequences skip
numbers of rolled-back transactions) but never go back, and one command's events are
always consecutive (the store serialises appends).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification

from allocation_ledger.adapters.decoding import UNREADABLE, Decoder
from allocation_ledger.adapters.eventstore import EventStore

BATCH = 5000


@dataclass(frozen=True)
class Entry:
    """One ledger event and its position; ``error`` says why it could not be decoded."""

    position: int
    stream: UUID
    version: int
    topic: str
    event: Any  # a decoded domain event (Provider.Event or Consumer.Event); None if unreadable
    error: str | None = None

    @property
    def time(self) -> datetime | None:
        """When the event happened (``None`` if it could not be decoded)."""
        return self.event.timestamp if self.event is not None else None


def notifications(
    store: EventStore, start: int = 1, stop: int | None = None, batch: int = BATCH
) -> Iterator[Notification]:
    """Raw notifications from ``start`` to ``stop`` (inclusive), in order, without decoding."""
    for found in batches(store, start, stop, batch):
        yield from found


def batches(store: EventStore, start: int = 1, stop: int | None = None,
            batch: int = BATCH) -> Iterator[Sequence[Notification]]:
    """:func:`notifications` as the store reads them: ``batch`` at a time, none empty."""
    while stop is None or start <= stop:
        found = store.recorder.select_notifications(start, batch, stop=stop)
        if not found:
            return
        yield found
        start = found[-1].id + 1


def decode(store: EventStore, notification: Notification,
           decoder: Decoder | None = None) -> Entry:
    """Decode one notification; an undecodable one becomes an entry with ``error`` set."""
    try:
        event = (decoder or Decoder(store.mapper))(notification)
    except UNREADABLE as err:
        # The audit must report a bad record and go on, whatever the library raised for it
        # (an unknown topic, broken JSON, a field that does not fit or is missing).
        return _entry(notification, None, why(err))
    return _entry(notification, event, None)


def why(err: Exception) -> str:
    """What an undecodable record's error says, as an entry's ``error``."""
    return f"{type(err).__name__}: {err}"


def _entry(notification: Notification, event: Any, error: str | None) -> Entry:
    """An :class:`Entry`, built as ``adapters.notifications`` builds a notification: without
    the frozen dataclass's per-field ``object.__setattr__`` (one for every event replayed)."""
    stream = notification.originator_id
    found = _new(Entry)
    _set(found, "__dict__", {
        "position": notification.id,
        "stream": stream if isinstance(stream, UUID) else UUID(str(stream)),
        "version": notification.originator_version, "topic": notification.topic,
        "event": event, "error": error})
    return found


_new, _set = object.__new__, object.__setattr__


def entries(store: EventStore, start: int = 1, stop: int | None = None,
            observe: Callable[[Notification], None] | None = None) -> Iterator[Entry]:
    """Decoded ledger events from ``start`` to ``stop`` (inclusive), in order; ``observe``
    sees each raw notification first (the chain check)."""
    decoder = Decoder(store.mapper)
    for notification in notifications(store, start, stop):
        if observe is not None:
            observe(notification)
        try:
            event = decoder(notification)
        except UNREADABLE as err:
            yield _entry(notification, None, why(err))
        else:
            yield _entry(notification, event, None)


def last_position(store: EventStore) -> int:
    """The position of the newest event (0 for an empty ledger)."""
    return store.recorder.max_notification_id() or 0


def position_at(store: EventStore, when: datetime) -> int:
    """The position of the last event recorded at or before ``when`` (0 if none was).

    Appends are serialised, so times grow with positions (up to clock skew between
    writers, and the microseconds inside one command): a binary search finds the cut, and
    a forward walk includes every following event stamped at the same moment.
    """
    low, high = 0, last_position(store)
    while low < high:  # the largest x whose first event at or after x is not later than when
        middle = (low + high + 1) // 2
        found = _first_at_or_after(store, middle)
        if found is not None and _time(store, found) <= when:
            low = middle
        else:
            high = middle - 1
    first = _first_at_or_after(store, low) if low else None
    low = first.id if first is not None else 0
    for notification in notifications(store, low + 1, batch=50):
        if _time(store, notification) > when:
            break
        low = notification.id
    return low


def _first_at_or_after(store: EventStore, position: int) -> Notification | None:
    found = store.recorder.select_notifications(position, 1)
    return found[0] if found else None


def _time(store: EventStore, notification: Notification) -> datetime:
    event: Any = store.mapper.to_domain_event(notification)
    stamp: datetime = event.timestamp
    return stamp


def as_uuid(value: UUID | str) -> UUID:
    """A stream id as a UUID, whichever form the store returned it in."""
    return value if isinstance(value, UUID) else UUID(str(value))
