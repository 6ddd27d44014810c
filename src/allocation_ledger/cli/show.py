"""``allocation-ledger show``: a host's usage, a consumer's allocations, or a migration."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from allocation_ledger.application.ledger import Ledger
from allocation_ledger.bootstrap import open_ledger

NAME = "show"
HELP = "show a provider tree's usage, a consumer's allocations or a migration"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``show provider|consumer|migration UUID [--json]``."""
    parser.add_argument("what", choices=["provider", "consumer", "migration"])
    parser.add_argument("uuid")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    """Print what was asked for."""
    with open_ledger(args.url, create=False) as ledger:
        if args.what == "provider":
            if args.json:
                data: Any = {
                    uuid: {"name": v.name, "generation": v.generation, "usages": v.usages,
                           "inventories": {rc: asdict(i) for rc, i in v.inventories.items()},
                           "devices": v.devices}
                    for uuid, v in ledger.tree(args.uuid).items()
                }
                print(json.dumps(data, indent=2, sort_keys=True))
            else:
                print_host(ledger, args.uuid)
        elif args.what == "consumer":
            print(json.dumps(asdict(ledger.consumer(args.uuid)), indent=2, sort_keys=True))
        else:
            print(json.dumps(asdict(ledger.migration(args.uuid)), indent=2, sort_keys=True,
                             default=str))
    return 0


def print_host(ledger: Ledger, root_uuid: str) -> None:
    """A readable table of a provider tree's usage."""
    for uuid, view in ledger.tree(root_uuid).items():
        print(f"  {view.name} ({uuid[:8]}) generation {view.generation}")
        for rc, c in view.classes.items():
            flag = "  OVER CAPACITY" if c.over_capacity else ""
            print(f"    {rc:<12} used {c.used:>7} of {c.capacity:>7}  free {c.free:>7}{flag}")
