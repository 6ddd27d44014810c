"""Claims over HTTP beside the in-process API, in one run.

    python -m benchmarks.http [--claims 2000] [--clients 1,8,32] [--stores sqlite,postgresql]
                              [--group-commit off|on|off,on] [--workers 1|2|1,2]
                              [--loop auto|asyncio|auto,asyncio]
                              [--pg-url postgresql://postgres@127.0.0.1:5432/ledger_test] [--json]
                              [--plot DIR]

Starts ``allocation-ledger serve`` over a scratch store of each kind (a temporary SQLite
file, a fresh PostgreSQL schema, both removed afterwards), measures claims/s with 1, 8 and
32 concurrent HTTP clients and the same claims through the service API in-process, and
prints each HTTP figure as a ratio of the in-process one; with ``--workers 1,2`` the server
is measured with one worker process, then with two (``serve --workers``); with ``--loop
auto,asyncio`` with uvloop (where installed), then with asyncio's own loop (``serve
--loop``). Needs the ``http`` extra.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from benchmarks import pictures
from benchmarks.over_http import measure, report


def main(argv: list[str]) -> int:
    """Run the benchmark; 0 when every claim succeeded."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=2000)
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--stores", default="sqlite,postgresql")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/ledger_test")
    parser.add_argument("--group-commit", default="off",
                        help="serve --group-commit settings to measure, in turn (off,on: both)")
    parser.add_argument("--workers", default="1",
                        help="serve --workers counts to measure, in turn (1,2: both)")
    parser.add_argument("--loop", default="auto",
                        help="serve --loop settings to measure, in turn (auto,asyncio: both)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--plot", type=Path, default=None, metavar="DIR",
                        help="also draw the figures as an SVG picture into DIR (docs/img)")
    args = parser.parse_args(argv)
    clients = [int(n) for n in args.clients.split(",")]
    with tempfile.TemporaryDirectory() as workdir:
        figures = measure(args.stores.split(","), args.claims, clients, args.pg_url,
                          Path(workdir), tuple(args.group_commit.split(",")),
                          tuple(int(n) for n in args.workers.split(",")),
                          tuple(args.loop.split(",")))
    if args.json:
        print(json.dumps([{**asdict(f), "ratios": f.ratios()} for f in figures], indent=2))
    else:
        print(report(figures))
    if args.plot is not None:
        drawn = pictures.http(figures, args.plot,
                              " ".join(["python -m benchmarks.http", *argv]))
        print(f"drew {drawn}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
