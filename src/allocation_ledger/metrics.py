"""Prometheus metrics of a ledger (the optional ``metrics`` extra: ``prometheus-client``).

Two kinds, on one registry of their own (never the process-global one):

- counted as commands run, once :func:`instrument` has given the store a
  :class:`CommandMetrics` (until then the command path only reads one attribute that is
  ``None``): ``ledger_commands_total``, ``ledger_refusals_total{kind}`` (the
  ``LedgerError`` class), ``ledger_retries_total`` (provider clashes and stale cached
  reads run again) and ``ledger_append_seconds`` (a histogram of the atomic append);
- read at each scrape from the store: ``ledger_head_position``,
  ``ledger_migrations_in_flight``, ``ledger_stale_migrations`` (in flight longer than the
  threshold: the leaks ``repair`` resolves) and, when read models are given,
  ``ledger_projection_position{projection}`` and ``ledger_projection_lag_events``.

The HTTP server (``allocation-ledger serve``) counts its commands and adds
``ledger_http_request_seconds{method,route,status}`` (:class:`RequestMetrics`, a histogram
by route template) and answers ``GET /metrics`` itself. A process that runs no commands
(``allocation-ledger metrics``, ``projections follow --metrics-port``) builds its registry
with ``commands=False``: counters that can only read 0 there are left out rather than shown.

Under ``serve --workers N`` (``PROMETHEUS_MULTIPROC_DIR`` set as the process starts,
prometheus_client's multiprocess mode) the counters and histograms are kept in files that
every worker writes and the scrape sums, whichever worker answers it; the gauges are read
from the store, which the workers share.

``serve(port)`` exposes them over HTTP (``/metrics``) from a daemon thread;
``exposition()`` gives the text once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from allocation_ledger.adapters.eventstore import EventStore

DEFAULT_STALE_AFTER = 3600.0


class CommandMetrics:
    """Counters the command path updates (see ``application.command_ids.handle``)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.commands = Counter("ledger_commands", "Commands appended", registry=registry)
        self.refusals = Counter("ledger_refusals", "Commands refused, by error class",
                                ["kind"], registry=registry)
        self.retries = Counter("ledger_retries",
                               "Command attempts run again (provider clash, stale read)",
                               registry=registry)
        self.append_seconds = Histogram(
            "ledger_append_seconds", "Seconds of a command's atomic append",
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0),
            registry=registry)

    def appended(self, seconds: float) -> None:
        """A command was appended in ``seconds``."""
        self.commands.inc()
        self.append_seconds.observe(seconds)

    def refused(self, kind: str) -> None:
        """A command was refused with the error class ``kind``."""
        self.refusals.labels(kind=kind).inc()

    def retried(self) -> None:
        """A command attempt is run again."""
        self.retries.inc()


class RequestMetrics:
    """The HTTP server's requests: a latency histogram by method, route template (never
    the path itself: its UUIDs would make a series per resource) and status."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.seconds = Histogram(
            "ledger_http_request_seconds",
            "Seconds from a request's arrival to its response's last byte",
            ["method", "route", "status"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0),
            registry=registry)

    def observed(self, method: str, route: str, status: int, seconds: float) -> None:
        """A request to ``route`` (its template) was answered ``status`` in ``seconds``."""
        self.seconds.labels(method=method, route=route, status=str(status)).observe(seconds)


class LedgerCollector(Collector):
    """Gauges read from the store (and the read models) when scraped."""

    def __init__(self, store: EventStore, stale_after: float,
                 positions: Callable[[], dict[str, int]] | None = None) -> None:
        self.store, self.stale_after, self.positions = store, stale_after, positions

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from datetime import UTC, datetime

        from allocation_ledger.application.ledger import Ledger

        head = self.store.recorder.max_notification_id() or 0
        yield GaugeMetricFamily("ledger_head_position", "Position of the newest event",
                                value=head)
        now = datetime.now(UTC)
        flying = Ledger(self.store).migrations_in_flight(now=now)
        yield GaugeMetricFamily("ledger_migrations_in_flight", "Migrations not resolved",
                                value=len(flying))
        stale = sum(1 for m in flying if m.age_seconds(now) >= self.stale_after)
        yield GaugeMetricFamily(
            "ledger_stale_migrations",
            f"Migrations in flight for {self.stale_after:g} s or more", value=stale)
        if self.positions is None:
            return
        found = self.positions()
        position = GaugeMetricFamily("ledger_projection_position",
                                     "Stored position of each projection",
                                     labels=["projection"])
        lag = GaugeMetricFamily("ledger_projection_lag_events",
                                "Events each projection is behind the ledger",
                                labels=["projection"])
        for name, at in found.items():
            position.add_metric([name], at)
            lag.add_metric([name], head - at)
        yield position
        yield lag


class LedgerMetrics:
    """A registry with a store's command counters (unless ``commands`` is false: a process
    that runs no commands) and its scrape-time gauges."""

    def __init__(self, store: EventStore, *, stale_after: float = DEFAULT_STALE_AFTER,
                 positions: Callable[[], dict[str, int]] | None = None,
                 commands: bool = True) -> None:
        self.registry = CollectorRegistry()
        self.commands = CommandMetrics(self.registry) if commands else None
        gauges = LedgerCollector(store, stale_after, positions)
        self.registry.register(gauges)
        #: what a scrape reads: the registry, or every process's counters beside the gauges
        self.exposed = self.registry
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            self.exposed = CollectorRegistry()
            multiprocess.MultiProcessCollector(self.exposed)  # type: ignore[no-untyped-call]
            self.exposed.register(gauges)

    def exposition(self) -> str:
        """The metrics in Prometheus' text format."""
        return self.exposition_bytes().decode()

    def exposition_bytes(self) -> bytes:
        """The metrics in Prometheus' text format, encoded (what ``/metrics`` sends)."""
        return generate_latest(self.exposed)

    def serve(self, port: int, address: str = "127.0.0.1") -> Any:
        """Serve ``/metrics`` on ``address:port`` from a daemon thread; the server."""
        from prometheus_client import start_http_server

        server, _thread = start_http_server(port, addr=address, registry=self.exposed)
        return server


def instrument(store: EventStore, **options: Any) -> LedgerMetrics:
    """Metrics for ``store``, its commands counted from now on."""
    metrics = LedgerMetrics(store, commands=True, **options)
    store.metrics = metrics.commands
    return metrics
