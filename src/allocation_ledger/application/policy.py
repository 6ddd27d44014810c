"""The write policy: what a command's attempt may take from this process's memory, and how
often and after what pause a clash on provider streams is tried again.

Correctness never rests on it: the store's unique (stream, version) key decides every
append, and a consumer generation conflict is never retried whatever the policy says. The
policy only trades reads against retries:

- The **first attempt** of a command trusts the process: it takes providers from the
  process's cache as they are (a busy host then costs no read) and takes the consumers the
  caller expects to be new as absent without reading them (a new instance's claim is one
  round trip). A stale copy or a consumer that exists after all makes the store refuse the
  append, or is found before a refusal counts, and the command runs again.
- **Later attempts** read everything fresh. A clash of an attempt that read fresh is
  followed by a short random pause that doubles with each attempt (writers that clashed do
  not clash again in step); a clash of a first attempt that trusted the cache is not (it
  most likely means only a stale copy).
- A provider on which a clash was seen lately (another process writes to it) is read fresh
  even on a first attempt, for ``contended_for`` seconds: its cached copy is probably stale,
  and an append refused for it would have waited its turn for nothing.
- While it is contended, an attempt also *takes a turn* on it (``takes_turns``): it holds
  the provider from before its read until its append has committed or failed, so writers to
  one host wait for each other and each decides on what the last one wrote, instead of all
  deciding on the same version and all but one clashing (``adapters/turns.py``). The wait
  is for the first contended provider of an attempt only (later ones are taken if free),
  and bounded by the store's lock timeout; after a wait in vain (its holder hung) the
  provider is written without turns for ``contended_for`` seconds. On SQLite, where it is
  asked without a round trip, the first attempt of a command decided alone (not in a group
  commit) about to append to a provider another writer holds a turn on lets that writer go
  first and counts the provider as contended, though it never clashed there itself: else a
  writer that keeps winning never takes turns, and the one that keeps losing can lose every
  attempt. Its next attempt waits for that turn a short while only
  (``adapters/turns.py``, ``YIELD_WAIT``); a command with one attempt does not yield, nor
  does any writer for ``NO_YIELD_FOR`` seconds on a provider whose turn was waited for in
  vain.

One policy is chosen per ledger in :mod:`allocation_ledger.bootstrap`.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from allocation_ledger.domain.errors import InvalidRequest

#: How many times a command that clashed only on provider streams is run in all.
MAX_ATTEMPTS = 10
#: Seconds a provider is read fresh after a clash seen on it.
CONTENDED_FOR = 2.0
#: At most this many contended providers remembered (the oldest are let go first).
REMEMBERED = 100_000
#: Seconds after a turn on a provider was waited for in vain during which a writer that
#: takes no turn there does not let another holder go first (the holder may have hung).
NO_YIELD_FOR = 60.0


@dataclass
class WritePolicy:
    """Cached reads and retries of the write path (see the module). Thread-safe."""

    #: attempts in all before :class:`ConcurrentUpdate`
    max_attempts: int = MAX_ATTEMPTS
    #: the first attempt trusts the process's cache (off: every attempt reads fresh)
    cached_first_attempt: bool = True
    #: the pause before attempt n+1 is uniform in [0, pause_unit * 2**min(n, max_doublings)]
    pause_unit: float = 0.002
    max_doublings: int = 6
    contended_for: float = CONTENDED_FOR
    #: a contended provider is held from its read to the end of the attempt, so that
    #: writers to it take turns instead of clashing (``adapters/turns.py``)
    takes_turns: bool = True
    remembered: int = REMEMBERED
    _clashes: dict[str, float] = field(default_factory=dict, init=False, repr=False)
    #: provider -> when a turn on it was last waited for in vain
    _no_turns: dict[str, float] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        problems = [f"{name} must be {rule}, got {value!r}" for name, value, rule, ok in (
            ("max_attempts", self.max_attempts, "an integer of at least 1",
             _whole(self.max_attempts) and self.max_attempts >= 1),
            ("remembered", self.remembered, "an integer of at least 1",
             _whole(self.remembered) and self.remembered >= 1),
            ("max_doublings", self.max_doublings, "an integer of at least 0",
             _whole(self.max_doublings) and self.max_doublings >= 0),
            ("pause_unit", self.pause_unit, "a number of seconds of at least 0",
             _seconds(self.pause_unit)),
            ("contended_for", self.contended_for, "a number of seconds of at least 0",
             _seconds(self.contended_for)),
            ("cached_first_attempt", self.cached_first_attempt, "True or False",
             isinstance(self.cached_first_attempt, bool)),
            ("takes_turns", self.takes_turns, "True or False",
             isinstance(self.takes_turns, bool)),
        ) if not ok]
        if problems:
            raise InvalidRequest("invalid write policy: " + "; ".join(problems),
                                 problems=problems)

    def attempts(self) -> range:
        """The attempts of one command, numbered from 1."""
        return range(1, self.max_attempts + 1)

    def trusts_cache(self, attempt: int) -> bool:
        """True when ``attempt`` may take providers from the cache and new consumers as
        absent."""
        return self.cached_first_attempt and attempt == 1

    def reads_cached(self, attempt: int, provider_uuid: str) -> bool:
        """True when ``attempt`` may take this provider from the cache unread."""
        return self.trusts_cache(attempt) and not self.contended(provider_uuid)

    def pause(self, attempt: int) -> float:
        """Seconds to wait after ``attempt`` clashed, before the next: none after an attempt
        that trusted the cache (its clash most likely means only a stale copy)."""
        if self.trusts_cache(attempt):
            return 0.0
        return random.uniform(0, self.pause_unit * 2 ** min(attempt, self.max_doublings))

    def clashed(self, providers: Iterable[str]) -> None:
        """Another writer wrote to ``providers`` (an append to them was refused, or a fresh
        read found what it wrote): read them fresh, taking turns, for a while."""
        now = time.monotonic()
        with self._lock:
            for provider in providers:
                self._clashes.pop(provider, None)  # re-inserted last: the dict stays in age order
                self._clashes[provider] = now
            while len(self._clashes) > self.remembered:
                del self._clashes[next(iter(self._clashes))]

    def takes_turn(self, provider_uuid: str) -> bool:
        """True when an attempt is to take a turn on this provider: it is contended, and no
        turn on it was waited for in vain within ``contended_for`` seconds (a writer that
        hung holding it would make every claim there wait the whole lock timeout)."""
        return (self.takes_turns and self.contended(provider_uuid)
                and not self._given_up_within(provider_uuid, self.contended_for))

    def yields_to(self, provider_uuid: str) -> bool:
        """True when a writer that holds no turn on this provider is to let another
        writer's turn there go first: turns are taken, and none on it was waited for in
        vain within :data:`NO_YIELD_FOR` seconds."""
        return self.takes_turns and not self._given_up_within(provider_uuid, NO_YIELD_FOR)

    def _given_up_within(self, provider_uuid: str, seconds: float) -> bool:
        """True when a turn on this provider was waited for in vain within ``seconds``."""
        given_up = self._no_turns.get(provider_uuid)
        return given_up is not None and time.monotonic() - given_up < seconds

    def turn_not_had(self, provider_uuid: str) -> None:
        """A turn on this provider was waited for in vain: go without turns there a while."""
        with self._lock:
            self._no_turns.pop(provider_uuid, None)
            self._no_turns[provider_uuid] = time.monotonic()
            while len(self._no_turns) > self.remembered:
                del self._no_turns[next(iter(self._no_turns))]

    def contended(self, provider_uuid: str) -> bool:
        """True when a clash on ``provider_uuid`` was seen within ``contended_for`` seconds."""
        seen = self._clashes.get(provider_uuid)
        return seen is not None and time.monotonic() - seen < self.contended_for


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _seconds(value: object) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and 0 <= value < float("inf"))
