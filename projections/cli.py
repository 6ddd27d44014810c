"""The read side's command line: ``allocation-ledger projections ...`` and the scripts.

- ``rebuild``: empty the tables and replay the ledger from its first event;
- ``resume``: catch up from each projection's stored position;
- ``follow``: catch up, then keep up with new events until SIGINT or SIGTERM;
- ``status``: each projection's position, the ledger's head, the row counts.

A progress bar is drawn on stderr when it is a terminal. SIGINT and SIGTERM stop a run at
the next batch: what was committed stays, and a later ``resume`` carries on from there.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from allocation_ledger.domain.errors import StoreUnavailable
from projections.catalog import UnknownProjection, select
from projections.progress import ProgressBar
from projections.readmodels import ReadModels, Report

log = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``scripts/rebuild_projections.py`` and ``scripts/run_projections.py``:
    ``allocation-ledger projections ...``, with its one error path."""
    from allocation_ledger.cli import main as cli_main

    return cli_main(["projections", *(sys.argv[1:] if argv is None else argv)])


def run_command(args: argparse.Namespace) -> int:
    """Run one action; the exit code (130/143 when stopped by SIGINT/SIGTERM)."""
    try:
        select(args.name)
    except UnknownProjection as err:
        print(f"projections: {err}", file=sys.stderr)
        return 2
    with _stopping() as stop:
        if args.action == "follow":
            return _follow(args, stop)
        with ReadModels.open(args.url, args.projections_url, args.name,
                             create=args.action != "status") as read:
            if args.action == "status":
                _print_status(read, sys.stdout)
                return 0
            return _catch_up(args, read, stop)


def _follow(args: argparse.Namespace, stop: Stop) -> int:
    """Follow the ledger until stopped. A store that cannot be reached at the start is
    waited for, as the runner waits for one that goes away while it runs (one line said,
    then a retry every ``--poll-interval``); a missing ledger or a bad URL still fails."""
    said = False
    while not stop.is_set():
        try:
            read = ReadModels.open(args.url, args.projections_url, args.name)
        except StoreUnavailable as err:
            if not said:
                print(f"projections follow: {err}; retrying every {args.poll_interval}s",
                      file=sys.stderr, flush=True)
                said = True
            log.info("projections follow: %s", err)
            stop.wait(args.poll_interval)
            continue
        with read:
            print(f"following from {_positions(read.positions())}", file=sys.stderr)
            read.follow(stop, args.poll_interval, batch_size=args.batch_size)
            print(f"stopped at {_positions(read.positions())}", file=sys.stderr)
        return 0
    return _stopped_code(stop)


def _catch_up(args: argparse.Namespace, read: ReadModels, stop: Stop) -> int:
    """Rebuild or resume, with a progress bar; the exit code."""
    bar = ProgressBar(sys.stderr, args.action, enabled=not args.quiet)
    run = read.rebuild if args.action == "rebuild" else read.resume
    report = run(stop, batch_size=args.batch_size, progress=bar)
    bar.done()
    _print_report(report, sys.stdout)
    return _stopped_code(stop)


class Stop(threading.Event):
    """Set by SIGINT or SIGTERM; remembers which."""

    signum: int | None = None


@contextmanager
def _stopping() -> Iterator[Stop]:
    """A :class:`Stop` set by SIGINT or SIGTERM (the previous handlers come back after)."""
    stop = Stop()
    signals = (signal.SIGINT, signal.SIGTERM)

    def handler(signum: int, _frame: object) -> None:
        stop.signum = signum
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield stop
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _stopped_code(stop: Stop) -> int:
    return 128 + stop.signum if stop.signum is not None else 0


def _positions(positions: dict[str, int]) -> str:
    return ", ".join(f"{name} {position}" for name, position in positions.items())


def _print_report(report: Report, out: TextIO) -> None:
    for name, position in report.positions.items():
        print(f"{name:<12} position {position} of {report.head}", file=out)
    print(f"{report.events} events in {report.seconds:.2f}s "
          f"({report.events_per_second:,.0f} events/s), {report.rows_written} rows written",
          file=out)
    for table, count in report.counts.items():
        print(f"  {table:<24} {count:>9} rows", file=out)


def _print_status(read: ReadModels, out: TextIO) -> None:
    head = read.store.recorder.max_notification_id() or 0
    for name, position in read.positions().items():
        print(f"{name:<12} position {position} of {head} (behind by {head - position})",
              file=out)
    for table, count in read.counts().items():
        print(f"  {table:<24} {count:>9} rows", file=out)
