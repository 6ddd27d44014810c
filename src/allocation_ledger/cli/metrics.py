"""``allocation-ledger metrics``: the ledger's Prometheus metrics, printed once or served.

Commands are counted only in the process that runs them: a long-running process
(``projections follow --metrics-port``, which adds the read models' lag, or an application
that calls ``allocation_ledger.metrics.instrument``) exposes its counters; this command
exposes the gauges read from the store.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from allocation_ledger.cli.options import non_negative_float, positive_int

if TYPE_CHECKING:
    from allocation_ledger.metrics import LedgerMetrics

NAME = "metrics"
HELP = "Prometheus metrics: head position, migrations in flight and stale, projection lag"
EXAMPLES = """\
  allocation-ledger metrics                          # the text format, once
  allocation-ledger metrics --json --stale-after 600
  allocation-ledger metrics --serve 9464             # /metrics until SIGINT/SIGTERM
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


def run(args: argparse.Namespace) -> int:
    """Print or serve the metrics."""
    from allocation_ledger.cli.output import print_json
    from allocation_ledger.cli.read_only import store_of
    from allocation_ledger.metrics import LedgerMetrics

    with store_of(args) as store:
        metrics = LedgerMetrics(store, stale_after=args.stale_after)
        if args.serve is not None:
            serve_until_stopped(metrics, args.serve, args.address)
        elif args.json:
            print_json(samples(metrics.exposition()))
        else:
            print(metrics.exposition(), end="")
    return 0


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
