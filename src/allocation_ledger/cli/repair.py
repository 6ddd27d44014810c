"""``allocation-ledger repair``: resolve migrations left in flight, as the audit reports
them, by reverting or confirming each one through the ordinary ledger command, with an actor
and a reason stored on its events. ``--dry-run`` prints the plan and changes nothing."""

from __future__ import annotations

import argparse
import getpass
import uuid
from typing import TYPE_CHECKING

from allocation_ledger.cli.options import UsageError, non_negative_float

if TYPE_CHECKING:
    from allocation_ledger.application.repairing import Release

NAME = "repair"
HELP = ("revert or confirm stale migrations (the audit's warnings), release consumers; "
        "--dry-run to see the plan")
EXAMPLES = """\
  allocation-ledger repair --stale-after 3600 --action revert --dry-run
  allocation-ledger repair --stale-after 3600 --action revert --reason "leaked by nova, ticket 123"
  allocation-ledger repair 51f0c2d4 9a0e --action confirm --actor alice
  allocation-ledger repair 7d1e9c40 --action release --reason "instance deleted in nova"
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Which migrations, what to do with them, and who asks."""
    parser.add_argument("ids", nargs="*", metavar="ID",
                        help="migrations to revert or confirm, or consumers to release "
                             "(UUIDs or unique prefixes)")
    parser.add_argument("--stale-after", type=non_negative_float, default=None,
                        metavar="SECONDS",
                        help="every migration in flight for at least this long")
    parser.add_argument("--action", choices=["revert", "confirm", "release"], required=True,
                        help="revert: the instance goes back to its source; confirm: the "
                             "source is released (an evacuation can only be confirmed); "
                             "release: named consumers lose everything they hold")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would be done, change nothing")
    parser.add_argument("--actor", default=None,
                        help="who repairs (stored on the events; default: the login name)")
    parser.add_argument("--reason", default=None,
                        help="why (stored on the events; default names the repair)")


def run(args: argparse.Namespace) -> int:
    """Repair; exit 1 if the ledger refused any repair."""
    from allocation_ledger.application.repairing import (
        release_consumers,
        repair_migrations,
    )
    from allocation_ledger.bootstrap import open_ledger
    from allocation_ledger.cli.output import print_json, table
    from allocation_ledger.cli.read_only import resolve_id

    if bool(args.ids) == (args.stale_after is not None):
        raise UsageError("name the migrations or give --stale-after (one of the two)")
    if args.action == "release" and args.stale_after is not None:
        raise UsageError("release takes the consumers by name, not --stale-after")
    what = "a consumer" if args.action == "release" else "a migration left in flight"
    request = {"actor": args.actor or f"{getpass.getuser()} (allocation-ledger repair)",
               "request_id": f"repair-{uuid.uuid4()}",
               "reason": args.reason or f"repair: {args.action} {what}"}
    with open_ledger(args.url, create=False) as ledger:
        if args.action == "release":
            consumers = [resolve_id(ledger.store, "consumer", text) for text in args.ids]
            released = release_consumers(ledger, consumers, request=request,
                                         dry_run=args.dry_run)
            _print_releases(args, request, released)
            return 1 if any(r.outcome == "refused" for r in released) else 0
        if args.stale_after is not None:
            targets = ledger.migrations_in_flight(args.stale_after)
        else:
            targets = [ledger.migration(resolve_id(ledger.store, "migration", text))
                       for text in args.ids]
        repairs = repair_migrations(ledger, targets, args.action, request=request,
                                    dry_run=args.dry_run)
    if args.json:
        print_json({"dry_run": args.dry_run, "request": request, "repairs": repairs})
    else:
        verb = "would " + args.action if args.dry_run else args.action
        if args.format == "table":
            print(f"{len(repairs)} migration(s) to {args.action}"
                  f"{' (dry run: nothing changed)' if args.dry_run else ''}; request "
                  f"{request['request_id']} by {request['actor']}")
        table(["MIGRATION", "INSTANCE", "KIND", "AGE (s)", "OUTCOME"],
              [[r.migration_uuid, r.instance_uuid, r.kind, f"{r.age_seconds:.0f}",
                verb if r.outcome == "planned" else
                r.outcome + (f": {r.error['message']}" if r.error else "")] for r in repairs],
              fmt=args.format)
    return 1 if any(r.outcome == "refused" for r in repairs) else 0


def _print_releases(args: argparse.Namespace, request: dict[str, str],
                    released: list[Release]) -> None:
    from allocation_ledger.cli.output import print_json, table

    if args.json:
        print_json({"dry_run": args.dry_run, "request": request, "releases": released})
        return
    if args.format == "table":
        print(f"{len(released)} consumer(s) to release"
              f"{' (dry run: nothing changed)' if args.dry_run else ''}; request "
              f"{request['request_id']} by {request['actor']}")
    table(["CONSUMER", "HELD", "OUTCOME"],
          [[r.consumer_uuid, _held(r.held), "would release" if r.outcome == "planned" else
            r.outcome + (f": {r.error['message']}" if r.error else "")] for r in released],
          fmt=args.format)


def _held(held: dict[str, dict[str, int]]) -> str:
    return "; ".join(f"{rp[:8]} " + ", ".join(f"{rc}={n}" for rc, n in amounts.items())
                     for rp, amounts in held.items()) or "-"
