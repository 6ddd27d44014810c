"""``allocation-ledger projections``: rebuild, resume, follow or show the read models.

The read side (``allocation_ledger.projections``) is imported only when the command runs,
so the rest of the CLI never loads it.
"""

from __future__ import annotations

import argparse

from allocation_ledger.cli import values
from allocation_ledger.cli.options import positive_int

NAME = "projections"
HELP = "rebuild, resume, follow (until SIGINT/SIGTERM) or show the status of the read models"
ACTIONS = ("rebuild", "resume", "follow", "status")
#: The runner's default batch (``projections/runner.py``), named here so that the CLI
#: does not load the read side to print its help (a test checks the two agree).
BATCH_SIZE = 20_000
EXAMPLES = """\
  allocation-ledger projections rebuild                 # from zero, progress bar on a terminal
  allocation-ledger projections resume --name host_usage
  allocation-ledger projections follow --poll-interval 0.5
  allocation-ledger projections status --json
"""


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
    parser.add_argument("--batch-size", type=values.count, default=BATCH_SIZE,
                        metavar="EVENTS",
                        help="events per transaction at least (batches end where a "
                             f"command ends; default {BATCH_SIZE:,})")
    parser.add_argument("--metrics-port", type=positive_int, default=None, metavar="PORT",
                        help="follow: serve Prometheus metrics (lag, stale migrations) on "
                             "this port of 127.0.0.1")
    parser.add_argument("--poll-interval", type=values.positive_seconds, default=1.0,
                        metavar="SECONDS",
                        help="follow: poll this often when no notification arrives")


def run(args: argparse.Namespace) -> int:
    """Run the action (see :mod:`allocation_ledger.cli.read_models`)."""
    from allocation_ledger.cli.read_models import run_command

    return run_command(args)
