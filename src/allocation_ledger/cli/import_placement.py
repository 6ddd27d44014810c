"""``allocation-ledger import-placement``: start a new ledger from an existing Placement
database, as one command per provider and per consumer, checked against the source."""

from __future__ import annotations

import argparse

NAME = "import-placement"
HELP = "read an existing Placement database into a new ledger and check the result"
EXAMPLES = """\
  allocation-ledger import-placement --from mysql+pymysql://placement:pw@db/placement --dry-run
  allocation-ledger --url postgresql://ledger@db/ledger import-placement \\
      --from mysql+pymysql://placement:pw@db/placement
  allocation-ledger import-placement --from postgresql://placement@db/placement --json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The source and the mode."""
    parser.add_argument("--from", dest="source", required=True, metavar="URL",
                        help="the Placement database: mysql+pymysql://..., postgresql://... "
                             "or sqlite:///...")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the commands the import would run, write nothing")
    parser.add_argument("--pair-untyped", action="store_true",
                        help="also import untyped consumers shaped like Nova's move in flight "
                             "(the only two of their project and user holding allocations) "
                             "as a migration and its instance: Nova writes no consumer type, "
                             "but Placement cannot tell that shape from two instances")
    parser.add_argument("--actor", default="allocation-ledger import-placement",
                        help="the actor stored on every imported event")


def run(args: argparse.Namespace) -> int:
    """Import, check, print the report; exit 1 when the ledger does not match."""
    from allocation_ledger.bootstrap import open_ledger
    from allocation_ledger.cli.output import print_json, progress_bar
    from allocation_ledger.placement import importer, source

    data = source.read(args.source)
    bar = progress_bar(not args.no_progress and not args.dry_run, "import")
    with open_ledger("memory://") as staging:  # where every command runs first
        if args.dry_run:  # the target is not even opened: a dry run creates nothing
            report = importer.import_placement(None, data, dry_run=True, staging=staging,
                                               actor=args.actor, progress=bar,
                                               pair_untyped=args.pair_untyped)
        else:
            with open_ledger(args.url) as ledger:
                report = importer.import_placement(ledger, data, dry_run=False,
                                                   staging=staging, actor=args.actor,
                                                   progress=bar,
                                                   pair_untyped=args.pair_untyped)
    if args.json:
        print_json(report.to_dict())
        return 0 if report.ok else 1
    if args.dry_run:
        for command in report.commands:
            uuid = (command.get("provider_uuid") or command.get("instance_uuid")
                    or command.get("consumer_uuid"))
            print(f"would {command['command']} {uuid}: {command['reason']}")
    verb = "would import" if args.dry_run else "imported"
    print(f"{verb} {report.providers} providers, {report.consumers} consumers, "
          f"{report.allocations} allocation records (request {report.request_id}); "
          f"{len(report.skipped_consumers)} consumers without allocations skipped")
    for mismatch in report.mismatches:
        print(f"MISMATCH {mismatch}")
    for move in report.migrations:
        print(f"move in flight: migration {move['migration_uuid']} of instance "
              f"{move['instance_uuid']} (paired by {move['rule']})")
    for line in report.unpaired_migrations:
        print(f"note: migration consumer imported as a plain consumer, its instance not "
              f"paired: {line}")
    for over in report.over_capacity:
        print(f"note: over capacity in Placement, imported as it is: {over}")
    if not report.written and not args.dry_run:
        print("nothing was written: the ledger is as it was")
    if not args.dry_run and report.ok:
        print("checked: every provider's inventory and usage and every consumer's "
              "allocations equal Placement's")
    return 0 if report.ok else 1
