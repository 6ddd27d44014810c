"""One benchmark run: every figure on every store asked for, beside its raw floor.

Per store, in this order: the raw floor (1, 2, 4 writers), single claims (1, 2, 4 writer
processes), moves, batched claims, the floor again (the reference is the mean of both, so
drift during the run is shared), then the cost of history on two fresh twin stores.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from allocation_ledger.application.ledger import Ledger
from allocation_ledger.bench import history
from allocation_ledger.bench.figures import figure, reference_floor, targets
from allocation_ledger.bench.floor import floor_target
from allocation_ledger.bench.moves import Mover
from allocation_ledger.bench.scratch import Opener, scratch_store
from allocation_ledger.bench.settings import Settings
from allocation_ledger.bench.stats import Sample, run_for
from allocation_ledger.bench.workload import a_host, batch_claimer
from allocation_ledger.bench.writers import CLAIMS, FLOOR, run_writers

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    """No progress output."""


def run(settings: Settings, progress: Progress = _quiet) -> dict[str, Any]:
    """Run the benchmark; the results as a JSON-ready dict."""
    started = datetime.now(UTC)
    stores: dict[str, Any] = {}
    opener = Opener()
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
        workdir = settings.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            for kind in settings.stores:
                stores[kind] = bench_store(kind, settings, workdir, opener, progress)
        finally:
            opener.close()
    return {
        "meta": _meta(settings, started),
        "stores": stores,
        "targets": [t.to_dict() for kind, result in stores.items()
                    for t in targets(kind, result)],
    }


def bench_store(kind: str, settings: Settings, workdir: Path, opener: Opener,
                progress: Progress) -> dict[str, Any]:
    """Every figure for one kind of store."""
    with scratch_store(kind, workdir, settings.postgres_url, "main") as url:
        target = floor_target(url)
        floors = _in_processes(FLOOR, target, kind, "raw floor", settings, progress)
        claims = _in_processes(CLAIMS, url, kind, "single claims", settings, progress)
        with opener.open(url) as ledger:
            progress(f"{kind}: moves and batched claims")
            moves, batches = _moves(ledger, settings), _batches(ledger, settings)
        progress(f"{kind}: raw floor again")
        floor_end = run_writers(FLOOR, target, 1, settings.duration)
    progress(f"{kind}: cost of history (growing to {settings.grow_to:,} events)")
    with scratch_store(kind, workdir, settings.postgres_url, "small") as small, \
            scratch_store(kind, workdir, settings.postgres_url, "large") as large:
        grown = history.measure(opener, small, large, settings.small_history,
                                settings.grow_to, settings.history_claims)
    floor = reference_floor(floors.get(1, floor_end), floor_end)
    return {
        "floor": {"reference": floor.to_dict(), "end": floor_end.to_dict(),
                  **{str(n): figure(s, floor) for n, s in floors.items()}},
        "claims": {str(n): figure(s, floor) for n, s in claims.items()},
        "moves": {name: figure(s, floor, commands_per_op=3) for name, s in moves.items()},
        "batches": {str(n): figure(s, floor) for n, s in batches.items()},
        "history": {**grown, "floor_p50_ms": floor.to_dict()["p50_ms"]},
    }


def _in_processes(role: str, target: str, kind: str, label: str, settings: Settings,
                  progress: Progress) -> dict[int, Sample]:
    found: dict[int, Sample] = {}
    for n in settings.writers:
        progress(f"{kind}: {label}, {n} writer process(es)")
        found[n] = run_writers(role, target, n, settings.duration)
    return found


def _moves(ledger: Ledger, settings: Settings) -> dict[str, Sample]:
    mover = Mover(ledger, a_host(ledger, "source"), a_host(ledger, "destination"))
    moves = {"confirm": run_for(mover.confirm_cycle, settings.duration),
             "revert": run_for(mover.revert_cycle, settings.duration)}
    mover.check()
    return moves


def _batches(ledger: Ledger, settings: Settings) -> dict[int, Sample]:
    return {
        size: run_for(batch_claimer(ledger, a_host(ledger), size), settings.duration,
                      items=size)
        for size in settings.batch_sizes
    }


def _meta(settings: Settings, started: datetime) -> dict[str, Any]:
    return {
        "started": started.isoformat(timespec="seconds"),
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": _cpus(),
        "eventsourcing": version("eventsourcing"),
        "psycopg": version("psycopg"),
        "settings": {
            "stores": list(settings.stores), "quick": settings.quick,
            "duration": settings.duration, "writers": list(settings.writers),
            "batch_sizes": list(settings.batch_sizes),
            "small_history": settings.small_history, "grow_to": settings.grow_to,
            "history_claims": settings.history_claims,
        },
    }


def _cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
