"""``allocation-ledger command ID``: what became of a command sent with that id."""

from __future__ import annotations

import argparse

NAME = "command"
HELP = "look a command up by its command id: applied or not, where, when, by whom"
EXAMPLES = """\
  allocation-ledger command 3f2a9c1e-5b7d-4e0a-9c8b-1d2e3f4a5b6c   # exit 1: not applied
  allocation-ledger command nova-req-42 --json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``command ID`` (the global ``--json`` prints it as JSON)."""
    parser.add_argument("command_id", metavar="ID", help="the command id the caller chose")


def run(args: argparse.Namespace) -> int:
    """Print the command's record; exit 1 when no command of that id was applied."""
    from allocation_ledger.bootstrap import open_ledger
    from allocation_ledger.cli.output import print_json

    with open_ledger(args.url, create=False) as ledger:
        found = ledger.command(args.command_id)
    if args.json:
        print_json(found.to_dict())
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
