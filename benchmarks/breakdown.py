"""Where a single claim's time goes, measured with clocks rather than a sampler.

The store's recorders and its mapper are wrapped, on this one store only, by timers that
count their own time without what they call: a claim's time splits into database calls
(each a round trip, server time included), event encoding and decoding (the ``eventsourcing``
mapper and JSON transcoder), and everything else, which is Python: input validation
(pydantic), the domain's decision, event objects, aggregate copies and the application code.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from allocation_ledger.application.ledger import Ledger
from benchmarks.workload import claim_new

WARMUP = 20


class Clock:
    """Exclusive time and calls per label: a wrapped call nested in another is not counted
    twice."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._nested: list[float] = []

    def wrap(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function``, timed under ``label``."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = self._clock()
            self._nested.append(0.0)
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = self._clock() - start
                inner = self._nested.pop()
                self.seconds[label] += elapsed - inner
                self.calls[label] += 1
                if self._nested:
                    self._nested[-1] += elapsed

        return timed


@contextmanager
def clocked(ledger: Ledger, timer: Callable[[], float] = time.perf_counter) -> Iterator[Clock]:
    """Time the ledger's store calls meanwhile (instance attributes, removed afterwards) by
    ``timer`` (wall time; ``time.thread_time`` for CPU)."""
    clock = Clock(timer)
    store = ledger.store
    targets: list[tuple[object, str, str]] = [
        (store.recorder, "select_events", "database: read events"),
        (store.recorder, "insert_events", "database: append (one transaction)"),
        (store.mapper, "to_domain_event", "eventsourcing: decode events"),
        (store.mapper, "to_stored_event", "eventsourcing: encode events"),
    ]
    if store.snapshots is not None:
        targets.append((store.snapshots.recorder, "select_events", "database: read snapshot"))
    for owner, name, label in targets:
        setattr(owner, name, clock.wrap(label, getattr(owner, name)))
    try:
        yield clock
    finally:
        for owner, name, _ in targets:
            delattr(owner, name)


def claim_breakdown(ledger: Ledger, host: str, claims: int,
                    timer: Callable[[], float] = time.perf_counter) -> dict[str, Any]:
    """Microseconds per claim in each part, for ``claims`` new claims on ``host``, by
    ``timer`` (wall time; ``time.thread_time`` for this thread's CPU, where the database
    parts are then the client's side of each call only)."""
    for _ in range(WARMUP):
        claim_new(ledger, host)
    with clocked(ledger, timer) as clock:
        start = timer()
        for _ in range(claims):
            claim_new(ledger, host)
        total = timer() - start
    parts = {label: seconds for label, seconds in clock.seconds.items()}
    parts["python: validation, decision, events, copies"] = total - sum(parts.values())
    return {
        "claims": claims,
        "us_per_claim": round(total / claims * 1e6, 1),
        "parts_us": {k: round(v / claims * 1e6, 1) for k, v in sorted(parts.items())},
        "calls_per_claim": {k: round(v / claims, 2) for k, v in sorted(clock.calls.items())},
    }
