"""``allocation-ledger state-at``: a provider, consumer, migration or every host as it was at
a ledger position or a moment.

    allocation-ledger state-at provider UUID --at 2024-05-01T10:00:00Z
    allocation-ledger state-at consumer UUID --position 1234 --json
    allocation-ledger state-at hosts --at 2024-05-01T10:00:00Z
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from allocation_ledger.cli import values
from allocation_ledger.cli.options import UsageError, parse_time

if TYPE_CHECKING:
    from allocation_ledger.adapters.eventstore import EventStore
    from allocation_ledger.application.views import ProviderView
    from allocation_ledger.audit import pointintime as pit

NAME = "state-at"
HELP = "a provider, consumer, migration or every host as of a position or a time"
EXAMPLES = """\
  allocation-ledger state-at provider 6ae32ac4 --at 2026-11-21T14:02:00Z
  allocation-ledger state-at consumer 9d2e --position 1234 --json
  allocation-ledger state-at hosts --position 1200
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """What to show and the cut (the newest position when neither is given)."""
    parser.add_argument("what", choices=["provider", "consumer", "migration", "hosts"],
                        help="one provider, consumer or migration, or every host")
    parser.add_argument("uuid", nargs="?",
                        help="the provider, consumer or migration (UUID or unique prefix)")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--at", type=parse_time, default=None, metavar="TIME",
                      help="as of this ISO 8601 time")
    when.add_argument("--position", type=values.position, default=None, metavar="N",
                      help="as of this ledger position")


def run(args: argparse.Namespace) -> int:
    """Print the state asked for."""
    from allocation_ledger.audit import pointintime as pit
    from allocation_ledger.cli.output import dumps
    from allocation_ledger.cli.read_only import resolve_id, store_of

    if args.what != "hosts" and not args.uuid:
        raise UsageError(f"state-at {args.what} needs a UUID")
    with store_of(args) as store:
        if args.what != "hosts":
            args.uuid = resolve_id(store, args.what, args.uuid)
        position = pit.cut(store, args.position, args.at)
        found, data = _lookup(store, args, position)
    cut = {"position": found.position,
           "time": found.time.isoformat() if found.time else None}
    if args.json:
        print(dumps({"as_of": cut, args.what: data}))
    else:
        print(f"{args.what} as of position {cut['position']} ({cut['time'] or 'empty ledger'})")
        if args.what == "provider":
            _print_provider(args.uuid, data)
        elif args.what == "hosts":
            for tree in data.values():
                for uuid, provider in tree.items():
                    _print_provider(uuid, provider)
        else:
            _print(data, "  ")
    return 0


def _lookup(store: EventStore, args: argparse.Namespace,
            position: int) -> tuple[pit.AsOf[Any], dict[str, Any]]:
    from allocation_ledger.audit import pointintime as pit
    from allocation_ledger.cli.output import progress_bar

    if args.what == "provider":
        provider = pit.provider_at(store, args.uuid, position)
        return provider, provider_data(provider.value)
    if args.what == "consumer":
        consumer = pit.consumer_at(store, args.uuid, position)
        return consumer, asdict(consumer.value)
    if args.what == "migration":
        migration = pit.migration_at(store, args.uuid, position)
        return migration, asdict(migration.value)
    hosts = pit.hosts_at(store, position, progress_bar(not args.no_progress, "state-at"))
    return hosts, {root: {uuid: provider_data(view) for uuid, view in tree.items()}
                   for root, tree in hosts.value.items()}


def provider_data(view: ProviderView) -> dict[str, Any]:
    """A provider view as plain data: tree place, and per class inventory and usage."""
    return {
        "name": view.name, "generation": view.generation, "parent_uuid": view.parent_uuid,
        "root_uuid": view.root_uuid, "devices": view.devices,
        "traits": list(view.traits), "aggregates": list(view.aggregates),
        "classes": {rc: {**(asdict(c.inventory) if c.inventory else {}), "used": c.used,
                         "capacity": c.capacity, "free": c.free,
                         "over_capacity": c.over_capacity}
                    for rc, c in view.classes.items()},
    }


def _print_provider(uuid: str, data: dict[str, Any]) -> None:
    child = f" child of {data['parent_uuid'][:8]}" if data["parent_uuid"] else ""
    print(f"  {data['name']} ({uuid[:8]}){child} generation {data['generation']}")
    for rc, c in data["classes"].items():
        flag = "  OVER CAPACITY" if c["over_capacity"] else ""
        print(f"    {rc:<12} used {c['used']:>7} of {c['capacity']:>7}  free {c['free']:>7}{flag}")
    for rc, devices in data["devices"].items():
        held = ", ".join(f"{d}={h[:8] if h else 'free'}" for d, h in devices.items())
        print(f"    {rc:<12} devices {held}")
    for what in ("traits", "aggregates"):
        if data.get(what):
            print(f"    {what:<12} {', '.join(data[what])}")


def _print(data: Any, indent: str) -> None:
    for key, value in data.items():
        if isinstance(value, dict) and value:
            print(f"{indent}{key}:")
            _print(value, indent + "  ")
        else:
            print(f"{indent}{key}: {value}")
