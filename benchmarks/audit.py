"""Benchmark the audit: replay throughput (events read, applied and checked per second) on a
large ledger, on SQLite and PostgreSQL.

    python -m benchmarks.audit [--events 100000] [--stores sqlite,postgresql] [--repeat 3]
                               [--pg-url postgresql://postgres@127.0.0.1:5432/ledger_test]
                               [--workdir DIR] [--json]

The ledger is written once through the service (in memory, the randomized workload of
``benchmarks/random_ledger.py``: claims, moves, evacuations, device and inventory
changes), then its events are copied as they are into a SQLite file and a fresh PostgreSQL
schema, and each is audited ``--repeat`` times from a cold store. With ``--workdir`` the
SQLite copy is kept and reused by the next run. Wall-clock and CPU throughput are both
printed: on a busy machine the CPU figure is the steadier one. Each audit is timed in
alternation with an audit that leaves the hash chain out, so the chain's share of the
replay is measured in the same run (``chain`` is the ratio of the two CPU rates).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from eventsourcing.persistence import StoredEvent

from allocation_ledger import open_ledger
from allocation_ledger.adapters.decoding import Decoder
from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.audit import audit
from allocation_ledger.audit.ledger_events import notifications
from allocation_ledger.bootstrap import open_store
from benchmarks.random_ledger import populate
from benchmarks.settings import default_postgres_url

TARGET = 20_000
BATCH = 2000


def main() -> int:
    """Build, copy, audit, report."""
    args = _parser().parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-audit-"))
    workdir.mkdir(parents=True, exist_ok=True)
    sqlite_url = f"sqlite:///{workdir / f'audit-{args.events}.db'}"
    events = _source(sqlite_url, args.events, args.seed)
    results = []
    for kind in args.stores.split(","):
        if kind == "sqlite":
            results.append(_bench("sqlite", sqlite_url, args.repeat))
        elif kind in ("postgresql", "postgres"):
            results.append(_bench_postgres(args.pg_url, sqlite_url, args.repeat))
        else:
            raise SystemExit(f"unknown store {kind!r}")
    if args.json:
        print(json.dumps({"events": events, "target": TARGET, "results": results}, indent=2))
    else:
        print(f"audit replay of {events:,} events (target {TARGET:,} events/s checked)")
        for r in results:
            verdict = "meets" if r["events_per_second"] >= TARGET else "BELOW"
            print(f"  {r['store']:<11} best {r['seconds']:6.2f} s  {r['events_per_second']:>8,} "
                  f"events/s wall, {r['events_per_cpu_second']:>8,} per CPU-s  ({verdict} "
                  f"target; findings {r['findings']}); raw read and decode "
                  f"{r['read_and_decode_per_second']:,}/s, audit at {r['vs_read']:.2f} of it")
            bare = r["unchained"]
            print(f"  {'':<11} without the chain {bare['events_per_second']:>8,} events/s "
                  f"wall, {bare['events_per_cpu_second']:>8,} per CPU-s: with it "
                  f"{r['chain_ratio'] * 100:.1f}% of the rate (CPU)")
    return 0 if all(r["findings"] == 0 for r in results) else 1


def _source(sqlite_url: str, events: int, seed: int) -> int:
    """Make sure the SQLite copy of the benchmark ledger exists; its number of events."""
    store, _ = open_store(sqlite_url)
    try:
        have = store.recorder.max_notification_id() or 0
        if have >= events:
            print(f"reusing {have:,} events in {sqlite_url}", file=sys.stderr)
            return have
        if have:
            raise SystemExit(f"{sqlite_url} holds {have} events, fewer than asked: remove it")
        started = time.perf_counter()
        with open_ledger("memory://") as ledger:
            while (ledger.store.recorder.max_notification_id() or 0) < events:
                populate(ledger, seed, steps=max(events // 8, 500))
                seed += 1
            _copy(ledger.store, store)
        print(f"wrote {store.recorder.max_notification_id():,} events through the service in "
              f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
        return store.recorder.max_notification_id() or 0
    finally:
        store.close()


def _copy(source: EventStore, target: EventStore) -> None:
    """Every event of ``source``, stored as is into ``target``, in ledger order."""
    start = 1
    while True:
        batch = source.recorder.select_notifications(start, BATCH)
        if not batch:
            return
        target.recorder.insert_events([
            StoredEvent(n.originator_id, n.originator_version, n.topic, n.state) for n in batch])
        start = batch[-1].id + 1


def _bench(name: str, url: str, repeat: int) -> dict[str, Any]:
    """The best of ``repeat`` audits, each after a raw read-and-decode of the same events
    (the floor: what reading the ledger costs before any replay or check)."""
    best: dict[str, Any] = {}
    bare: dict[str, Any] = {}
    for _ in range(repeat):  # chained and unchained audits alternate
        best = _best(best, _timed(name, url, verify_chain=True))
        bare = _best(bare, _timed(name, url, verify_chain=False))
    floor = _read_and_decode(url)
    return {**best, "unchained": bare, "chain_ratio": round(
        best["events_per_cpu_second"] / bare["events_per_cpu_second"], 3),
        "read_and_decode_per_second": round(floor),
        "vs_read": round(best["events_per_second"] / floor, 3) if floor else None}


def _read_and_decode(url: str) -> float:
    """The floor: events per second of reading and decoding the ledger, no replay."""
    store, _ = open_store(url)
    try:
        read = time.perf_counter()
        decoder, events = Decoder(store.mapper), 0
        for events, notification in enumerate(notifications(store), 1):  # noqa: B007
            decoder(notification)
        return events / (time.perf_counter() - read)
    finally:
        store.close()


def _timed(name: str, url: str, *, verify_chain: bool) -> dict[str, Any]:
    store, _ = open_store(url)  # cold: a new connection, nothing cached
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        report = audit(store, stale_after=None, verify_chain=verify_chain)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        store.close()
    return {"store": name, "events": report.events, "seconds": round(wall, 3),
            "events_per_second": round(report.events / wall),
            "events_per_cpu_second": round(report.events / cpu),
            "findings": len(report.findings)}


def _best(best: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
    return found if not best or found["seconds"] < best["seconds"] else best


def _bench_postgres(base: str, sqlite_url: str, repeat: int) -> dict[str, Any]:
    schema = f"bench_audit_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = f"{base}?schema={schema}&pool_size=2&max_overflow=2"
    try:
        source, _ = open_store(sqlite_url)
        target, _ = open_store(url)
        try:
            _copy(source, target)
        finally:
            source.close()
            target.close()
        return _bench("postgresql", url, repeat)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000,
                        help="at least this many events in the ledger (default 100000)")
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--repeat", type=int, default=3, help="audits per store (best wins)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pg-url", default=default_postgres_url())
    parser.add_argument("--workdir", default=None, help="keep (and reuse) the SQLite copy here")
    parser.add_argument("--json", action="store_true")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
