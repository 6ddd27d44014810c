"""``allocation-ledger projections``: rebuild, resume, follow or show the read models.

The read side lives in the top-level ``projections`` package; it is imported only when the
command runs, so the rest of the CLI never loads it.
"""

from __future__ import annotations

import argparse

from allocation_ledger.cli import values

NAME = "projections"
HELP = "rebuild, resume, follow (until SIGINT/SIGTERM) or show the status of the read models"
ACTIONS = ("rebuild", "resume", "follow", "status")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``projections rebuild|resume|follow|status [--name N]... [--projections-url URL]``."""
    parser.add_argument("action", choices=ACTIONS,
                        help="rebuild from zero, resume from the stored positions, follow "
                             "new events, or show positions and row counts")
    parser.add_argument("--name", action="append", default=None, metavar="PROJECTION",
                        help="only this projection (repeatable; default: all of them)")
    parser.add_argument("--projections-url", default=None, metavar="URL",
                        help="where the read models live (default: $PROJECTIONS_URL, else "
                             "the ledger's own database)")
    parser.add_argument("--batch-size", type=values.count, default=5000, metavar="EVENTS",
                        help="events per transaction at least (batches end where a "
                             "command ends; default 5000)")
    parser.add_argument("--poll-interval", type=values.positive_seconds, default=1.0,
                        metavar="SECONDS",
                        help="follow: poll this often when no notification arrives")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Run the action (see ``projections.cli``)."""
    from projections.cli import run_command

    return run_command(args)
