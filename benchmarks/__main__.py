"""``python -m benchmarks``: claims, moves, batches and the cost of history, beside the raw
database.

    python -m benchmarks [--quick] [--stores sqlite,postgresql] [--out FILE] [--json]
                         [--ratios with|only|skip] [--plot DIR]

Run from the repository root (``python -m`` puts it on ``sys.path``). Every store is a fresh
scratch store (a SQLite file in a temporary directory, a new schema in the PostgreSQL
database of ``--postgres-url``), removed afterwards. Prints a table (JSON with ``--json``),
writes JSON (default ``bench-results/bench.json``) and, with ``--check``, exits 1 when a
target is missed; bad options exit 2. The CPU ratios T1-T6 (``benchmarks/targets.py``) come
after the other figures (``--ratios only``: alone; ``skip``: left out).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from allocation_ledger.cli import values
from allocation_ledger.cli.output import print_json
from benchmarks import pictures, report, runner, settings
from benchmarks import targets as cpu_targets

EXAMPLES = """\
examples:
  python -m benchmarks --quick
  python -m benchmarks --ratios only --replay-events 100000,1000000 --scale-hosts 100000
  python -m benchmarks --stores postgresql --postgres-url postgresql://postgres@127.0.0.1/ledger_test
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
    found = tuple(x.strip() for x in text.split(",") if x.strip())
    unknown = [x for x in found if x not in settings.STORE_KINDS]
    if not found or unknown:
        raise argparse.ArgumentTypeError(
            f"stores are {', '.join(settings.STORE_KINDS)}; got {text!r}")
    return found


def parser() -> argparse.ArgumentParser:
    """Preset, stores, output, and overrides of the preset's sizes."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", epilog=EXAMPLES,
        description="benchmark claims, moves, batches and history against the raw database "
                    "floor", formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: short samples, ledger grown to 20,000 events")
    parser.add_argument("--stores", type=_stores, default=None,
                        help="comma-separated: memory, sqlite, postgresql "
                             "(default: sqlite,postgresql)")
    parser.add_argument("--postgres-url", default=None,
                        help="PostgreSQL database for scratch schemas (default: "
                             "$LEDGER_BENCH_POSTGRES_URL, else $LEDGER_TEST_POSTGRES_URL, "
                             "else local)")
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
    parser.add_argument("--ratios", choices=("with", "only", "skip"), default=None,
                        help="the CPU ratios T1-T6: with the other figures (default), "
                             "only them, or skip them")
    parser.add_argument("--replay-events", type=_numbers, default=None,
                        help="T4's two ledger sizes (default 10000,100000, quick 1000,5000; "
                             "the target's: 100000,1000000)")
    parser.add_argument("--scale-hosts", type=values.count, default=None,
                        help="T5's hosts (default 10,000, quick 200; the target's: 100,000)")
    parser.add_argument("--serve-workers", type=values.count, default=None,
                        help="T6's serve --workers (default: one per core)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a target is missed")
    parser.add_argument("--json", action="store_true",
                        help="print the results as JSON instead of a table")
    parser.add_argument("--plot", type=Path, default=None, metavar="DIR",
                        help="also draw the figures as SVG pictures into DIR (docs/img): claims, "
                             "writers, a claim's time, CPU per claim by bucket")
    return parser


def settings_of(args: argparse.Namespace) -> settings.Settings | None:
    """The run's settings: the preset, then the options given (``None``: inconsistent)."""
    base = settings.quick() if args.quick else settings.full()
    chosen = base.with_overrides(
        stores=args.stores, postgres_url=args.postgres_url, out=args.out,
        workdir=args.workdir, duration=args.duration, writers=args.writers,
        batch_sizes=args.batch_sizes, grow_to=args.grow_to,
        small_history=args.small_history, history_claims=args.history_claims,
        threads=args.threads, ratios=args.ratios, replay_events=args.replay_events,
        scale_hosts=args.scale_hosts, serve_workers=args.serve_workers,
    )
    if chosen.duration <= 0 or chosen.grow_to < chosen.small_history \
            or len(chosen.replay_events) != 2:
        return None
    return chosen


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the table, write the JSON."""
    options = parser()
    args = options.parse_args(argv)
    chosen = settings_of(args)
    if chosen is None:
        options.error("--duration must be positive, --grow-to at least --small-history and "
                      "--replay-events two sizes")
    results = runner.run(chosen, progress=lambda line: print(f"bench: {line}",
                                                            file=sys.stderr, flush=True))
    report.write_json(results, chosen.out)
    if args.plot is not None:
        command = " ".join(["python -m benchmarks", *(argv if argv is not None else sys.argv[1:])])
        drawn: list[Path | None] = []
        if results["stores"]:
            drawn += pictures.draw(results, args.plot, command)
        if results["ratios"]:
            drawn.append(cpu_targets.plot(results["ratios"], args.plot, command))
        for path in filter(None, drawn):
            print(f"bench: drew {path}", file=sys.stderr, flush=True)
    if args.json:
        print_json(results)
    else:
        print(report.table(results))
        print(f"\nresults written to {chosen.out}")
    missed = [t for t in results["targets"] if not t["met"]] + [
        t for found in results["ratios"].values() if found for t in found["targets"]
        if not t["met"]]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
