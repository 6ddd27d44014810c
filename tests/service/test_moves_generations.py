"""The generations of instance and migration after every step of every move, exactly as
DESIGN §3 counts them: the first write leaves 1, every later write *that names the
consumer* adds 1, an emptied consumer reads ``None``. The instance's destination claim (or
its giving it up) names only the instance, so the migration's generation stays what the
swap left: a caller that read it right after the swap confirms or reverts with it, as
Nova's flow does. Each row is (command, instance generation after, migration generation
after); every command passes the numbers the rows before it show. On every store, and on
the durable ones again with the ledger reopened before every step (a restart mid-move).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.domain.errors import ConsumerGenerationConflict
from tests.builders import new_id, snapshot
from tests.invariants import assert_invariants
from tests.service.moving import FLAVOR1, FLAVOR2, FLAVOR3, claim, flat_hosts, spawn

Row = tuple[str, int | None, int | None]

BOOT: list[Row] = [("spawn", 1, None), ("swap", None, 1), ("claim", 3, 1)]
#: scenario -> (kind, destination on the same host, rows)
SCENARIOS: dict[str, tuple[str, bool, list[Row]]] = {
    "resize-confirm": ("resize", False, [*BOOT, ("confirm", 3, None)]),
    "resize-revert": ("resize", False, [*BOOT, ("revert", 4, None)]),
    "same-host-resize-confirm": ("resize", True, [*BOOT, ("confirm", 3, None)]),
    "same-host-resize-revert": ("resize", True, [*BOOT, ("revert", 4, None)]),
    "cold-migration-confirm": ("migration", False, [*BOOT, ("confirm", 3, None)]),
    "cold-migration-revert": ("migration", False, [*BOOT, ("revert", 4, None)]),
    "live-migration-confirm": ("live-migration", False, [*BOOT, ("confirm", 3, None)]),
    "live-migration-rollback": ("live-migration", False, [*BOOT, ("revert", 4, None)]),
    "live-migration-combined-confirm": ("live-migration", False, [
        ("spawn", 1, None), ("swap+claim", 2, 1), ("confirm", 2, None)]),
    "live-migration-combined-rollback": ("live-migration", False, [
        ("spawn", 1, None), ("swap+claim", 2, 1), ("revert", 3, None)]),
    "resize-no-destination-revert": ("resize", False, [
        ("spawn", 1, None), ("swap", None, 1), ("revert", 3, None)]),
    "resize-destination-failed-reclaimed-confirm": ("resize", False, [
        *BOOT, ("give-up", None, 1), ("claim", 5, 1), ("confirm", 5, None)]),
    "resize-destination-failed-revert": ("resize", False, [
        *BOOT, ("give-up", None, 1), ("revert", 5, None)]),
    "resize-reclaimed-on-destination-revert": ("resize", False, [
        *BOOT, ("reclaim", 4, 1), ("revert", 5, None)]),
}


class Walk:
    """One scenario, run row by row through the service API with the caller's numbers."""

    def __init__(self, ledger: Ledger, kind: str, same_host: bool) -> None:
        self.ledger = ledger
        self.kind = kind
        self.host1, self.host2 = flat_hosts(ledger)
        self.vm, self.mig = new_id(), new_id()
        self.new = {self.host1: FLAVOR3} if same_host else {self.host2: FLAVOR2}
        self.old = {self.host1: FLAVOR2} if same_host else {self.host1: FLAVOR1}
        self.vm_gen: int | None = None
        self.after_swap: int | None = None  # the migration's generation read after the swap

    def step(self, command: str) -> None:
        """Run ``command`` with the generations the caller holds."""
        ledger, vm, mig = self.ledger, self.vm, self.mig
        if command == "spawn":
            spawn(ledger, vm, self.old)
        elif command in ("swap", "swap+claim"):
            dest = self.new if command == "swap+claim" else None
            assert self.vm_gen is not None
            self.after_swap = ledger.swap(vm, mig, self.vm_gen, kind=self.kind,
                                          destination=dest).generation
        elif command == "claim":
            claim(ledger, vm, self.new, self.vm_gen)
        elif command == "reclaim":
            claim(ledger, vm, {rp: {**r, "VCPU": 1} for rp, r in self.new.items()},
                  self.vm_gen)
        elif command == "give-up":
            assert self.vm_gen is not None
            ledger.release(vm, self.vm_gen)
        elif command == "confirm":
            assert self.after_swap is not None
            ledger.confirm(mig, self.after_swap)
        else:
            ledger.revert(mig, self.after_swap, self.vm_gen)

    def read(self) -> tuple[int | None, int | None]:
        """The generations of instance and migration as the ledger reports them."""
        self.vm_gen = self.ledger.consumer(self.vm).generation
        mig = self.ledger.consumer(self.mig).generation
        if self.after_swap is not None:
            assert self.ledger.migration(self.mig).generation == mig
        return self.vm_gen, mig


