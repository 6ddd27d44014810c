"""Helpers for the claim, generation, provider and rejection tests: a claim with the builders'
project and user, and one item of a multi-consumer ``write_allocations``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allocation_ledger import Ledger
from tests.builders import PROJECT, USER

Allocs = dict[str, dict[str, int]]


def claim(ledger: Ledger, consumer: str, allocations: Allocs,
          generation: int | None = None) -> int | None:
    """Claim for ``consumer``; its new generation."""
    return ledger.claim(consumer, allocations, generation, project_id=PROJECT,
                        user_id=USER).generation


def write(consumer: str, allocations: Mapping[str, Mapping[str, object]],
          generation: int | None) -> dict[str, Any]:
    """One item of ``write_allocations`` (``allocations`` may hold bad amounts on purpose)."""
    return {"consumer_uuid": consumer, "allocations": allocations,
            "expected_generation": generation, "project_id": PROJECT, "user_id": USER}
