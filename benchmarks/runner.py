"""One benchmark run: every figure on every store asked for, beside its raw floor.

Per store: claims by 1, 2, 4 and 8 writer processes, each on a host of its own and all on
the same few shared hosts, each count right after the raw floor with as many writers; then,
in this process, single claims and moves beside the one-row floor, and batched claims
beside ``executemany`` and ``COPY`` of as many rows, each timed in alternating slices with
its floors so that all share the machine's load of the moment; then the cost of history on
two fresh twin stores.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from allocation_ledger.application.grouping import GroupCommit
from allocation_ledger.application.ledger import Ledger
from allocation_ledger.bootstrap import open_ledger
from benchmarks import history
from benchmarks import targets as cpu_targets
from benchmarks.breakdown import claim_breakdown
from benchmarks.figures import figure, targets
from benchmarks.floor import RawTable, floor_target, open_raw_table
from benchmarks.moves import Mover
from benchmarks.scratch import Opener, scratch_store
from benchmarks.settings import Settings
from benchmarks.stats import (
    Sample,
    combine,
    interleaved,
    paired,
    run_for,
    run_together,
)
from benchmarks.unchained import open_unchained
from benchmarks.workload import (
    a_host,
    batch_claimer,
    claimer,
    id_claimer,
    shared_claimer,
    unrecorded_claimer,
)
from benchmarks.writers import CLAIMS, FLOOR, SHARED, run_writers

Progress = Callable[[str], None]
#: Rounds of the writer-process figures (each of ``duration / ROUNDS`` seconds).
ROUNDS = 2


def _quiet(_: str) -> None:
    """No progress output."""


def run(settings: Settings, progress: Progress = _quiet) -> dict[str, Any]:
    """Run the benchmark; the results as a JSON-ready dict."""
    started = datetime.now(UTC)
    stores: dict[str, Any] = {}
    ratios: dict[str, Any] = {}
    opener = Opener()
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
        workdir = settings.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            for kind in settings.stores:
                if settings.ratios != "only":
                    stores[kind] = bench_store(kind, settings, workdir, opener, progress)
                if settings.ratios != "skip":
                    ratios[kind] = cpu_targets.measure(kind, settings, workdir, progress)
        finally:
            opener.close()
    return {
        "meta": _meta(settings, started),
        "stores": stores,
        "targets": [t.to_dict() for kind, result in stores.items()
                    for t in targets(kind, result)],
        "ratios": ratios,
    }


def bench_store(kind: str, settings: Settings, workdir: Path, opener: Opener,
                progress: Progress) -> dict[str, Any]:
    """Every figure for one kind of store."""
    with scratch_store(kind, workdir, settings.postgres_url, "main") as url:
        target = floor_target(url)
        writers = _writers(url, target, kind, settings, progress)
        with opener.open(url) as ledger, closing(open_raw_table(target)) as table:
            progress(f"{kind}: single claims, moves and batched claims, beside the floor")
            single = paired(claimer(ledger, a_host(ledger)), table.insert, settings.duration)
            ids = _command_ids(ledger, settings)
            progress(f"{kind}: {settings.threads} threads claiming at once, beside the floor")
            threads = _threads(ledger, table, settings)
            moves = _moves(ledger, table.insert, settings)
            batches = {size: _batch(ledger, table, size, settings.duration)
                       for size in settings.batch_sizes}
            parts = claim_breakdown(ledger, a_host(ledger), settings.breakdown_claims)
    progress(f"{kind}: single claims with the hash chain, beside a twin without")
    chained = _chain_cost(kind, workdir, settings)
    progress(f"{kind}: cost of history (growing to {settings.grow_to:,} events)")
    with scratch_store(kind, workdir, settings.postgres_url, "small") as small, \
            scratch_store(kind, workdir, settings.postgres_url, "large") as large:
        grown = history.measure(opener, small, large, settings.small_history,
                                settings.grow_to, settings.history_claims)
    return {
        "single": figure(*single),
        "command_ids": ids,
        "chain": chained,
        "threads": threads,
        "writers": writers,
        "moves": {name: figure(*pair, commands_per_op=3) for name, pair in moves.items()},
        "batches": {str(n): found for n, found in batches.items()},
        "history": grown,
        "breakdown": parts,
    }


def _threads(ledger: Ledger, table: RawTable, settings: Settings) -> dict[str, Any]:
    """``settings.threads`` threads of this process claiming at once on shared hosts (their
    commands group-committed), beside one connection's one-row floor timed before and
    after; with how many commands an append carried."""
    hosts = [a_host(ledger, "threads") for _ in range(settings.shared_hosts)]
    commits = GroupCommit(ledger.store, ledger.policy)
    ledger.commits, was = commits, ledger.commits
    try:
        appends, grouped = commits.appends, commits.grouped
        floor = run_for(table.insert, settings.duration / 2)
        claims = run_together(
            [shared_claimer(ledger, hosts) for _ in range(settings.threads)],
            settings.duration)
        floor = combine([floor, run_for(table.insert, settings.duration / 2)])
    finally:
        ledger.commits = was
    found = figure(claims, floor)
    found["threads"] = settings.threads
    groups = commits.appends - appends
    found["grouped_per_append"] = round((commits.grouped - grouped) / groups, 2) if groups \
        else 0.0
    return found


def _batch(ledger: Ledger, table: RawTable, size: int, duration: float) -> dict[str, Any]:
    """Batched claims of ``size`` consumers per append beside ``size`` raw rows committed
    by ``executemany`` (the floor) and by ``COPY``, in one transaction each."""
    claims, many, copied = interleaved(
        [(batch_claimer(ledger, a_host(ledger), size), size),
         (lambda: table.insert_many(size), size),
         (lambda: table.copy_many(size), size)],
        duration, warmup=1)
    return figure(claims, many, also={"copy": copied})


def _chain_cost(kind: str, workdir: Path, settings: Settings) -> dict[str, Any] | None:
    """Single claims on a fresh chained store in alternating slices with single claims on
    its fresh unchained twin: ``vs_floor`` is chained over unchained."""
    if kind == "memory":
        return None  # the in-memory store keeps no chain
    with scratch_store(kind, workdir, settings.postgres_url, "chained") as url, \
            scratch_store(kind, workdir, settings.postgres_url, "unchained") as bare:
        ledger, twin = open_ledger(url), open_unchained(bare)
        try:
            return figure(*paired(claimer(ledger, a_host(ledger)), claimer(twin, a_host(twin)),
                                  settings.duration))
        finally:
            ledger.close()
            twin.close()


def _writers(url: str, target: str, kind: str, settings: Settings,
             progress: Progress) -> dict[str, Any]:
    """Claims by 1, 2, 4, 8 writer processes, each beside the floor with as many writers,
    on a host of their own and on ``settings.shared_hosts`` hosts they all claim on; in
    ``ROUNDS`` rounds so that all see the machine's changing load."""
    with open_ledger(url) as ledger:
        hosts = [a_host(ledger, "shared") for _ in range(settings.shared_hosts)]
    taken: dict[str, dict[int, list[Sample]]] = {
        role: {n: [] for n in settings.writers} for role in (FLOOR, CLAIMS, SHARED)}
    rounds = 1 if settings.quick else ROUNDS
    for round_ in range(rounds):
        for n in settings.writers:
            progress(f"{kind}: {n} writer process(es), round {round_ + 1} of {rounds}")
            seconds = settings.duration / rounds
            for role, where in ((FLOOR, target), (CLAIMS, url), (SHARED, url)):
                taken[role][n].append(run_writers(role, where, n, seconds, hosts))
    return {
        str(n): {"claims": figure(combine(taken[CLAIMS][n]), combine(taken[FLOOR][n])),
                 "shared": figure(combine(taken[SHARED][n]), combine(taken[FLOOR][n])),
                 "floor": combine(taken[FLOOR][n]).to_dict()}
        for n in settings.writers
    }


