"""What ``allocation-ledger projections ...`` (and the projection scripts) does with the
read side.

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
from typing import Any, TextIO

from allocation_ledger.bootstrap import open_read_models
from allocation_ledger.cli.output import ProgressBar, print_json
from allocation_ledger.domain.errors import StoreUnavailable
from allocation_ledger.projections.catalog import UnknownProjection, select
from allocation_ledger.projections.readmodels import ReadModels, Report

log = logging.getLogger("projections")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``scripts/rebuild_projections.py`` and ``scripts/run_projections.py``:
    ``allocation-ledger projections ...``, with its global options and its one error path."""
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
        with open_read_models(args.url, args.projections_url, args.name,
                             create=args.action != "status") as read:
            if args.action == "status":
                status = _status(read)
                print_json(status) if args.json else _print_status(status, sys.stdout)
                return 0
            return _catch_up(args, read, stop)


def _follow(args: argparse.Namespace, stop: Stop) -> int:
    """Follow the ledger until stopped. A store that cannot be reached at the start is
    waited for, as the runner waits for one that goes away while it runs (one line said,
    then a retry every ``--poll-interval``); a missing ledger or a bad URL still fails."""
    said = False
    while not stop.is_set():
        try:
            read = open_read_models(args.url, args.projections_url, args.name)
        except StoreUnavailable as err:
            if not said:
                print(f"projections follow: {err}; retrying every {args.poll_interval}s",
                      file=sys.stderr, flush=True)
                said = True
            log.info("projections follow: %s", err)
            stop.wait(args.poll_interval)
            continue
        with read:
            _log_to_stderr()
            server = _serve_metrics(read, args.metrics_port) if args.metrics_port else None
            log.info("following from %s", _positions(read.positions()))
            try:
                read.follow(stop, args.poll_interval, batch_size=args.batch_size)
            finally:
                if server is not None:
                    server.shutdown()
            log.info("stopped at %s", _positions(read.positions()))
        return 0
    return _stopped_code(stop)


def _catch_up(args: argparse.Namespace, read: ReadModels, stop: Stop) -> int:
    """Rebuild or resume, with a progress bar; the exit code."""
    bar = ProgressBar(sys.stderr, args.action, enabled=not args.no_progress)
    run = read.rebuild if args.action == "rebuild" else read.resume
    report = run(stop, batch_size=args.batch_size, progress=bar)
    bar.done()
    if args.json:
        print_json({"positions": report.positions, "head": report.head,
                    "events": report.events, "seconds": report.seconds,
                    "rows_written": report.rows_written, "counts": report.counts})
    else:
        _print_report(report, sys.stdout)
    return _stopped_code(stop)


def _log_to_stderr() -> None:
    """A long-running follower logs with timestamps (and the runner's warnings) on stderr,
    unless the embedding application configured logging itself."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _serve_metrics(read: ReadModels, port: int) -> Any:
    from allocation_ledger.metrics import LedgerMetrics

    metrics = LedgerMetrics(read.store, positions=read.positions, commands=False)
    server = metrics.serve(port)
    log.info("serving metrics on http://127.0.0.1:%s/metrics", port)
    return server


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


def _status(read: ReadModels) -> dict[str, Any]:
    head = read.store.recorder.max_notification_id() or 0
    return {"head": head,
            "projections": {name: {"position": position, "behind": head - position}
                            for name, position in read.positions().items()},
            "counts": read.counts()}


def _print_status(status: dict[str, Any], out: TextIO) -> None:
    for name, p in status["projections"].items():
        print(f"{name:<12} position {p['position']} of {status['head']} "
              f"(behind by {p['behind']})", file=out)
    for table, count in status["counts"].items():
        print(f"  {table:<24} {count:>9} rows", file=out)