def _walk(ledger: Ledger, scenario: str,
          reopened: Iterator[Ledger] | None = None) -> list[Row]:
    kind, same_host, rows = SCENARIOS[scenario]
    walk = Walk(ledger, kind, same_host)
    seen: list[Row] = []
    for command, _, _ in rows:
        if reopened is not None:
            walk.ledger = next(reopened)
        walk.step(command)
        seen.append((command, *walk.read()))
        assert_invariants(walk.ledger)
    return seen


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_generations_step_by_step(ledger: Ledger, scenario: str) -> None:
    assert _walk(ledger, scenario) == SCENARIOS[scenario][2]


@contextmanager
def restarting(url: str) -> Iterator[Iterator[Ledger]]:
    """A fresh ledger process (service and store) on ``url`` each time one is drawn."""
    opened: list[Ledger] = []

    def fresh() -> Iterator[Ledger]:
        while True:
            if opened:
                opened[-1].close()
            opened.append(open_ledger(url))
            yield opened[-1]

    try:
        yield fresh()
    finally:
        if opened:
            opened[-1].close()


@pytest.mark.parametrize("scenario", [
    "resize-confirm", "same-host-resize-revert", "live-migration-confirm",
    "resize-destination-failed-reclaimed-confirm"])
def test_generations_survive_a_restart_before_every_step(durable_url: str,
                                                         scenario: str) -> None:
    with restarting(durable_url) as ledgers:
        assert _walk(next(ledgers), scenario, ledgers) == SCENARIOS[scenario][2]


#: command -> how it runs with a number for the server or its migration
ZERO_OR_STALE: dict[str, Callable[[Ledger, Walk, int], object]] = {
    "claim": lambda led, w, n: claim(led, w.vm, w.new, n),
    "write": lambda led, w, n: led.write_allocations([{
        "consumer_uuid": w.vm, "allocations": w.new, "expected_generation": n,
        "project_id": "p", "user_id": "u"}]),
    "release": lambda led, w, n: led.release(w.vm, n),
    "swap": lambda led, w, n: led.swap(w.vm, new_id(), n),
    "confirm": lambda led, w, n: led.confirm(w.mig, n),
    "revert-migration": lambda led, w, n: led.revert(w.mig, n, 3),
    "revert-instance": lambda led, w, n: led.revert(w.mig, 1, n),
}


@pytest.mark.parametrize("command", list(ZERO_OR_STALE))
@pytest.mark.parametrize("number", [0, 2, 7])
def test_generation_0_is_a_conflict_like_a_stale_number(ledger: Ledger, command: str,
                                                        number: int) -> None:
    """Nova sends 0 after reading an old microversion: Placement answers a generation
    conflict, and so does the ledger, with expected and actual, writing nothing; the same
    as a stale or future number. (The instance is at 3, its migration at 1: 2 is stale for
    the one and the old, wrong number for the other.)"""
    walk = Walk(ledger, "resize", False)
    for step in ("spawn", "swap", "claim"):
        walk.step(step)
        walk.read()
    if command == "swap":  # a server at rest: confirm the move first
        ledger.confirm(walk.mig, 1)
    is_vm = command not in ("confirm", "revert-migration")
    actual = 3 if is_vm else 1
    before = snapshot(ledger)
    with pytest.raises(ConsumerGenerationConflict) as caught:
        ZERO_OR_STALE[command](ledger, walk, number)
    assert snapshot(ledger) == before
    assert caught.value.fields == {"consumer_uuid": walk.vm if is_vm else walk.mig,
                                   "expected": number, "actual": actual}
