"""What the random-ledger generator has created so far: hosts, instances, moves in flight,
and what each command did (the ledger stays the source of truth)."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field


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
    gone: list[str] = field(default_factory=list)  # deleted hosts (their UUIDs may come back)
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
