"""Reading the ledger in order, a page ahead of the runner on PostgreSQL.

While the runner applies one page of events and writes their rows, a thread fetches and
decodes the next page, so the database's round trips overlap the runner's work. That pays
only where the read waits for a server: a SQLite or in-memory read is the process's own
Python work under the GIL, which a second thread only contends for (a rebuild of 100,000
events took 15% more CPU and no less time read ahead), so those stores are read page by
page in the runner's thread.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from eventsourcing.application import Application
from eventsourcing.persistence import Notification
from eventsourcing.postgres import PostgresApplicationRecorder

from allocation_ledger.adapters.decoding import UNREADABLE, Decoder
from allocation_ledger.adapters.notifications import chain_hash
from allocation_ledger.domain.errors import UnreadableEvent

#: (notification id, decoded domain event)
Event = tuple[int, Any]
#: How JSON writes a NUL character; the ledger refuses NUL at its boundary, but a ledger
#: written before that may hold one, and PostgreSQL text cannot.
NUL_IN_JSON = b"\\u0000"
#: What a NUL in an old event becomes in the read models (on every database alike).
NUL_REPLACEMENT = "\ufffd"
log = logging.getLogger(__name__)


def decode(store: Application[Any], notifications: Sequence[Notification],
           hashes: dict[int, bytes | None] | None = None) -> list[Event]:
    """The domain events of these notifications, with their positions; ``hashes`` (if
    given) gets the chain hash at each position."""
    to_event = Decoder(store.mapper)
    if hashes is not None:
        hashes.update((n.id, chain_hash(n)) for n in notifications)
    try:
        return [(n.id, _storable(n, to_event(n)) if NUL_IN_JSON in n.state else to_event(n))
                for n in notifications]
    except UNREADABLE:  # rare: find which record it was, to say where the read side stops
        for n in notifications:
            try:
                to_event(n)
            except UNREADABLE as err:
                raise UnreadableEvent(n.id, str(n.originator_id), n.topic,
                                      f"{type(err).__name__}: {err}") from err
        raise


def _storable(notification: Notification, event: Any) -> Any:
    """The event with every NUL in its text replaced by U+FFFD, so one bad old record can
    never stop the read side (a bytes search per record finds the rare ones); logged with
    its position so an operator can find it."""
    fields = {k: v for k, v in vars(event).items() if _has_nul(v)}
    if fields:
        log.warning("event at position %s (stream %s, %s) holds a NUL in %s: stored in the "
                    "read models as U+FFFD", notification.id, notification.originator_id,
                    notification.topic, ", ".join(sorted(fields)))
        vars(event).update({k: _replaced(v) for k, v in fields.items()})
    return event


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_nul(v) for v in value)
    return False


def _replaced(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", NUL_REPLACEMENT)
    if isinstance(value, dict):
        return {_replaced(k): _replaced(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_replaced(v) for v in value)
    return value


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off meanwhile (if it was on), for a replay of the
    ledger (the read models' catch-up, the audit). A replay allocates several objects per
    event, none in a reference cycle, and keeps hundreds of thousands of them (rows in a
    cache, the state of the whole cloud): each full collection walks them all for nothing,
    a fifth of a large rebuild (an audit left no cyclic garbage behind on the benchmarks'
    ledgers)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


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

    if not isinstance(store.recorder, PostgresApplicationRecorder):
        start = after + 1
        while start <= head:
            page, hashed = fetch(start)
            if not page:
                return
            if hashes is not None:
                hashes.update(hashed)
            yield page
            start = page[-1][0] + 1
        return
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
