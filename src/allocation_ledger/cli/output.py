"""Output for people and for programs: JSON with ISO 8601 times, tables that fit the
terminal, one progress bar. Cheap to import."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import Enum
from typing import Any, TextIO
from uuid import UUID


def plain(value: Any) -> Any:
    """A value JSON can hold: times as ISO 8601 (``T``), sets sorted, dataclasses as dicts."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, set | frozenset):
        return sorted(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, UUID):
        return str(value)
    return str(value)


def dumps(data: Any, *, pretty: bool = False) -> str:
    """JSON text: one compact line, or indented with ``pretty``."""
    return json.dumps(data, sort_keys=True, default=plain, indent=2 if pretty else None)


def print_json(data: Any, out: TextIO | None = None) -> None:
    """Print ``data`` as indented JSON."""
    print(dumps(data, pretty=True), file=out or sys.stdout)


def text(value: Any) -> str:
    """A value for a person, never a Python repr: ``-`` for nothing, times in ISO 8601,
    ``yes``/``no``, lists joined, allocations as ``provider: CLASS=amount, ...; ...``."""
    if value is None or (isinstance(value, dict | list) and not value):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(text(v) for v in value)
    if isinstance(value, dict):
        nested = any(isinstance(v, dict) for v in value.values())
        if nested:
            return "; ".join(f"{k}: {text(v)}" for k, v in value.items())
        return ", ".join(f"{k}={text(v)}" for k, v in value.items())
    return str(value)


def cell(value: Any, fmt: str = "table") -> str:
    """A table cell: ``-`` for nothing in a table, an empty field in CSV (as CSV readers
    take a null); numbers as they are."""
    if value is None:
        return "" if fmt == "csv" else "-"
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value)


def when(value: datetime | None) -> str:
    """A time for a person: ISO 8601 with a ``T``, to the second."""
    return value.isoformat(timespec="seconds") if value else "-"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], out: TextIO | None = None,
          *, width: int | None = None, fmt: str = "table") -> None:
    """Aligned columns under a header; on a terminal (or given a ``width``) the last column
    is cut to fit it, while piped output keeps every character. ``fmt="csv"``: CSV."""
    out = out or sys.stdout
    cells = [[str(c) for c in row] for row in rows]
    if fmt == "csv":
        import csv

        writer = csv.writer(out, lineterminator="\n")
        writer.writerows([list(headers), *cells])
        return
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    if width is None and out.isatty():
        width = shutil.get_terminal_size((120, 24)).columns
    fixed = sum(widths[:-1]) + 2 * (len(widths) - 1)
    last = max(width - fixed, len(headers[-1]), 20) if width else sys.maxsize
    for row in [list(headers), *cells]:
        text = "  ".join(c.ljust(w) for c, w in zip(row[:-1], widths[:-1], strict=True))
        tail = row[-1] if len(row[-1]) <= last else row[-1][: last - 1] + "…"
        print(f"{text}  {tail}".rstrip() if text else tail, file=out)


class ProgressBar:
    """``label [#####.....]  52% 5,200/10,000 events 3,100/s ETA 0:00:02``, redrawn in place
    on ``stream`` at most ten times a second, only when it is a terminal (no colours).
    Call with ``(position, end)``; the line ends when ``end`` is reached or at ``done()``."""

    def __init__(self, stream: TextIO, label: str = "progress", *, enabled: bool = True,
                 width: int = 30) -> None:
        self.stream = stream
        self.label = label
        self.enabled = enabled and stream.isatty()
        self.width = width
        self._started = time.monotonic()
        self._first: int | None = None
        self._drawn = 0.0
        self._ended = False

    def __call__(self, position: int, end: int) -> None:
        if not self.enabled:
            return
        if self._first is None:
            self._first = position
        now = time.monotonic()
        finished = position >= end
        if now - self._drawn < 0.1 and not finished:
            return
        self._drawn = now
        share = min(position / end, 1.0) if end else 1.0
        filled = int(self.width * share)
        elapsed = max(now - self._started, 1e-9)
        rate = (position - self._first) / elapsed
        if finished:
            tail = f"in {_clock(elapsed)}"
        else:
            tail = f"ETA {_clock((end - position) / rate)}" if rate > 0 else "ETA ?"
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] "
                          f"{share:4.0%} {position:,}/{end:,} events {rate:,.0f}/s {tail}")
        self.stream.flush()
        if finished:
            self.done()

    def done(self) -> None:
        """End the line (if anything was drawn)."""
        if self.enabled and self._drawn and not self._ended:
            self._ended = True
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    return f"{seconds // 3600}:{seconds // 60 % 60:02}:{seconds % 60:02}"


def progress_bar(enabled: bool, label: str) -> ProgressBar | None:
    """A bar on stderr when it is a terminal and not switched off; else ``None``."""
    bar = ProgressBar(sys.stderr, label, enabled=enabled)
    return bar if bar.enabled else None
