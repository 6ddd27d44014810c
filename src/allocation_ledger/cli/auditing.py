"""Helpers shared by the ``audit``, ``history`` and ``state-at`` commands: times, the
store, JSON output and the progress bar."""

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
from allocation_ledger.bootstrap import open_store


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
    """The event store ``--url`` names (which must hold a ledger: a read creates nothing),
    closed afterwards."""
    store, _ = open_store(args.url, create=False)
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
