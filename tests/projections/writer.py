"""A writer process for the crash tests: ``python -m tests.projections.writer URL SEED STEPS``
runs ``random_ledger.populate`` against the ledger at URL (until done, or killed)."""

from __future__ import annotations

import sys

from allocation_ledger import open_ledger
from benchmarks.random_ledger import populate

if __name__ == "__main__":
    url, seed, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open_ledger(url) as ledger:
        populate(ledger, seed, steps, hosts=3)
