"""A long, randomized, reproducible ledger, written through the service API only.

``populate(ledger, seed, steps)`` registers a few hosts (with NUMA and GPU children, GPUs
with named VGPU devices), then runs ``steps`` random commands of every type: claims (nested,
with devices, replacing), multi-consumer writes, releases and forced releases, swaps of
every kind with and without a destination claim, confirms, reverts, forced live migrations,
evacuations (scheduled and forced) and their completion, Nova's clean-ups by plain write
(a failed destination given up mid-move, an evacuation rolled back or finished), device
changes, inventory changes (over capacity included), inventory removal, and host
registration and deletion. Refused
commands are part of the game and write nothing.

Every command carries ``request={"request_id": ...}``; now and then two commands share one,
as a caller's global request id would. The same seed always gives the same commands.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, cast

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import LedgerError
from benchmarks import random_moves as moves

PROJECT, USER = "project-r", "user-r"


@dataclass
class World:
    """What the generator created (the ledger stays the source of truth)."""

    rng: random.Random
    seed: int
    hosts: list[str] = field(default_factory=list)
    gpus: dict[str, str] = field(default_factory=dict)  # host -> GPU child
    numas: dict[str, str] = field(default_factory=dict)  # host -> NUMA child
    instances: list[str] = field(default_factory=list)
    moving: list[str] = field(default_factory=list)  # migrations that may be in flight
    done: Counter[str] = field(default_factory=Counter)  # command -> successes
    refused: Counter[str] = field(default_factory=Counter)
    #: positions where a command ended (the ledger's head after each call)
    command_ends: set[int] = field(default_factory=set)
    _request: dict[str, str] = field(default_factory=dict)
    _count: int = 0

    def new_id(self) -> str:
        """A UUID drawn from the seeded generator."""
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def next_request(self) -> None:
        """The request stamped on the next command (now and then the previous one again)."""
        self._count += 1
        if not self._request or self.rng.random() > 0.1:
            self._request = {"actor": "random-ledger",
                             "request_id": f"req-{self.seed}-{self._count}"}

    @property
    def who(self) -> dict[str, str]:
        """The current command's request."""
        return self._request


def populate(ledger: Ledger, seed: int, steps: int, hosts: int = 4) -> World:
    """Run ``steps`` random commands against ``ledger``; returns what it did."""
    world = World(random.Random(seed), seed)
    world.command_ends.add(_head(ledger))
    ledger = cast(Ledger, _Recording(ledger, world.command_ends))
    for _ in range(hosts):
        world.next_request()
        moves.add_host(ledger, world)
    actions = moves.ACTIONS
    names = list(actions)
    weights = [actions[n][1] for n in names]
    for _ in range(steps):
        name = world.rng.choices(names, weights)[0]
        world.next_request()
        try:
            if actions[name][0](ledger, world) is not False:
                world.done[name] += 1
        except LedgerError:
            world.refused[name] += 1
    return world


def _head(ledger: Ledger) -> int:
    return ledger.store.recorder.max_notification_id() or 0


class _Recording:
    """The ledger, noting its head after every call: each one is where a command ended."""

    def __init__(self, ledger: Ledger, ends: set[int]) -> None:
        self._ledger, self._ends = ledger, ends

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._ledger, name)
        if not callable(found):
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return found(*args, **kwargs)
            finally:
                self._ends.add(_head(self._ledger))

        return call
