"""The benchmark's workload: roomy hosts, and instances that claim a small flavour on them.

Hosts are big enough that no claim of a run is ever refused for capacity, so every figure
measures the successful path: load, decide, one atomic append.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

from allocation_ledger.application.command_ids import intent
from allocation_ledger.application.handlers import claims
from allocation_ledger.application.inputs import ClaimIn, parse
from allocation_ledger.application.ledger import Ledger
from allocation_ledger.application.unit_of_work import UnitOfWork
from allocation_ledger.application.views import ConsumerView
from allocation_ledger.domain.provider import Provider

PROJECT = "bench-project"
USER = "bench-user"
#: The flavour every benchmark instance claims.
FLAVOUR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
#: Room for millions of claims of ``FLAVOUR``.
INVENTORY = {rc: {"total": 2_000_000_000} for rc in FLAVOUR}
REQUEST = {"actor": "bench", "reason": "allocation-ledger bench"}


def new_id() -> str:
    """A fresh UUID string."""
    return str(uuid.uuid4())


def a_host(ledger: Ledger, name: str = "bench-host", host: str | None = None) -> str:
    """Register a roomy root provider (``host``, else a new UUID); returns its UUID. Its
    name holds the whole UUID: eight hex digits of it collide among 100,000 hosts more often
    than not (T5 at its target's size)."""
    host = host or new_id()
    ledger.register_provider(host, f"{name}-{host}", inventories=INVENTORY)
    return host


def claim_new(ledger: Ledger, host: str) -> int:
    """A new instance claims ``FLAVOUR`` on ``host``; returns its generation."""
    view = ledger.claim(new_id(), {host: dict(FLAVOUR)}, None, project_id=PROJECT,
                        user_id=USER, request=REQUEST)
    return view.generation or 0


def claimer(ledger: Ledger, host: str) -> Callable[[], object]:
    """An operation for :func:`~benchmarks.stats.run_for`: one new claim."""
    return lambda: claim_new(ledger, host)


def shared_claimer(ledger: Ledger, hosts: list[str]) -> Callable[[], object]:
    """An operation: one new claim on a host picked at random from ``hosts``, which other
    writers claim on too (the contended shape)."""
    pick = random.Random().choice
    return lambda: claim_new(ledger, pick(hosts))


def batch_claimer(ledger: Ledger, host: str, size: int) -> Callable[[], object]:
    """An operation: ``size`` new instances claim on ``host`` in one atomic append."""

    def claim_batch() -> object:
        return ledger.write_allocations(
            [
                {"consumer_uuid": new_id(), "allocations": {host: dict(FLAVOUR)},
                 "expected_generation": None, "project_id": PROJECT, "user_id": USER}
                for _ in range(size)
            ],
            request=REQUEST,
        )

    return claim_batch


def id_claimer(ledger: Ledger, host: str) -> Callable[[], object]:
    """An operation: one new claim under a command id the caller chose."""

    def claim() -> object:
        return ledger.claim(new_id(), {host: dict(FLAVOUR)}, None, project_id=PROJECT,
                            user_id=USER, request=REQUEST, command_id=f"bench-{new_id()}")

    return claim


def unrecorded_claimer(ledger: Ledger, host: str) -> Callable[[], object]:
    """An operation: one new claim as the ledger made it before command records (validated,
    decided, appended and viewed, with no record): the cost of the record, by difference."""

    def claim() -> object:
        cmd = parse(ClaimIn, consumer_uuid=new_id(), allocations={host: dict(FLAVOUR)},
                    expected_generation=None, project_id=PROJECT, user_id=USER, devices={})
        uow = UnitOfWork(ledger.store, intent("claim", None, REQUEST, cmd),
                         policy=ledger.policy, attempt=1, new_consumers=[cmd.consumer_uuid])
        claims.claim(uow, cmd)
        changed = uow.changed()
        ledger.store.save(*changed)  # its events alone: no record
        ledger.store.remember(p for p in changed if isinstance(p, Provider))  # as commit does
        return ConsumerView.of(cmd.consumer_uuid, uow.consumer(cmd.consumer_uuid))

    return claim
