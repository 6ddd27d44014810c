"""Builders with sensible defaults, so tests read as sentences.

    host = a_host(ledger, vcpu=16)
    vm = an_instance(ledger, {host: {"VCPU": 2}})
"""

from __future__ import annotations

import uuid
from typing import Any

from allocation_ledger import Ledger
from allocation_ledger.application.views import ConsumerView

PROJECT = "project-a"
USER = "user-a"


def new_id() -> str:
    """A fresh UUID string."""
    return str(uuid.uuid4())


def a_host(
    ledger: Ledger,
    vcpu: int | None = 16,
    memory_mb: int | None = 32768,
    disk_gb: int | None = None,
    *,
    name: str | None = None,
    parent: str | None = None,
    **inventories: dict[str, Any],
) -> str:
    """Register a provider with the given inventory; returns its UUID."""
    provider_uuid = new_id()
    inv: dict[str, dict[str, Any]] = {}
    if vcpu is not None:
        inv["VCPU"] = {"total": vcpu}
    if memory_mb is not None:
        inv["MEMORY_MB"] = {"total": memory_mb}
    if disk_gb is not None:
        inv["DISK_GB"] = {"total": disk_gb}
    inv.update(inventories)
    ledger.register_provider(provider_uuid, name or f"host-{provider_uuid[:8]}",
                             parent_uuid=parent, inventories=inv or None)
    return provider_uuid


def an_instance(
    ledger: Ledger, allocations: dict[str, dict[str, int]], **kwargs: Any
) -> ConsumerView:
    """Claim ``allocations`` for a new instance; returns its view."""
    return ledger.claim(new_id(), allocations, None, project_id=PROJECT, user_id=USER,
                        **kwargs)


def snapshot(ledger: Ledger) -> list[tuple[str, int, str, bytes]]:
    """Every stored event (stream, version, topic, state): to prove nothing was written."""
    recorder = ledger.store.recorder
    return [
        (str(n.originator_id), n.originator_version, n.topic, bytes(n.state))
        for n in recorder.select_notifications(1, 1_000_000)
    ]
