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

#: (notification id, decoded domain event)
Event = tuple[int, Any]


def decode(store: Application[Any], notifications: Sequence[Notification]) -> list[Event]:
    """The domain events of these notifications, with their positions."""
    to_event = Decoder(store.mapper)
    return [(n.id, to_event(n)) for n in notifications]


def pages(store: Application[Any], after: int, head: int, size: int) -> Iterator[list[Event]]:
    """Every event after position ``after`` up to ``head``, in pages of ``size``, decoded."""
    if after >= head:
        return

    def fetch(start: int) -> list[Event]:
        return decode(store, store.recorder.select_notifications(start, size, stop=head))

    with ThreadPoolExecutor(1, thread_name_prefix="ledger-pages") as pool:
        ahead: Future[list[Event]] | None = pool.submit(fetch, after + 1)
        while ahead is not None:
            page = ahead.result()
            if not page:
                return
            last = page[-1][0]
            ahead = pool.submit(fetch, last + 1) if last < head else None
            yield page
