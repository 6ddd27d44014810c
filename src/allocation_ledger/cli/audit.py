"""``allocation-ledger audit``: replay the ledger and check every invariant.

Prints a readable report (or JSON with ``--json``) and exits 1 when an invariant is broken,
0 otherwise (warnings, such as migrations in flight for too long, do not fail the audit).
Long replays draw a progress bar on stderr when it is a terminal. The helpers at the bottom
(times, progress, the store) are shared with ``history`` and ``state-at``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TextIO

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.audit.pointintime import cut
from allocation_ledger.audit.run import AuditReport, audit
from allocation_ledger.bootstrap import open_store

NAME = "audit"
HELP = "replay the ledger, check every invariant, report findings (exit 1 on a violation)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Range, thresholds and output options."""
    parser.add_argument("--from-position", type=int, default=1, metavar="N",
                        help="check from this position (the state before it is replayed)")
    parser.add_argument("--to-position", type=int, default=None, metavar="N",
                        help="stop after this position")
    parser.add_argument("--until", type=parse_time, default=None, metavar="TIME",
                        help="stop after the last event at or before this ISO 8601 time")
    parser.add_argument("--stale-after", type=float, default=3600.0, metavar="SECONDS",
                        help="warn about migrations in flight for longer (default 3600)")
    parser.add_argument("--projections", default=None, metavar="URL",
                        help="read-model database to compare with the replay (default: none)")
    parser.add_argument("--no-snapshots", action="store_true",
                        help="do not compare stored snapshots with the replay")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Audit the store ``--url`` names; 1 if an invariant is broken."""
    with store_of(args) as store:
        stop = None
        if args.to_position is not None or args.until is not None:
            stop = cut(store, args.to_position, args.until)
        report = audit(store, start=args.from_position, stop=stop,
                       stale_after=args.stale_after, snapshots=not args.no_snapshots,
                       projections=args.projections, progress=progress_bar(args))
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        print_report(report)
    return 0 if report.ok else 1


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


# -- shared by the audit, history and state-at commands ------------------------------------


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json`` and ``--no-progress``."""
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--no-progress", action="store_true",
                        help="never draw a progress bar")


def parse_time(text: str) -> datetime:
    """An ISO 8601 time; one without a timezone is taken as UTC."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@contextmanager
def store_of(args: argparse.Namespace) -> Iterator[EventStore]:
    """The event store ``--url`` names, closed afterwards."""
    store, _ = open_store(args.url)
    try:
        yield store
    finally:
        store.close()


def progress_bar(args: argparse.Namespace) -> ProgressBar | None:
    """A progress bar on stderr, only when stderr is a terminal."""
    if getattr(args, "no_progress", False) or not sys.stderr.isatty():
        return None
    return ProgressBar(sys.stderr)


class ProgressBar:
    """``[#####.....]  52%  position 5200/10000`` redrawn in place, at most ten times a
    second."""

    def __init__(self, out: TextIO, width: int = 40) -> None:
        self._out = out
        self._width = width
        self._drawn = 0.0

    def __call__(self, position: int, end: int) -> None:
        now = time.monotonic()
        done = position >= end
        if not done and now - self._drawn < 0.1:
            return
        self._drawn = now
        share = min(position / end, 1.0) if end else 1.0
        filled = int(share * self._width)
        bar = "#" * filled + "." * (self._width - filled)
        self._out.write(f"\r[{bar}] {share:4.0%}  position {position}/{end}")
        if done:
            self._out.write("\n")
        self._out.flush()


def dumps(data: Any) -> str:
    """One compact JSON line (times as ISO strings)."""
    return json.dumps(data, sort_keys=True, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, set | frozenset):
        return sorted(value)
    return str(value)
