#!/usr/bin/env python3
"""Benchmark the ledger: ``scripts/bench.py [--quick] [--stores sqlite,postgresql] [...]``.

The same as ``allocation-ledger bench``: claims (1, 2, 4 writer processes), moves, batched
claims and the cost of history on SQLite and PostgreSQL, each beside the raw database's
one-insert-per-transaction floor; prints a table and writes ``bench-results/bench.json``.
"""

from __future__ import annotations

import sys

from allocation_ledger.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", *sys.argv[1:]]))
