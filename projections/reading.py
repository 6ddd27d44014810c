"""Reading the ledger in order, a page ahead of the runner.

While the runner applies one page of events and writes their rows, a thread fetches and
decodes the next page, so the database's round trips overlap the runner's work.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from eventsourcing.application import Application
from eventsourcing.persistence import Notification

from allocation_ledger.adapters.decoding import Decoder
from allocation_ledger.adapters.notifications import chain_hash

#: (notification id, decoded domain event)
Event = tuple[int, Any]


def decode(store: Application[Any], notifications: Sequence[Notification],
           hashes: dict[int, bytes | None] | None = None) -> list[Event]:
    """The domain events of these notifications, with their positions; ``hashes`` (if
    given) gets the chain hash at each position."""
    to_event = Decoder(store.mapper)
    if hashes is not None:
        hashes.update((n.id, chain_hash(n)) for n in notifications)
    return [(n.id, to_event(n)) for n in notifications]


def pages(store: Application[Any], after: int, head: int, size: int,
          hashes: dict[int, bytes | None] | None = None) -> Iterator[list[Event]]:
    """Every event after position ``after`` up to ``head``, in pages of ``size``, decoded;
    ``hashes`` (if given) gets the chain hash at each position, in the caller's thread."""
    if after >= head:
        return

    def fetch(start: int) -> tuple[list[Event], dict[int, bytes | None]]:
        found = store.recorder.select_notifications(start, size, stop=head)
        return decode(store, found), (
            {n.id: chain_hash(n) for n in found} if hashes is not None else {})

    with ThreadPoolExecutor(1, thread_name_prefix="ledger-pages") as pool:
        ahead: Future[tuple[list[Event], dict[int, bytes | None]]] | None = pool.submit(
            fetch, after + 1)
        while ahead is not None:
            page, hashed = ahead.result()
            if not page:
                return
            if hashes is not None:
                hashes.update(hashed)
            last = page[-1][0]
            ahead = pool.submit(fetch, last + 1) if last < head else None
            yield page
