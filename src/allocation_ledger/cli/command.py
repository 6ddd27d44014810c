"""``allocation-ledger command ID``: what became of a command sent with that id."""

from __future__ import annotations

import argparse
import json

from allocation_ledger.bootstrap import open_ledger

NAME = "command"
HELP = "look a command up by its command id: applied or not, where, when, by whom"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``command ID [--json]``."""
    parser.add_argument("command_id", metavar="ID")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    """Print the command's record; exit 1 when no command of that id was applied."""
    with open_ledger(args.url) as ledger:
        found = ledger.command(args.command_id)
    if args.json:
        print(json.dumps(found.to_dict(), indent=2, sort_keys=True))
        return 0 if found.applied else 1
    if not found.applied:
        print(f"command {found.command_id!r}: not applied (safe to send again with this id)")
        return 1
    who = found.request.get("actor") or "-"
    if "request_id" in found.request:
        who += f" (request {found.request['request_id']})"
    when = found.time.isoformat() if found.time else "-"
    print(f"command {found.command_id!r}: {found.name}, applied at position {found.position} "
          f"at {when} by {who}, {found.events} events")
    for stream in found.streams:
        print(f"  {stream.kind:<9} {stream.uuid}  left at generation {stream.version}")
    return 0
