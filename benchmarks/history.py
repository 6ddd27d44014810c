"""The cost of history: does a claim get slower as the ledger (and the host's stream) grows?

Two twin ledgers start with the same ~1,000 events. One is then grown to a million events,
half of them on the host the claims land on. Claims are timed on the grown ledger before
its growth (the same ledger at 1,000 events) and after it; and, so that the machine's noise
moves both sides alike, after the growth in alternating slices against its small twin.

A fresh store (as in a new process: empty aggregate cache) must not replay the host's whole
stream: the first claim's reads are counted, and should be one snapshot plus at most a
snapshot interval of events.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from eventsourcing.persistence import AggregateRecorder

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.application.ledger import Ledger
from benchmarks.growth import grow, ledger_size
from benchmarks.scratch import Opener
from benchmarks.stats import Sample, run_for
from benchmarks.workload import a_host, claim_new, claimer, new_id

SLICE = 50
WARMUP = 20


def prepare(opener: Opener, url: str, events: int) -> str:
    """A host on a ledger grown to about ``events`` events; returns the host."""
    with opener.open(url) as ledger:
        host = a_host(ledger)
        grow(ledger, host, events)
    return host


@contextmanager
def counting_reads(store: EventStore) -> Iterator[list[int]]:
    """Count the stored events and snapshots ``store`` reads meanwhile (``[count]``)."""
    counter = [0]
    recorders: list[AggregateRecorder] = [store.recorder]
    if store.snapshots is not None:
        recorders.append(store.snapshots.recorder)
    for recorder in recorders:
        def counted(*args: Any, _select: Callable[..., Any] = recorder.select_events,
                    **kwargs: Any) -> Any:
            rows = _select(*args, **kwargs)
            counter[0] += len(rows)
            return rows

        setattr(recorder, "select_events", counted)  # noqa: B010 - an instance override
    try:
        yield counter
    finally:
        for recorder in recorders:
            delattr(recorder, "select_events")


def cold_claim(ledger: Ledger, host: str) -> dict[str, Any]:
    """The first claim on ``host`` through a fresh store: latency and rows read."""
    ledger.consumer(new_id())  # open the connection pool first: not part of the claim
    with counting_reads(ledger.store) as rows:
        start = time.perf_counter()
        claim_new(ledger, host)
        seconds = time.perf_counter() - start
    provider = ledger.provider(host)
    return {"ms": round(seconds * 1000, 3), "rows_read": rows[0],
            "host_stream_length": provider.generation}


def alternating(sides: list[tuple[Ledger, str]], claims: int) -> list[Sample]:
    """``claims`` claims on each (ledger, host), in alternating slices of ``SLICE``."""
    latencies: list[list[float]] = [[] for _ in sides]
    seconds = [0.0 for _ in sides]
    for ledger, host in sides:
        run_for(claimer(ledger, host), 0.0, min_count=WARMUP)
    for round_ in range(max(claims // SLICE, 1)):
        order = range(len(sides)) if round_ % 2 == 0 else reversed(range(len(sides)))
        for i in order:
            ledger, host = sides[i]
            sample = run_for(claimer(ledger, host), 0.0, min_count=SLICE)
            latencies[i].extend(sample.latencies)
            seconds[i] += sample.seconds
    return [Sample(len(x), s, tuple(x)) for x, s in zip(latencies, seconds, strict=True)]


def measure(opener: Opener, small_url: str, large_url: str, small_events: int,
            grow_to: int, claims: int) -> dict[str, Any]:
    """The history figures for a pair of fresh stores of the same kind."""
    small_host = prepare(opener, small_url, small_events)
    large_host = prepare(opener, large_url, small_events)
    with opener.open(large_url) as ledger:
        before_events = ledger_size(ledger)
        (before,) = alternating([(ledger, large_host)], claims)
        grow_start = time.perf_counter()
        grown = grow(ledger, large_host, grow_to)
        grow_seconds = time.perf_counter() - grow_start
    with opener.open(small_url) as small, opener.open(large_url) as large:
        cold = {"small": cold_claim(small, small_host), "large": cold_claim(large, large_host)}
        twin, after = alternating([(small, small_host), (large, large_host)], claims)
        twin_events = ledger_size(small)
    return {
        "events": {"before": before_events, "grown": grown, "twin": twin_events},
        "growth": {"seconds": round(grow_seconds, 2),
                   "events_per_second": round((grown - before_events) / grow_seconds, 1)},
        "before": before.to_dict(),
        "after": after.to_dict(),
        "twin": twin.to_dict(),
        "cold": cold,
        "ratio_p50_vs_twin": round(after.percentile(50) / twin.percentile(50), 3),
        "ratio_p50_vs_before": round(after.percentile(50) / before.percentile(50), 3),
        "ratio_p95_vs_twin": round(after.percentile(95) / twin.percentile(95), 3),
    }
