"""Claims on a cloud of many hosts beside claims on ten, in one process and one store.

    python -m benchmarks.hosts [--hosts 30000] [--stores sqlite,postgresql] [--duration 10]
                               [--pg-url URL]

Registers ten hosts and ``--hosts`` more, claims once on every host (a long-running
process has met them all), then times new instances claiming on the hosts in turn, on the
ten and on the many, in alternating slices; prints both rates and their ratio. A claim on a
host in the process's cache reads nothing, so the ratio shows whether the cache holds the
cloud (``LEDGER_CACHE_SIZE``, default 200,000 aggregates; run with
``LEDGER_CACHE_SIZE=10000`` to see a cache smaller than the cloud).
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from allocation_ledger.application.ledger import Ledger
from allocation_ledger.bootstrap import open_ledger
from allocation_ledger.config import cache_size
from benchmarks.scratch import scratch_store
from benchmarks.settings import default_postgres_url
from benchmarks.stats import paired
from benchmarks.workload import a_host, claim_new


def main() -> int:
    """Register, warm up, time, print."""
    args = _parser().parse_args()
    print(f"aggregate cache: {cache_size():,} entries")
    with tempfile.TemporaryDirectory(prefix="bench-hosts-") as tmp:
        for kind in args.stores.split(","):
            with scratch_store(kind, Path(tmp), args.pg_url, "hosts") as url, \
                    open_ledger(url) as ledger:
                started = time.perf_counter()
                few = [a_host(ledger) for _ in range(10)]
                many = [a_host(ledger) for _ in range(args.hosts)]
                for host in few + many:
                    claim_new(ledger, host)
                print(f"{kind}: registered and claimed on {len(few) + len(many):,} hosts in "
                      f"{time.perf_counter() - started:.0f} s")
                on_many, on_few = paired(_round_robin(ledger, many), _round_robin(ledger, few),
                                         args.duration)
                print(f"{kind}: claims/s on {len(many):,} hosts {on_many.rate:,.0f} "
                      f"(p50 {on_many.percentile(50) * 1000:.2f} ms), on 10 hosts "
                      f"{on_few.rate:,.0f} (p50 {on_few.percentile(50) * 1000:.2f} ms): "
                      f"ratio {on_many.rate / on_few.rate:.2f}")
    return 0


def _round_robin(ledger: Ledger, hosts: list[str]) -> Callable[[], object]:
    turn = itertools.cycle(hosts)
    return lambda: claim_new(ledger, next(turn))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=30_000)
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--duration", type=float, default=10.0,
                        help="seconds of claims on each side")
    parser.add_argument("--pg-url", default=default_postgres_url())
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
