"""Samples of timed operations: rate and latency percentiles, and the loop that takes them."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sample:
    """``count`` operations of ``items`` each (claims, say) done in ``seconds`` of wall time,
    with one latency per operation."""

    count: int
    seconds: float
    latencies: tuple[float, ...]
    items: int = 1
    #: appends asked of the store while it was taken, refused ones too (0: not counted)
    appends: int = 0
    #: CPU seconds the client processes and their database backends spent meanwhile
    #: (``benchmarks/cpu.py``; 0: not measured)
    client_cpu: float = 0.0
    backend_cpu: float = 0.0

    @property
    def rate(self) -> float:
        """Items per second."""
        return self.count * self.items / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, p: float) -> float:
        """Latency at percentile ``p`` (0-100), nearest rank, in seconds."""
        if not self.latencies:
            return math.nan
        ordered = sorted(self.latencies)
        rank = max(math.ceil(p / 100 * len(ordered)), 1)
        return ordered[rank - 1]

    def to_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready numbers (latencies in milliseconds)."""
        return {
            "count": self.count,
            "items_per_op": self.items,
            "seconds": round(self.seconds, 4),
            "rate": round(self.rate, 2),
            "p50_ms": _ms(self.percentile(50)),
            "p95_ms": _ms(self.percentile(95)),
            "p99_ms": _ms(self.percentile(99)),
        }


def _ms(seconds: float) -> float | None:
    return None if math.isnan(seconds) else round(seconds * 1000, 4)


def merge(samples: list[Sample], wall_seconds: float) -> Sample:
    """Samples taken at the same time by several writers, as one (rate over the wall time)."""
    latencies = tuple(x for s in samples for x in s.latencies)
    return Sample(sum(s.count for s in samples), wall_seconds, latencies,
                  samples[0].items if samples else 1, sum(s.appends for s in samples),
                  sum(s.client_cpu for s in samples), sum(s.backend_cpu for s in samples))


def combine(samples: list[Sample]) -> Sample:
    """Samples taken one after the other, as one (rate over their summed time)."""
    return merge(samples, sum(s.seconds for s in samples))


def run_for(operation: Callable[[], object], duration: float, *, items: int = 1,
            min_count: int = 3) -> Sample:
    """Run ``operation`` back to back for ``duration`` seconds (and at least ``min_count``
    times), timing each call."""
    latencies: list[float] = []
    clock = time.perf_counter
    start = clock()
    deadline = start + duration
    while True:
        before = clock()
        operation()
        after = clock()
        latencies.append(after - before)
        if after >= deadline and len(latencies) >= min_count:
            break
    return Sample(len(latencies), clock() - start, tuple(latencies), items)


def paired(operation: Callable[[], object], floor: Callable[[], object], duration: float,
           *, items: int = 1, slices: int = 10, warmup: int = 3) -> tuple[Sample, Sample]:
    """Time ``operation`` and the raw ``floor`` in alternating slices for ``duration``
    seconds each, so that whatever else the machine does weighs on both alike; returns
    (operation, floor) samples."""
    mine, floors = interleaved([(operation, items), (floor, 1)], duration, slices=slices,
                               warmup=warmup)
    return mine, floors


def interleaved(operations: list[tuple[Callable[[], object], int]], duration: float, *,
                slices: int = 10, warmup: int = 3) -> list[Sample]:
    """Time several (operation, items per call) in turns for ``duration`` seconds each:
    ``slices`` rounds, each giving every operation a slice, the order rotating from round
    to round so that none always runs first; one sample per operation, in order."""
    for _ in range(warmup):
        for operation, _ in operations:
            operation()
    taken: list[list[Sample]] = [[] for _ in operations]
    for i in range(slices):
        shift = i % len(operations)
        for k in [*range(shift, len(operations)), *range(shift)]:
            operation, items = operations[k]
            taken[k].append(run_for(operation, duration / slices, items=items, min_count=1))
    return [combine(samples) for samples in taken]


def run_together(operations: list[Callable[[], object]], duration: float) -> Sample:
    """Run each operation in a thread of its own, all starting at once, for ``duration``
    seconds; one sample (rate over the wall time from the first start to the last end)."""
    barrier = threading.Barrier(len(operations))
    taken: list[tuple[float, Sample]] = []

    def work(operation: Callable[[], object]) -> None:
        barrier.wait()
        start = time.perf_counter()
        taken.append((start, run_for(operation, duration, min_count=1)))

    threads = [threading.Thread(target=work, args=(op,)) for op in operations]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if len(taken) != len(operations):
        raise RuntimeError(f"{len(operations) - len(taken)} bench threads failed")
    wall = max(s + x.seconds for s, x in taken) - min(s for s, _ in taken)
    return merge([x for _, x in taken], wall)
