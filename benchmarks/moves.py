"""Moves as a workload: one instance migrates between two hosts, again and again.

A cycle is three commands, as Nova issues them: swap (the migration takes the source
allocation), the instance's destination claim, then confirm (the source is freed and the
instance stays on the destination) or revert (the destination is freed and the source comes
back). Generations are carried from one command's answer to the next, never re-read, so
the loop times only the three writes.
"""

from __future__ import annotations

from allocation_ledger.application.ledger import Ledger
from benchmarks.workload import FLAVOUR, PROJECT, REQUEST, USER, new_id


class Mover:
    """An instance on ``source`` that moves towards ``destination`` once per cycle."""

    def __init__(self, ledger: Ledger, source: str, destination: str) -> None:
        self.ledger = ledger
        self.here, self.there = source, destination
        self.instance = new_id()
        view = ledger.claim(self.instance, {source: dict(FLAVOUR)}, None, project_id=PROJECT,
                            user_id=USER, request=REQUEST)
        self.generation = view.generation or 0

    def _start(self) -> tuple[str, int]:
        """Swap and claim the destination; the migration's UUID and generation."""
        migration = new_id()
        started = self.ledger.swap(self.instance, migration, self.generation,
                                   kind="migration", request=REQUEST)
        claimed = self.ledger.claim(self.instance, {self.there: dict(FLAVOUR)}, None,
                                    project_id=PROJECT, user_id=USER, request=REQUEST)
        self.generation = claimed.generation or 0
        # The destination claim names only the instance: the migration keeps the swap's.
        return migration, started.generation or 0

    def confirm_cycle(self) -> None:
        """Swap, destination claim, confirm: the instance now lives on the other host."""
        migration, generation = self._start()
        self.ledger.confirm(migration, generation, request=REQUEST)
        self.here, self.there = self.there, self.here

    def revert_cycle(self) -> None:
        """Swap, destination claim, revert: the instance is back where it was."""
        migration, generation = self._start()
        self.ledger.revert(migration, generation, self.generation, request=REQUEST)
        self.generation += 1  # the source allocation came back: one more instance event

    def check(self) -> None:
        """Fail loudly if the generations carried along drifted from the ledger's."""
        view = self.ledger.consumer(self.instance)
        if view.generation != self.generation or self.here not in view.allocations:
            raise RuntimeError(
                f"bench mover out of step: ledger says generation {view.generation} on "
                f"{sorted(view.allocations)}, expected {self.generation} on {self.here}"
            )
