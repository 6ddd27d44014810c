"""Writers on shared hosts with turns and without, in one run.

    python -m benchmarks.turns [--stores sqlite,postgresql] [--writers 8] [--hosts 10]
                               [--rounds 3] [--seconds 5]
                               [--pg-url postgresql://postgres@127.0.0.1:5432/ledger_test]

T3's contended shape (``benchmarks/writers.py``, role ``shared``): ``--writers`` processes,
each claiming new instances on hosts picked at random among ``--hosts`` that all of them
claim on, once with the default write policy (writers to a contended host take turns,
``adapters/turns.py``) and once with ``WritePolicy(takes_turns=False)``, alternating, for
``--rounds`` rounds on a fresh scratch store of each kind. Prints, per side: claims/s,
appends per claim (refused ones counted: 1.0 is no clash), CPU per claim (the writers'
own and, on PostgreSQL, their backends'), and the runs in which a writer gave up on a
host after the policy's attempts (``ConcurrentUpdate``), which stop that run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from allocation_ledger.bootstrap import open_ledger
from benchmarks.scratch import scratch_store
from benchmarks.workload import a_host
from benchmarks.writers import SHARED, run_writers

SIDES = {"turns": True, "no turns": False}


def measure(url: str, writers: int, hosts: int, rounds: int,
            seconds: float) -> dict[str, list[dict[str, float] | str]]:
    """Each side's runs on one store: figures, or why a run stopped."""
    with open_ledger(url) as ledger:
        shared = [a_host(ledger, "shared") for _ in range(hosts)]
    found: dict[str, list[dict[str, float] | str]] = {side: [] for side in SIDES}
    for round_ in range(rounds):
        order = list(SIDES) if round_ % 2 == 0 else list(reversed(SIDES))
        for side in order:
            try:
                s = run_writers(SHARED, url, writers, seconds, shared, SIDES[side])
            except RuntimeError as err:
                gave_up = "ConcurrentUpdate" in str(err)
                found[side].append("a writer gave up (ConcurrentUpdate)" if gave_up
                                   else str(err).splitlines()[0])
                continue
            found[side].append({"rate": s.rate, "appends": s.appends / s.count,
                                "cpu_us": (s.client_cpu + s.backend_cpu) / s.count * 1e6})
    return found


def report(store: str, found: dict[str, list[dict[str, float] | str]]) -> str:
    lines = [f"{store}: side, claims/s, appends per claim, CPU us per claim (median of "
             "the runs that finished), runs stopped"]
    for side, runs in found.items():
        done = [r for r in runs if isinstance(r, dict)]
        stopped = [r for r in runs if isinstance(r, str)]

        def median(key: str, done: list[dict[str, float]] = done) -> str:
            return f"{statistics.median(r[key] for r in done):,.2f}" if done else "-"

        lines.append(f"  {side:9} {median('rate'):>10} {median('appends'):>6} "
                     f"{median('cpu_us'):>10}   {len(stopped)} of {len(runs)}"
                     + (f": {stopped[0]}" if stopped else ""))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/ledger_test")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        for store in args.stores.split(","):
            with scratch_store(store, Path(workdir), args.pg_url, "turns") as url:
                found = measure(url, args.writers, args.hosts, args.rounds, args.seconds)
            print(report(store, found), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
