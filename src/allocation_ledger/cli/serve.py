"""``allocation-ledger serve``: the Placement-compatible HTTP API (needs the ``http``
extra)."""

from __future__ import annotations

import argparse

NAME = "serve"
HELP = "serve a Placement-compatible HTTP API over the ledger"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``serve [--bind HOST:PORT] [--token-file FILE] [--log-level LEVEL]``."""
    parser.add_argument("--bind", default="127.0.0.1:8778", help="HOST:PORT (127.0.0.1:8778)")
    parser.add_argument("--token-file", default=None,
                        help="lines of 'TOKEN NAME ROLE' (admin or reader); required off "
                             "loopback")
    parser.add_argument("--log-level", default="warning",
                        choices=["critical", "error", "warning", "info", "debug"])


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM."""
    from allocation_ledger.http.server import serve

    serve(args.url, args.bind, args.token_file, args.log_level)
    return 0
