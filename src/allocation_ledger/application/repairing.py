"""Repairs of what the audit finds: migrations left in flight (the leaks Nova is known for),
resolved by the operator's explicit choice, each through the ordinary ledger command (so
with the generations checked, in one atomic write, and with the actor and reason stored on
its events like any other change).

- ``revert`` gives the instance back its source allocation and releases its destination
  (an evacuation cannot be reverted: its source host is gone);
- ``confirm`` releases the source allocation the migration holds (for an evacuation: the
  source share of the instance, as ``complete_evacuation``);
- ``release`` (named consumers only: Placement's ``allocation delete``) removes whatever a
  consumer holds, ignoring its generation (``force_release``); an instance mid-move takes
  its migration's allocation with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from allocation_ledger.domain.errors import InvalidRequest, LedgerError
from allocation_ledger.domain.migration import EVACUATION

if TYPE_CHECKING:
    from allocation_ledger.application.ledger import Ledger
    from allocation_ledger.application.views import MigrationView

ACTIONS = ("revert", "confirm")


@dataclass(frozen=True)
class Repair:
    """One migration's repair: what was (or would be) done and how it went."""

    migration_uuid: str
    instance_uuid: str
    kind: str
    age_seconds: float
    action: str
    outcome: str  # "planned" (dry run), "done" or "refused"
    error: dict[str, Any] | None = None


def repair_migrations(ledger: Ledger, migrations: list[MigrationView], action: str, *,
                      request: Mapping[str, str], dry_run: bool,
                      now: datetime | None = None) -> list[Repair]:
    """Revert or confirm each migration (or only say so, with ``dry_run``). A migration the
    ledger refuses (resolved meanwhile, a generation moved) is reported and the others go
    on: each repair is its own command."""
    if action not in ACTIONS:
        raise InvalidRequest(f"unknown repair {action!r}: choose {' or '.join(ACTIONS)}",
                             action=action)
    now = now or datetime.now(UTC)
    done = []
    for view in migrations:
        age = round(view.age_seconds(now), 1)
        outcome, error = "planned", None
        if not dry_run:
            try:
                _resolve(ledger, view, action, request)
                outcome = "done"
            except LedgerError as err:
                outcome, error = "refused", err.to_dict()
        done.append(Repair(view.migration_uuid, view.instance_uuid, view.kind, age, action,
                           outcome, error))
    return done


def _resolve(ledger: Ledger, view: MigrationView, action: str,
             request: Mapping[str, str]) -> None:
    fresh = ledger.migration(view.migration_uuid)  # the generations as they are now
    instance = ledger.consumer(fresh.instance_uuid).generation
    if fresh.kind == EVACUATION:
        if action == "revert":
            raise InvalidRequest(
                f"migration {fresh.migration_uuid} is an evacuation: it cannot be reverted "
                "(its source host is gone); confirm it instead",
                migration_uuid=fresh.migration_uuid)
        ledger.complete_evacuation(fresh.migration_uuid, instance or 0, request=request)
    elif action == "revert":
        ledger.revert(fresh.migration_uuid, fresh.generation, instance, request=request)
    else:
        ledger.confirm(fresh.migration_uuid, fresh.generation or 0, request=request)


@dataclass(frozen=True)
class Release:
    """One consumer's release: whether it held anything and how it went."""

    consumer_uuid: str
    held: dict[str, dict[str, int]]
    outcome: str  # "planned" (dry run), "done", "nothing held" or "refused"
    error: dict[str, Any] | None = None


def release_consumers(ledger: Ledger, consumers: list[str], *,
                      request: Mapping[str, str], dry_run: bool) -> list[Release]:
    """Release each consumer's allocations (or only say so, with ``dry_run``), each its
    own ``force_release`` command."""
    done = []
    for consumer in consumers:
        held = ledger.consumer(consumer).allocations
        outcome, error = ("planned" if held else "nothing held"), None
        if held and not dry_run:
            try:
                ledger.force_release(consumer, request=request)
                outcome = "done"
            except LedgerError as err:
                outcome, error = "refused", err.to_dict()
        done.append(Release(consumer, held, outcome, error))
    return done
