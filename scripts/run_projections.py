#!/usr/bin/env python3
"""Keep the read models up to date until SIGINT or SIGTERM (then stop cleanly).

    scripts/run_projections.py [--url LEDGER_URL] [--name PROJECTION]...
        [--projections-url URL] [--batch-size N] [--poll-interval SECONDS]

Catches up from the stored positions, then follows new events: through the event store's
subscription (LISTEN/NOTIFY) on PostgreSQL, polling on SQLite, and polling every
``--poll-interval`` seconds as a fallback everywhere.
"""

from __future__ import annotations

import sys

from allocation_ledger.cli.read_models import main

if __name__ == "__main__":
    raise SystemExit(main(["follow", *sys.argv[1:]]))
