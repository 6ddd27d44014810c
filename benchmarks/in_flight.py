"""Benchmark ``Ledger.migrations_in_flight()`` on a ledger with many finished migrations.

    python -m benchmarks.in_flight [--migrations 10000] [--stale 20] [--url URL] [--repeat 5]

Builds (once per URL: an existing ledger of the same shape is reused) a ledger where one
instance was resized ``--migrations`` times, each move confirmed, and ``--stale`` other
instances were left mid-move; then times ``migrations_in_flight()`` from a cold process
state beside the floor: the one plain SQL query that reads the same rows (every migration
start and end) from the same database. Prints the median times and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from allocation_ledger import open_ledger
from allocation_ledger.application.catalog import RESOLVED
from allocation_ledger.application.ledger import Ledger
from allocation_ledger.domain.migration import Migration

WHO = {"actor": "bench_in_flight", "reason": "benchmark ledger"}


def build(ledger: Ledger, moves: int, stale: int) -> None:
    """``moves`` confirmed resizes of one instance, ``stale`` instances left mid-move."""
    hosts = [str(uuid.uuid4()) for _ in range(2)]
    for i, host in enumerate(hosts):
        ledger.register_provider(host, f"bench-{i}-{host[:8]}",
                                 inventories={"VCPU": {"total": 10_000}}, request=WHO)
    vm = str(uuid.uuid4())
    gen = ledger.claim(vm, {hosts[0]: {"VCPU": 1}}, None, project_id="p", user_id="u",
                       request=WHO).generation
    for i in range(moves):
        migration = str(uuid.uuid4())
        ledger.swap(vm, migration, gen or 0, kind="resize", request=WHO)
        gen = ledger.claim(vm, {hosts[(i + 1) % 2]: {"VCPU": 1}}, None, project_id="p",
                           user_id="u", request=WHO).generation
        ledger.confirm(migration, ledger.migration(migration).generation or 0, request=WHO)
        if i and i % 1000 == 0:
            print(f"  {i} migrations", file=sys.stderr, flush=True)
    for _ in range(stale):
        other = str(uuid.uuid4())
        view = ledger.claim(other, {hosts[0]: {"VCPU": 1}}, None, project_id="p",
                            user_id="u", request=WHO)
        ledger.swap(other, str(uuid.uuid4()), view.generation or 0, kind="migration",
                    request=WHO)


def floor_query(ledger: Ledger) -> int:
    """The plain SQL read of every migration start and end (what any answer must read)."""
    from eventsourcing.utils import get_topic

    topics = [get_topic(c) for c in (Migration.Started, *RESOLVED)]
    recorder = ledger.store.recorder
    rows = 0
    start = 1
    while True:
        batch = recorder.select_notifications(start, 5000, topics=topics)
        if not batch:
            return rows
        rows += len(batch)
        start = batch[-1].id + 1


def timed(fn: object, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        result = fn()  # type: ignore[operator]
        times.append(time.perf_counter() - began)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--migrations", type=int, default=10_000)
    parser.add_argument("--stale", type=int, default=20)
    parser.add_argument("--url", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    url = args.url or (f"sqlite:///{Path(tempfile.gettempdir())}/"
                       f"bench-in-flight-{args.migrations}-{args.stale}.db")
    with open_ledger(url) as ledger:
        if not ledger.store.recorder.max_notification_id():
            print(f"building {args.migrations} migrations in {url}", file=sys.stderr)
            build(ledger, args.migrations, args.stale)
    with open_ledger(url) as ledger:  # a cold cache, as a new process would have
        seconds, found = timed(ledger.migrations_in_flight, args.repeat)
        floor, rows = timed(lambda: floor_query(ledger), args.repeat)
    assert isinstance(found, list) and len(found) == args.stale, found
    print(f"{url}: {args.migrations} finished + {args.stale} in flight")
    print(f"  migrations_in_flight()  {seconds * 1000:9.1f} ms  ({len(found)} found)")
    print(f"  floor: plain read       {floor * 1000:9.1f} ms  ({rows} rows)")
    print(f"  ratio                   {seconds / floor:9.2f}x the floor")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
