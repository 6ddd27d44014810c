"""``allocation-ledger show``: a provider tree's usage, a consumer's allocations, or a
migration; by UUID or a unique UUID prefix."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from allocation_ledger.application.views import (
        ConsumerView,
        MigrationView,
        ProviderView,
    )

NAME = "show"
HELP = "show a provider tree's usage, a consumer's allocations or a migration"
EXAMPLES = """\
  allocation-ledger show provider 6ae32ac4              # the tree, root first
  allocation-ledger show consumer 9d2e5c2a-0c8f-4a50-8e7b-2f4c1a9b6d31 --json
  allocation-ledger show migration 51f0
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``show provider|consumer|migration UUID``."""
    parser.add_argument("what", choices=["provider", "consumer", "migration"],
                        help="what to show")
    parser.add_argument("uuid", help="its UUID, or a unique prefix of it")


def run(args: argparse.Namespace) -> int:
    """Print what was asked for."""
    from allocation_ledger.bootstrap import open_ledger
    from allocation_ledger.cli.options import UsageError
    from allocation_ledger.cli.output import print_json, table
    from allocation_ledger.cli.read_only import resolve_id

    if args.format == "csv" and args.what == "migration":
        raise UsageError("show migration has no table to print as CSV: use --json, or "
                         "list migrations -f csv")
    with open_ledger(args.url, read_only=True) as ledger:
        uuid = resolve_id(ledger.store, args.what, args.uuid)
        if args.format == "csv":
            if args.what == "provider":
                table(TREE_HEADERS, tree_rows(ledger.tree(uuid)), fmt="csv")
            else:
                table(CONSUMER_HEADERS, consumer_rows(ledger.consumer(uuid)), fmt="csv")
        elif args.what == "provider":
            tree = ledger.tree(uuid)
            print_json(tree_data(tree)) if args.json else print_tree(tree)
        elif args.what == "consumer":
            consumer = ledger.consumer(uuid)
            print_json(asdict(consumer)) if args.json else print_consumer(consumer)
        else:
            migration = ledger.migration(uuid)
            print_json(asdict(migration)) if args.json else print_migration(migration)
    return 0


def tree_data(tree: dict[str, ProviderView]) -> dict[str, Any]:
    """A tree as plain data, by provider UUID, root first."""
    return {uuid: {"name": v.name, "parent_uuid": v.parent_uuid, "generation": v.generation,
                   "usages": v.usages, "devices": v.devices,
                   "inventories": {rc: asdict(i) for rc, i in v.inventories.items()},
                   "traits": list(v.traits), "aggregates": list(v.aggregates)}
            for uuid, v in tree.items()}


TREE_HEADERS = ("PROVIDER_UUID", "NAME", "PARENT_UUID", "GENERATION", "RESOURCE_CLASS",
                "USED", "CAPACITY", "FREE", "OVER_CAPACITY")
CONSUMER_HEADERS = ("CONSUMER_UUID", "GENERATION", "PROVIDER_UUID", "RESOURCE_CLASS", "AMOUNT")


def tree_rows(tree: dict[str, ProviderView]) -> list[list[str]]:
    """A tree as CSV rows: one per provider and class (a provider with no inventory: one row
    with its class fields empty), root first."""
    rows = []
    for uuid, view in tree.items():
        head = [uuid, view.name, view.parent_uuid or "", str(view.generation)]
        for rc, c in view.classes.items():
            rows.append([*head, rc, str(c.used), str(c.capacity), str(c.free),
                         str(c.over_capacity).lower()])
        if not view.classes:
            rows.append([*head, "", "", "", "", ""])
    return rows


def consumer_rows(view: ConsumerView) -> list[list[str]]:
    """A consumer's allocations as CSV rows: one per provider and class."""
    generation = "" if view.generation is None else str(view.generation)
    return [[view.consumer_uuid, generation, rp, rc, str(n)]
            for rp, amounts in view.allocations.items() for rc, n in amounts.items()]


def print_tree(tree: dict[str, ProviderView]) -> None:
    """A provider tree, root first, each child indented under its parent."""
    depth: dict[str, int] = {}
    for uuid, view in tree.items():
        level = depth[uuid] = depth.get(view.parent_uuid or "", -1) + 1
        pad = "  " * (level + 1)
        print(f"{pad}{view.name} ({uuid}) generation {view.generation}")
        for rc, c in view.classes.items():
            flag = "  OVER CAPACITY" if c.over_capacity else ""
            print(f"{pad}  {rc:<12} used {c.used:>7} of {c.capacity:>7}  free {c.free:>7}"
                  f"{flag}")
        for what, names in (("traits", view.traits), ("aggregates", view.aggregates)):
            if names:
                print(f"{pad}  {what:<12} {', '.join(names)}")


def print_consumer(view: ConsumerView) -> None:
    """A consumer's generation, owner and allocations."""
    from allocation_ledger.cli.output import text

    print(f"consumer {view.consumer_uuid} generation {text(view.generation)}")
    for key, value in asdict(view).items():
        if key not in {"consumer_uuid", "generation", "allocations", "devices"}:
            print(f"  {key}: {text(value)}")
    for rp, amounts in view.allocations.items():
        print(f"  {rp}: " + ", ".join(f"{rc}={n}" for rc, n in amounts.items()))
    for rp, by_class in view.devices.items():
        for rc, ids in by_class.items():
            print(f"  {rp}: {rc} devices {', '.join(ids)}")


def print_migration(view: MigrationView) -> None:
    """A migration's context, status and times (ISO 8601)."""
    from allocation_ledger.cli.output import text

    print(f"migration {view.migration_uuid}")
    for key, value in asdict(view).items():
        if key != "migration_uuid":
            print(f"  {key}: {text(value)}")
