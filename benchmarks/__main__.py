"""``allocation-ledger bench``: claims, moves, batches and the cost of history, beside the
raw database.

    allocation-ledger bench [--quick] [--stores sqlite,postgresql] [--out FILE]

Every store is a fresh scratch store (a SQLite file in a temporary directory, a new schema
in the PostgreSQL database of ``--postgres-url``, or of ``--url`` when that names
PostgreSQL), removed afterwards. Prints a table, writes JSON (default
``bench-results/bench.json``) and, with ``--check``, exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from allocation_ledger.cli import values

if TYPE_CHECKING:
    from allocation_ledger.bench import settings

NAME = "bench"
HELP = "benchmark claims, moves, batches and history against the raw database floor"
EXAMPLES = """\
  allocation-ledger bench --quick
  allocation-ledger bench --stores postgresql --postgres-url postgresql://postgres@127.0.0.1/ledger_test
"""


def _numbers(text: str) -> tuple[int, ...]:
    try:
        found = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1,2,4, got {text!r}") from None
    if not found or min(found) < 1:
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return found


def _stores(text: str) -> tuple[str, ...]:
    from allocation_ledger.bench.settings import STORE_KINDS

    found = tuple(x.strip() for x in text.split(",") if x.strip())
    unknown = [x for x in found if x not in STORE_KINDS]
    if not found or unknown:
        raise argparse.ArgumentTypeError(
            f"stores are {', '.join(STORE_KINDS)}; got {text!r}")
    return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Preset, stores, output, and overrides of the preset's sizes."""
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: short samples, ledger grown to 20,000 events")
    parser.add_argument("--stores", type=_stores, default=None,
                        help="comma-separated: memory, sqlite, postgresql "
                             "(default: sqlite,postgresql)")
    parser.add_argument("--postgres-url", default=None,
                        help="PostgreSQL database for scratch schemas (default: --url if it "
                             "is PostgreSQL, else $LEDGER_BENCH_POSTGRES_URL, else local)")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON results file (default: bench-results/bench.json)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="directory for SQLite scratch files (default: a temporary one)")
    parser.add_argument("--duration", type=values.positive_seconds, default=None,
                        help="seconds per figure (default 5, quick 1)")
    parser.add_argument("--writers", type=_numbers, default=None,
                        help="writer process counts (default 1,2,4,8)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of one process claiming at once (default 32)")
    parser.add_argument("--batch-sizes", type=_numbers, default=None,
                        help="consumers per append (default 1,10,100,1000)")
    parser.add_argument("--grow-to", type=values.count, default=None,
                        help="events of the grown ledger (default 1,000,000, quick 20,000)")
    parser.add_argument("--small-history", type=values.count, default=None,
                        help="events of the small ledger (default 1,000)")
    parser.add_argument("--history-claims", type=values.count, default=None,
                        help="claims timed on each ledger of the history figure")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a target is missed")


def settings_of(args: argparse.Namespace) -> settings.Settings:
    """The run's settings: the preset, then the options given."""
    from allocation_ledger.bench import settings
    from allocation_ledger.cli.options import UsageError

    base = settings.quick() if args.quick else settings.full()
    postgres_url = args.postgres_url
    if postgres_url is None and args.url and args.url.startswith("postgres"):
        postgres_url = args.url
    chosen = base.with_overrides(
        stores=args.stores, postgres_url=postgres_url, out=args.out, workdir=args.workdir,
        duration=args.duration, writers=args.writers, batch_sizes=args.batch_sizes,
        grow_to=args.grow_to, small_history=args.small_history,
        history_claims=args.history_claims, threads=args.threads,
    )
    if chosen.duration <= 0 or chosen.grow_to < chosen.small_history:
        raise UsageError("--duration must be positive and --grow-to at least "
                         "--small-history")
    return chosen


def run(args: argparse.Namespace) -> int:
    """Run the benchmark, print the table, write the JSON."""
    from allocation_ledger.bench import report, runner
    from allocation_ledger.cli.output import print_json

    chosen = settings_of(args)
    results = runner.run(chosen, progress=lambda line: print(f"bench: {line}",
                                                            file=sys.stderr, flush=True))
    report.write_json(results, chosen.out)
    if args.json:
        print_json(results)
    else:
        print(report.table(results))
        print(f"\nresults written to {chosen.out}")
    missed = [t for t in results["targets"] if not t["met"]]
    return 1 if args.check and missed else 0
