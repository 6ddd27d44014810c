"""``allocation-ledger audit``: replay the ledger and check every invariant.

Prints a readable report (or JSON with ``--json``) and exits 1 when an invariant is broken
or the hash chain or a recorded digest (``--digest FILE``) shows the history changed, 0
otherwise (warnings, such as migrations in flight for too long, do not fail the audit).
Long replays draw a progress bar on stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from allocation_ledger.cli import values
from allocation_ledger.cli.options import parse_time

if TYPE_CHECKING:
    from allocation_ledger.audit.run import AuditReport

NAME = "audit"
HELP = "replay the ledger, check every invariant, report findings (exit 1 on a violation)"
EXAMPLES = """\
  allocation-ledger audit
  allocation-ledger audit --until 2026-11-21T14:02:00Z --json
  allocation-ledger audit --stale-after 600 --projections off
  allocation-ledger repair --stale-after 600 --action revert --dry-run   # fix what it found
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Range, thresholds and output options."""
    parser.add_argument("--from-position", type=values.position, default=1, metavar="N",
                        help="check from this position (the state before it is replayed)")
    parser.add_argument("--to-position", type=values.position, default=None, metavar="N",
                        help="stop after this position")
    parser.add_argument("--until", type=parse_time, default=None, metavar="TIME",
                        help="stop after the last event at or before this ISO 8601 time")
    parser.add_argument("--stale-after", type=values.seconds, default=3600.0, metavar="SECONDS",
                        help="warn about migrations in flight for longer (default 3600)")
    parser.add_argument("--projections", default="auto", metavar="auto|off|URL",
                        help="compare the read models with the replay: auto (those beside "
                             "the ledger, when the projections package is installed and has "
                             "built them), off, or the URL of the store they live in")
    parser.add_argument("--digest", action="append", default=[], metavar="FILE",
                        help="a digest recorded by `allocation-ledger digest --json` (a "
                             "file of one or several; repeatable): the ledger up to each "
                             "must be unchanged")
    parser.add_argument("--no-snapshots", action="store_true",
                        help="do not compare stored snapshots with the replay")


def run(args: argparse.Namespace) -> int:
    """Audit the store ``--url`` names; 1 if an invariant is broken."""
    from allocation_ledger.audit.chain import read_digests
    from allocation_ledger.audit.pointintime import cut
    from allocation_ledger.audit.run import audit
    from allocation_ledger.cli.output import print_json, progress_bar
    from allocation_ledger.cli.read_only import store_of

    digests = read_digests(args.digest)
    with store_of(args, audit=True) as store:
        stop = None
        if args.to_position is not None or args.until is not None:
            stop = cut(store, args.to_position, args.until)
        report = audit(store, start=args.from_position, stop=stop,
                       stale_after=args.stale_after, snapshots=not args.no_snapshots,
                       projections=_projections(args.projections),
                       progress=progress_bar(not args.no_progress, "audit"),
                       digests=digests)
    if args.json:
        print_json(report.to_dict())
    else:
        print_report(report)
    return 0 if report.ok else 1


def _projections(option: str) -> bool | str:
    if option == "off":
        return False
    return True if option == "auto" else option


def print_report(report: AuditReport, out: TextIO | None = None) -> None:
    """The report for a person."""
    out = out or sys.stdout
    print(f"Audited positions {report.first_position}..{report.last_position}: "
          f"{report.events} events in {report.seconds:.2f} s "
          f"({report.events_per_second:,.0f} events/s)", file=out)
    errors = len(report.errors)
    warnings = len(report.findings) - errors
    if not report.findings:
        print("No findings: every invariant holds at every position.", file=out)
    else:
        print(f"{errors} violation(s), {warnings} warning(s):", file=out)
        for finding in report.findings:
            print("  " + finding.line(), file=out)
    for note in report.notes:
        print(f"note: {note}", file=out)