def _command_ids(ledger: Ledger, settings: Settings) -> dict[str, Any]:
    """Single claims with a caller's command id beside claims without one, and claims
    without one beside claims with no command record at all (the ledger before command
    ids), each pair in alternating slices."""
    with_ids, without = paired(id_claimer(ledger, a_host(ledger)),
                               claimer(ledger, a_host(ledger)), settings.duration)
    plain, unrecorded = paired(claimer(ledger, a_host(ledger)),
                               unrecorded_claimer(ledger, a_host(ledger)), settings.duration)
    return {
        "with_ids": with_ids.to_dict(), "without_ids": without.to_dict(),
        "ids_vs_without": round(with_ids.rate / without.rate, 4),
        "plain": plain.to_dict(), "unrecorded": unrecorded.to_dict(),
        "recorded_vs_unrecorded": round(plain.rate / unrecorded.rate, 4),
    }


def _moves(ledger: Ledger, floor: Callable[[], object],
           settings: Settings) -> dict[str, tuple[Sample, Sample]]:
    mover = Mover(ledger, a_host(ledger, "source"), a_host(ledger, "destination"))
    moves = {"confirm": paired(mover.confirm_cycle, floor, settings.duration),
             "revert": paired(mover.revert_cycle, floor, settings.duration)}
    mover.check()
    return moves


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
            "shared_hosts": settings.shared_hosts, "threads": settings.threads,
            "batch_sizes": list(settings.batch_sizes),
            "small_history": settings.small_history, "grow_to": settings.grow_to,
            "history_claims": settings.history_claims,
            "breakdown_claims": settings.breakdown_claims,
            "replay_events": list(settings.replay_events), "scale_hosts": settings.scale_hosts,
            "ratios": settings.ratios,
        },
    }


def _cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
