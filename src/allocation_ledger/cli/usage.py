"""``allocation-ledger usage``: what a project (or one of its users) holds, per resource
class, as ``openstack resource usage show`` answers it."""

from __future__ import annotations

import argparse

NAME = "usage"
HELP = "a project's (or a user's) usage per resource class"
EXAMPLES = """\
  allocation-ledger usage --project 7c3a0e
  allocation-ledger usage --project 7c3a0e --user alice --json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Whose usage."""
    parser.add_argument("--project", required=True, help="the project id")
    parser.add_argument("--user", default=None, help="only this user's consumers")


def run(args: argparse.Namespace) -> int:
    """Print the usage per class (consumers mid-move count once per holding)."""
    from allocation_ledger.bootstrap import open_ledger
    from allocation_ledger.cli.output import print_json, table

    totals: dict[str, int] = {}
    consumers = 0
    with open_ledger(args.url, read_only=True) as ledger:
        for uuid, entry in ledger.consumers().items():
            if entry.project_id != args.project or args.user not in (None, entry.user_id):
                continue
            held = ledger.consumer(uuid).allocations
            consumers += bool(held)
            for amounts in held.values():
                for rc, amount in amounts.items():
                    totals[rc] = totals.get(rc, 0) + amount
    if args.json:
        print_json({"project_id": args.project, "user_id": args.user,
                    "consumers": consumers, "usages": dict(sorted(totals.items()))})
    else:
        table(["RESOURCE CLASS", "USAGE"], sorted(totals.items()), fmt=args.format)
    return 0
