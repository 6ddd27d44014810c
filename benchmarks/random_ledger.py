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
from typing import Any, cast

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import LedgerError
from benchmarks import random_moves as moves
from benchmarks.random_world import World

PROJECT, USER = "project-r", "user-r"


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
