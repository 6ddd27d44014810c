#!/usr/bin/env python3
"""Rebuild the read models from zero, or resume them from their stored positions.

    scripts/rebuild_projections.py [--url LEDGER_URL] [--name PROJECTION]... [--resume]
        [--projections-url URL] [--batch-size N] [--quiet]

Draws a progress bar on stderr when it is a terminal; prints each projection's final
position and the row counts. SIGINT/SIGTERM stop it between batches (resume later).
"""

from __future__ import annotations

import sys

from allocation_ledger.cli.read_models import main


def _argv(args: list[str]) -> list[str]:
    action = "resume" if "--resume" in args else "rebuild"
    return [action, *(a for a in args if a != "--resume")]


if __name__ == "__main__":
    raise SystemExit(main(_argv(sys.argv[1:])))
