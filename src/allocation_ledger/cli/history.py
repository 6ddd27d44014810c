"""``allocation-ledger history``: every event of a consumer, provider or migration, or the
ledger between two positions or times as JSON lines (one JSON array with ``--json``).

    allocation-ledger history consumer UUID [--json]
    allocation-ledger history migration UUID [--json]
    allocation-ledger history trait CUSTOM_NAME [--json]
    allocation-ledger history ledger [--from-position N] [--to-position N]
                                     [--since TIME] [--until TIME]
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from allocation_ledger.cli import values
from allocation_ledger.cli.options import UsageError, parse_time

if TYPE_CHECKING:
    from collections.abc import Iterator

    from allocation_ledger.adapters.eventstore import EventStore
    from allocation_ledger.audit.history import HistoryEntry

NAME = "history"
HELP = ("every event of a consumer, provider, migration or custom trait; or the ledger as "
        "JSON lines (--json: one array)")
EXAMPLES = """\
  allocation-ledger history provider 6ae32ac4           # who changed this host, and why
  allocation-ledger history migration 51f0 --json
  allocation-ledger history trait CUSTOM_GOLD           # when it was created and deleted
  allocation-ledger history ledger --since 2026-11-21T14:00:00Z --until 2026-11-21T15:00:00Z
"""
KINDS = ("consumer", "provider", "migration")
HEADERS = ("POSITION", "TIME", "ACTOR", "REQUEST", "CHANGE (REASON)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """What to list and, for the ledger, which part."""
    parser.add_argument("what", choices=[*KINDS, "trait", "ledger"],
                        help="one stream's history, or the whole ledger")
    parser.add_argument("uuid", nargs="?",
                        help="the consumer, provider or migration (UUID or unique prefix), "
                             "or the trait's name")
    parser.add_argument("--from-position", type=values.position, default=None, metavar="N",
                        help="ledger: from this position")
    parser.add_argument("--to-position", type=values.position, default=None, metavar="N",
                        help="ledger: up to this position")
    parser.add_argument("--since", type=parse_time, default=None, metavar="TIME",
                        help="ledger: from the first event at or after this ISO 8601 time")
    parser.add_argument("--until", type=parse_time, default=None, metavar="TIME",
                        help="ledger: up to the last event at or before this ISO 8601 time")


def run(args: argparse.Namespace) -> int:
    """Print the history asked for."""
    from allocation_ledger.audit import history
    from allocation_ledger.cli.output import dumps, print_json, table
    from allocation_ledger.cli.read_only import resolve_id, store_of

    if args.what != "ledger" and not args.uuid:
        raise UsageError(f"history {args.what} needs a UUID")
    readers = {"consumer": history.consumer_history, "provider": history.provider_history,
               "migration": history.migration_history}
    with store_of(args) as store:
        if args.what == "ledger":
            start, stop = _range(store, args)
            records = history.ledger_records(store, start, stop)
            if args.json:
                _print_array(records)
            else:
                for record in records:
                    print(dumps(record))
            return 0
        if args.what == "trait":
            entries = history.trait_history(store, args.uuid)
        else:
            entries = readers[args.what](store, resolve_id(store, args.what, args.uuid))
    if args.json:
        print_json([entry.to_dict() for entry in entries])
    else:
        table(HEADERS, [row(entry, args.format) for entry in entries], fmt=args.format)
    return 0


def row(entry: HistoryEntry, fmt: str = "table") -> list[str]:
    """One row: position, time, who, request, what changed and why. A table shows the
    position as ``#N`` and nothing as ``-``; CSV the number and an empty field."""
    from allocation_ledger.cli.output import cell

    why = f"  ({entry.reason})" if entry.reason else ""
    position = str(entry.position) if fmt == "csv" else f"#{entry.position}"
    return [position, entry.time.isoformat(timespec="seconds"),
            cell(entry.actor, fmt), cell(entry.request_id, fmt), f"{entry.summary}{why}"]


def _print_array(records: Iterator[dict[str, Any]]) -> None:
    """One JSON array, written a record at a time (the ledger may be long: nothing is
    held but the record being written)."""
    from allocation_ledger.cli.output import dumps

    print("[", end="")
    for i, record in enumerate(records):
        print(("," if i else "") + "\n" + dumps(record), end="")
    print("\n]")


def _range(store: EventStore, args: argparse.Namespace) -> tuple[int, int | None]:
    from allocation_ledger.audit.ledger_events import position_at

    start = args.from_position or 1
    stop = args.to_position
    if args.since is not None:
        start = max(start, position_at(store, args.since - timedelta(microseconds=1)) + 1)
    if args.until is not None:
        until = position_at(store, args.until)
        stop = until if stop is None else min(stop, until)
    return start, stop
