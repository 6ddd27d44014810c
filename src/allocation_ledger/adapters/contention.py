"""Which providers this process has lately seen other writers clash on.

A write's first attempt takes its providers from the process's cache without asking the
store (a busy host then costs no read), and the store's unique key refuses the append if a
copy was stale. When several processes claim on the same few hosts, most cached copies
are stale: the refused append has waited its turn for the store's append lock for nothing,
and the command runs again. So after a clash on a provider, this process reads that
provider fresh (only the events after its cached copy) before deciding on it, for a while;
a host nobody else writes to keeps its zero-read path. Correctness does not depend on it:
the unique key still decides every append.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

#: Seconds a provider counts as contended after the last clash seen on it.
CONTENDED_FOR = 2.0
#: At most this many providers remembered (the oldest are let go first).
REMEMBERED = 100_000


class Contention:
    """Providers with a recent clash, and when it was seen (thread-safe)."""

    def __init__(self, seconds: float = CONTENDED_FOR, remembered: int = REMEMBERED) -> None:
        self._seconds = seconds
        self._remembered = remembered
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def clashed(self, providers: Iterable[str]) -> None:
        """An append writing to ``providers`` was refused for a stale provider copy."""
        now = time.monotonic()
        with self._lock:
            for provider in providers:
                self._seen.pop(provider, None)  # re-inserted last: the dict stays in age order
                self._seen[provider] = now
            while len(self._seen) > self._remembered:
                del self._seen[next(iter(self._seen))]

    def contended(self, provider: str) -> bool:
        """True when a clash on ``provider`` was seen within the last few seconds."""
        seen = self._seen.get(provider)
        return seen is not None and time.monotonic() - seen < self._seconds
