"""A one-line progress bar for catch-ups, drawn on a terminal only."""

from __future__ import annotations

import time
from typing import TextIO

WIDTH = 30
#: Redraw at most this often (seconds).
EVERY = 0.1


class ProgressBar:
    """Call with ``(position, head)``; draws on ``stream`` only if it is a terminal."""

    def __init__(self, stream: TextIO, label: str = "projections", *,
                 enabled: bool = True) -> None:
        self.stream = stream
        self.label = label
        self.enabled = enabled and stream.isatty()
        self._started = time.monotonic()
        self._first: int | None = None
        self._drawn = 0.0

    def __call__(self, position: int, head: int) -> None:
        if not self.enabled:
            return
        if self._first is None:
            self._first = position
        now = time.monotonic()
        if now - self._drawn < EVERY and position < head:
            return
        self._drawn = now
        share = position / head if head else 1.0
        filled = int(WIDTH * share)
        rate = (position - self._first) / max(now - self._started, 1e-9)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] "
                          f"{share:4.0%} {position:,}/{head:,} events {rate:,.0f}/s")
        self.stream.flush()

    def done(self) -> None:
        """End the line (if anything was drawn)."""
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
