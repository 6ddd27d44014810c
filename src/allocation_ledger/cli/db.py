"""``allocation-ledger db init``: the deploy step, run as the schema's owner.

Creates the ledger's schema (or migrates a ledger from before the hash chain, chaining its
events), replaces the append functions, creates the read models' tables, and with
``--app-role`` / ``--auditor-role`` grants those PostgreSQL roles their rights: the
application may append (``EXECUTE`` on the append function) and read, never change the
events table; the auditor may only read.
"""

from __future__ import annotations

import argparse

from allocation_ledger.bootstrap import init_store

NAME = "db"
HELP = "db init: create or migrate the schema and grant roles (run as the schema's owner)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``db init [--app-role ROLE] [--auditor-role ROLE]``."""
    parser.add_argument("action", choices=("init",), help="create or migrate the schema")
    parser.add_argument("--app-role", default=None, metavar="ROLE",
                        help="PostgreSQL role of the service: append and read only")
    parser.add_argument("--auditor-role", default=None, metavar="ROLE",
                        help="PostgreSQL role of auditors: read only")


def run(args: argparse.Namespace) -> int:
    """Initialise the store ``--url`` names."""
    done = init_store(args.url, app_role=args.app_role, auditor_role=args.auditor_role)
    print(done.line())
    return 0
