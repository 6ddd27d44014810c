"""``allocation-ledger metrics``: the ledger's Prometheus metrics, printed once or served.

This command exposes the gauges read from the store: the head, migrations in flight and
stale, and each projection's position and lag when the read models were built (in the
ledger's store, or at ``--projections-url``). Commands are counted only in the process
that runs them, so their counters are not shown here (they could only read 0): the
server's ``GET /metrics`` (``allocation-ledger serve``) has them, as has an application
that calls ``allocation_ledger.metrics.instrument``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from allocation_ledger.cli.options import non_negative_float, positive_int

if TYPE_CHECKING:
    from allocation_ledger.adapters.eventstore import EventStore
    from allocation_ledger.metrics import LedgerMetrics
    from allocation_ledger.projections.readmodels import ReadModels

NAME = "metrics"
HELP = "Prometheus metrics: head position, migrations in flight and stale, projection lag"
EXAMPLES = """\
  allocation-ledger metrics                          # the text format, once
  allocation-ledger metrics --json --stale-after 600
  allocation-ledger metrics --serve 9464             # /metrics until SIGINT/SIGTERM
  allocation-ledger metrics --projections-url postgresql://ledger@reports/ledger
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Threshold, read models and serving."""
    parser.add_argument("--stale-after", type=non_negative_float, default=3600.0,
                        metavar="SECONDS",
                        help="a migration in flight this long counts as stale (default 3600)")
    parser.add_argument("--serve", type=positive_int, default=None, metavar="PORT",
                        help="serve /metrics on this port until SIGINT or SIGTERM")
    parser.add_argument("--address", default="127.0.0.1",
                        help="address to serve on (default 127.0.0.1)")
    parser.add_argument("--projections-url", default=None, metavar="URL",
                        help="the read models' store, for their lag (default: the ledger's "
                             "own, when they were built there)")


def run(args: argparse.Namespace) -> int:
    """Print or serve the metrics."""
    from allocation_ledger.cli.output import print_json
    from allocation_ledger.cli.read_only import store_of
    from allocation_ledger.metrics import LedgerMetrics

    with store_of(args) as store, read_models_of(store, args.projections_url) as read:
        metrics = LedgerMetrics(store, stale_after=args.stale_after, commands=False,
                                positions=read.positions if read is not None else None)
        if args.serve is not None:
            serve_until_stopped(metrics, args.serve, args.address)
        elif args.json:
            print_json(samples(metrics.exposition()))
        else:
            print(metrics.exposition(), end="")
    return 0


@contextmanager
def read_models_of(store: EventStore, url: str | None) -> Iterator[ReadModels | None]:
    """The read models, for their positions: at ``url`` (``$PROJECTIONS_URL``), which must
    hold them, or in the ledger's store when they were built there (else ``None``: there is
    no lag to show). Nothing is created."""
    import os

    from allocation_ledger.domain.errors import StoreNotFound
    from allocation_ledger.projections.readmodels import ReadModels
    from allocation_ledger.projections.store import URL_ENV_VAR, open_engine

    try:
        engine = open_engine(store.env, url, create=False)
    except StoreNotFound:
        if url or os.environ.get(URL_ENV_VAR):
            raise
        yield None
        return
    with ReadModels(store, engine) as read:
        yield read


def samples(text: str) -> dict[str, float]:
    """``name{labels}`` -> value of every sample in a text exposition."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            found[name] = float(value)
    return found


def serve_until_stopped(metrics: LedgerMetrics, port: int, address: str) -> None:
    """Serve ``/metrics`` until SIGINT or SIGTERM."""
    import signal
    import sys
    import threading

    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set())
                for s in (signal.SIGINT, signal.SIGTERM)}
    server = metrics.serve(port, address)
    print(f"serving metrics on http://{address}:{port}/metrics", file=sys.stderr, flush=True)
    try:
        stop.wait()
    finally:
        server.shutdown()
        for s, handler in previous.items():
            signal.signal(s, handler)
