"""``allocation-ledger digest``: the ledger's head (position, chain hash, time).

Keep what it prints somewhere the database's administrators cannot write (a ticket, a log
shipped elsewhere, a signed mail); ``audit --digest FILE`` later proves the ledger up to
that position unchanged.
"""

from __future__ import annotations

import argparse
import json

from allocation_ledger.audit.chain import head
from allocation_ledger.audit.integrity import chained
from allocation_ledger.cli.auditing import store_of
from allocation_ledger.domain.errors import StoreUnusable

NAME = "digest"
HELP = "print the ledger's head: position, chain hash and time (keep it for audit --digest)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json``."""
    parser.add_argument("--json", action="store_true", help="print JSON (for audit --digest)")


def run(args: argparse.Namespace) -> int:
    """Print the head of the ledger ``--url`` names."""
    with store_of(args) as store:
        if not chained(store):
            raise StoreUnusable("this store keeps no hash chain (memory): no digest")
        last = store.recorder.max_notification_id() or 0
        found = store.recorder.select_notifications(last, 1) if last else []
        digest = head(found[0] if found else None)
    if args.json:
        print(json.dumps(digest.to_dict(), sort_keys=True))
    else:
        print(f"position {digest.position} chain {digest.chain_hash.hex()} "
              f"at {digest.taken_at}")
    return 0
