"""Rebuild throughput of the projections on SQLite and PostgreSQL, beside the raw rate of
inserting the same rows into plain tables (not a test: it prints figures).

    python -m benchmarks.projections [--steps 6000] [--seed 1] [--batch-size 5000] [--repeat 3]
        [--postgres-url postgresql://postgres@127.0.0.1:5432/ledger_test] [--keep DIR]

One randomized ledger (``benchmarks/random_ledger.py``) is written to SQLite and
copied event for event into a scratch PostgreSQL schema, so both stores rebuild the same
events. The target: a rebuild on PostgreSQL at no less than 40% of the raw rate of batched
INSERTs (executemany) of the very rows it wrote; the exit status is 1 when it is missed.
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from pathlib import Path

import psycopg

from allocation_ledger import open_ledger
from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.projections.store import open_engine
from benchmarks.random_ledger import populate
from benchmarks.rebuild import Figures, copy_events, measure

TARGET = 0.40


def main() -> int:
    """Build the ledger, measure both stores, print the figures."""
    args = _parser().parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(args.keep or scratch) / f"bench-{args.seed}-{args.steps}.db"
        with open_ledger(f"sqlite:///{path}") as ledger:
            if not ledger.store.recorder.max_notification_id():
                print(f"writing a ledger of {args.steps} random commands to {path}...")
                populate(ledger, args.seed, args.steps, hosts=8)
            results = {"sqlite": _measure(ledger.store, args)}
            schema = f"bench_proj_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(args.postgres_url, autocommit=True) as conn:
                conn.execute(f'CREATE SCHEMA "{schema}"')
            try:
                url = f"{args.postgres_url}?schema={schema}&pool_size=2"
                with open_ledger(url) as copy:
                    copy_events(ledger.store, copy.store)
                    results["postgresql"] = _measure(copy.store, args)
            finally:
                with psycopg.connect(args.postgres_url, autocommit=True) as conn:
                    conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    _print(results)
    figures = results["postgresql"]
    return 0 if figures.rebuild >= TARGET * figures.written.executemany else 1


def _measure(store: EventStore, args: argparse.Namespace) -> Figures:
    engine = open_engine(store.env)
    try:
        return measure(store, engine, args.batch_size, args.repeat)
    finally:
        engine.dispose()


def _print(results: dict[str, Figures]) -> None:
    print(f"{'store':<11}{'events':>7}{'batches':>8}{'rebuild ev/s':>13}  {'rows':<10}"
          f"{'rows':>7}{'executemany ev/s':>17}{'ratio':>7}{'COPY ev/s':>11}{'ratio':>7}")
    for store, f in results.items():
        for label, raw in (("written", f.written), ("per event", f.per_event)):
            copy, copy_ratio = ((f"{raw.copy:,.0f}", f"{f.rebuild / raw.copy:.0%}")
                                if raw.copy else ("-", "-"))
            print(f"{store:<11}{f.events:>7}{f.batches:>8}{f.rebuild:>13,.0f}  {label:<10}"
                  f"{raw.rows:>7}{raw.executemany:>17,.0f}"
                  f"{f.rebuild / raw.executemany:>7.0%}{copy:>11}{copy_ratio:>7}")
    print(f"ratio = rebuild / raw rate; target: PostgreSQL rebuild >= {TARGET:.0%} of the "
          "raw batched-INSERT rate")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres-url",
                        default="postgresql://postgres@127.0.0.1:5432/ledger_test")
    parser.add_argument("--keep", default=None, metavar="DIR",
                        help="keep (and reuse) the generated SQLite ledger in DIR")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
