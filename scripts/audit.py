#!/usr/bin/env python3
"""Audit the ledger: ``scripts/audit.py [--url URL] [--json] [...]``.

The same as ``allocation-ledger audit``: replays the ledger, checks every invariant of
docs/guarantees.md §5, prints the findings and exits 1 when an invariant is broken.
"""

from __future__ import annotations

import sys

from allocation_ledger.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["audit", *sys.argv[1:]]))
