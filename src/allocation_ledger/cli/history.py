"""``allocation-ledger history``: every event of a consumer, provider or migration, or the
ledger between two positions or times as JSON lines.

    allocation-ledger history consumer UUID [--json]
    allocation-ledger history migration UUID [--json]
    allocation-ledger history ledger [--from-position N] [--to-position N]
                                     [--since TIME] [--until TIME]
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from allocation_ledger.adapters.eventstore import EventStore
from allocation_ledger.audit.history import (
    HistoryEntry,
    consumer_history,
    ledger_records,
    migration_history,
    provider_history,
)
from allocation_ledger.audit.reading import position_at
from allocation_ledger.cli import values
from allocation_ledger.cli.auditing import (
    add_output_arguments,
    dumps,
    parse_time,
    store_of,
)
from allocation_ledger.domain.errors import InvalidRequest

NAME = "history"
HELP = "every event of a consumer, provider or migration; or the ledger as JSON lines"

READERS = {"consumer": consumer_history, "provider": provider_history,
           "migration": migration_history}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """What to list and, for the ledger, which part."""
    parser.add_argument("what", choices=[*READERS, "ledger"])
    parser.add_argument("uuid", nargs="?", help="the consumer, provider or migration")
    parser.add_argument("--from-position", type=values.position, default=None, metavar="N")
    parser.add_argument("--to-position", type=values.position, default=None, metavar="N")
    parser.add_argument("--since", type=parse_time, default=None, metavar="TIME",
                        help="from the first event at or after this ISO 8601 time")
    parser.add_argument("--until", type=parse_time, default=None, metavar="TIME",
                        help="up to the last event at or before this ISO 8601 time")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Print the history asked for."""
    with store_of(args) as store:
        if args.what == "ledger":
            start, stop = _range(store, args)
            for record in ledger_records(store, start, stop):
                print(dumps(record))
            return 0
        if not args.uuid:
            raise InvalidRequest(f"history {args.what} needs a UUID")
        entries = READERS[args.what](store, args.uuid)
    for entry in entries:
        print(dumps(entry.to_dict()) if args.json else line(entry))
    return 0


def line(entry: HistoryEntry) -> str:
    """One readable line: position, time, who, request, what changed, why."""
    who = entry.actor or "-"
    request = entry.request_id or "-"
    why = f"  ({entry.reason})" if entry.reason else ""
    return (f"#{entry.position:<7} {entry.time.isoformat(timespec='seconds')}  {who:<12} "
            f"{request:<14} {entry.summary}{why}")


def _range(store: EventStore, args: argparse.Namespace) -> tuple[int, int | None]:
    start = args.from_position or 1
    stop = args.to_position
    if args.since is not None:
        start = max(start, position_at(store, args.since - timedelta(microseconds=1)) + 1)
    if args.until is not None:
        until = position_at(store, args.until)
        stop = until if stop is None else min(stop, until)
    return start, stop
