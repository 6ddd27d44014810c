"""``allocation-ledger digest``: the ledger's head (position, chain hash, time).

Keep what it prints somewhere the database's administrators cannot write (a ticket, a log
shipped elsewhere, a signed mail); ``audit --digest FILE`` later proves the ledger up to
that position unchanged.
"""

from __future__ import annotations

import argparse

NAME = "digest"
HELP = "print the ledger's head: position, chain hash and time (keep it for audit --digest)"
EXAMPLES = """\
  allocation-ledger digest
  allocation-ledger digest --json >> digests.jsonl   # one line each (for audit --digest)
  allocation-ledger audit --digest digests.jsonl
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Nothing of its own: ``--json`` (global) prints the line ``audit --digest`` reads."""


def run(args: argparse.Namespace) -> int:
    """Print the head of the ledger ``--url`` names."""
    from allocation_ledger.audit.chain import head
    from allocation_ledger.audit.integrity import chained
    from allocation_ledger.cli.output import dumps
    from allocation_ledger.cli.read_only import store_of
    from allocation_ledger.domain.errors import StoreUnusable

    with store_of(args) as store:
        if not chained(store):
            raise StoreUnusable("this store keeps no hash chain (memory): no digest")
        last = store.recorder.max_notification_id() or 0
        found = store.recorder.select_notifications(last, 1) if last else []
        digest = head(found[0] if found else None,
                      keyed=getattr(store.recorder, "chain_key", None) is not None)
    if args.json:
        print(dumps(digest.to_dict()))
    else:
        print(f"position {digest.position} chain {digest.chain_hash.hex()} "
              f"at {digest.taken_at}")
    return 0
