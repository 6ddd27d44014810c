"""Questions answered from the read models, without touching the ledger.

Each projection shows the ledger up to its own position; to read your own writes, first
``ReadModels.wait(ledger_position(ledger))``. Rows come back as frozen dataclasses, sorted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, Integer, cast, column, func, select, table

from allocation_ledger.domain.migration import IN_PROGRESS, started_by
from allocation_ledger.domain.provider_filters import (
    ProviderFacts,
    ProviderFilter,
    Room,
    select_providers,
)
from allocation_ledger.domain.values import Inventory
from allocation_ledger.projections import tables

_usage, _providers, _migrations = tables.host_usage.c, tables.providers.c, tables.migrations.c
_assignments = table(tables.DEVICE_ASSIGNMENTS, *(column(name) for name in (
    "provider_uuid", "resource_class", "device_id", "holder", "role", "migration_uuid")))


@dataclass(frozen=True)
class ClassUsage:
    """One provider's usage of one resource class."""

    provider_uuid: str
    resource_class: str
    root_uuid: str
    total: int
    reserved: int
    allocation_ratio: float
    used: int
    capacity: int
    free: int
    over_capacity: bool


@dataclass(frozen=True)
class TreeUsage:
    """A whole tree's (a host's) usage of one class: the sums over its providers."""

    root_uuid: str
    resource_class: str
    used: int
    capacity: int
    free: int
    over_capacity: bool  # some provider of the tree is over capacity in this class


@dataclass(frozen=True)
class DeviceAssignment:
    """A device and its holder: now (``current``), or in a move's context (``old``/``new``)."""

    provider_uuid: str
    resource_class: str
    device_id: str
    holder: str | None
    role: str
    migration_uuid: str | None


@dataclass(frozen=True)
class MigrationContext:
    """A move: what it moves, from where to where, and since when."""

    migration_uuid: str
    instance_uuid: str
    kind: str
    status: str
    source_root: str
    destination_root: str | None
    old_allocations: dict[str, Any]
    old_devices: dict[str, Any]
    new_allocations: dict[str, Any]
    new_devices: dict[str, Any]
    started_at: datetime
    finished_at: datetime | None


def host_usage(engine: Engine, root_uuid: str | None = None) -> list[ClassUsage]:
    """Usage per provider and class: of one tree, or of every live provider."""
    query = select(*(_usage[f.name] for f in ClassUsage.__dataclass_fields__.values()))
    if root_uuid is not None:
        query = query.where(_usage.root_uuid == root_uuid)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(_usage.provider_uuid, _usage.resource_class))
        return [ClassUsage(**row._mapping) for row in rows]


def tree_usage(engine: Engine, root_uuid: str | None = None) -> list[TreeUsage]:
    """Usage rolled up per tree (host) and class: of one tree, or of every tree."""
    query = select(
        _usage.root_uuid, _usage.resource_class, func.sum(_usage.used),
        func.sum(_usage.capacity), func.sum(_usage.free),
        func.max(cast(_usage.over_capacity, Integer)),
    ).group_by(_usage.root_uuid, _usage.resource_class)
    if root_uuid is not None:
        query = query.where(_usage.root_uuid == root_uuid)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(_usage.root_uuid, _usage.resource_class)).all()
    return [TreeUsage(r[0], r[1], int(r[2]), int(r[3]), int(r[4]), bool(r[5])) for r in rows]


def free_capacity(engine: Engine, resource_class: str, at_least: int = 1) -> list[TreeUsage]:
    """Hosts (trees) with at least ``at_least`` of ``resource_class`` free, most free first."""
    found = [t for t in tree_usage(engine)
             if t.resource_class == resource_class and t.free >= at_least]
    return sorted(found, key=lambda t: (-t.free, t.root_uuid))


def devices_of_host(engine: Engine, root_uuid: str) -> list[DeviceAssignment]:
    """Every device of a host's tree: its holder now, and its place in moves in flight."""
    a = _assignments.c
    query = (select(a.provider_uuid, a.resource_class, a.device_id, a.holder, a.role,
                    a.migration_uuid)
             .join_from(_assignments, tables.providers,
                        a.provider_uuid == _providers.provider_uuid)
             .where(_providers.root_uuid == root_uuid)
             .order_by(a.provider_uuid, a.resource_class, a.device_id, a.role))
    with engine.connect() as conn:
        return [DeviceAssignment(*row) for row in conn.execute(query)]


def migrations_in_flight(engine: Engine, older_than_seconds: float = 0.0,
                         now: datetime | None = None) -> list[MigrationContext]:
    """Moves still in flight that started at least ``older_than_seconds`` before ``now``,
    oldest first: the allocations Nova leaks when nobody confirms or reverts."""
    since = started_by(now or datetime.now(UTC), older_than_seconds)
    query = (select(tables.migrations)
             .where(_migrations.status == IN_PROGRESS, _migrations.started_at <= since)
             .order_by(_migrations.started_at, _migrations.migration_uuid))
    with engine.connect() as conn:
        return [MigrationContext(**row._mapping) for row in conn.execute(query)]


def allocations_of(
    engine: Engine, consumer_uuid: str
) -> tuple[int | None, dict[str, dict[str, int]]]:
    """A consumer's generation (``None`` when it holds nothing) and allocations."""
    c, a = tables.consumers.c, tables.allocations.c
    with engine.connect() as conn:
        generation = conn.execute(
            select(c.generation).where(c.consumer_uuid == consumer_uuid)).scalar_one_or_none()
        rows = conn.execute(select(a.provider_uuid, a.resource_class, a.amount)
                            .where(a.consumer_uuid == consumer_uuid)).all()
    held: dict[str, dict[str, int]] = {}
    for provider, rc, amount in rows:
        held.setdefault(provider, {})[rc] = amount
    return generation, held


@dataclass(frozen=True)
class ProviderRow:
    """A live provider: its name, place in the tree and generation."""

    provider_uuid: str
    name: str
    parent_uuid: str | None
    root_uuid: str
    generation: int


@dataclass(frozen=True)
class Holding:
    """One consumer's allocations on one provider."""

    consumer_uuid: str
    generation: int
    resources: dict[str, int]


@dataclass(frozen=True)
class ProjectUsage:
    """What the consumers of one type in a project (and user) hold, summed per class."""

    consumer_type: str
    consumer_count: int
    usages: dict[str, int]


def providers(engine: Engine, name: str | None = None) -> list[ProviderRow]:
    """Every live (not deleted) provider, or those named ``name``, by UUID."""
    query = (select(_providers.provider_uuid, _providers.name, _providers.parent_uuid,
                    _providers.root_uuid, _providers.generation)
             .where(_providers.deleted.is_(False)).order_by(_providers.provider_uuid))
    if name is not None:
        query = query.where(_providers.name == name)
    with engine.connect() as conn:
        return [ProviderRow(*row) for row in conn.execute(query)]


def providers_matching(engine: Engine, wanted: ProviderFilter) -> list[ProviderRow]:
    """The live providers ``wanted`` keeps (Placement's ``GET /resource_providers``
    filters), by UUID. Only the tables a filter needs are read."""
    rows = providers(engine)
    traits: dict[str, set[str]] = {}
    aggregates: dict[str, set[str]] = {}
    rooms: dict[str, dict[str, Room]] = {}
    t, g, u = tables.provider_traits.c, tables.provider_aggregates.c, _usage
    with engine.connect() as conn:
        if wanted.required or wanted.forbidden:
            for uuid, trait in conn.execute(select(t.provider_uuid, t.trait)):
                traits.setdefault(uuid, set()).add(trait)
        if wanted.member_of or wanted.not_member_of:
            for uuid, aggregate in conn.execute(select(g.provider_uuid, g.aggregate_uuid)):
                aggregates.setdefault(uuid, set()).add(aggregate)
        if wanted.resources:
            query = select(u.provider_uuid, u.resource_class, u.total, u.reserved, u.min_unit,
                           u.max_unit, u.step_size, u.allocation_ratio, u.used).where(
                u.resource_class.in_(sorted(wanted.resources)))
            for uuid, rc, *inventory, used in conn.execute(query):
                rooms.setdefault(uuid, {})[rc] = Room(Inventory(*inventory), used)
    facts = [ProviderFacts(r.provider_uuid, r.root_uuid,
                           frozenset(traits.get(r.provider_uuid, ())),
                           frozenset(aggregates.get(r.provider_uuid, ())),
                           rooms.get(r.provider_uuid, {})) for r in rows]
    kept = {f.uuid for f in select_providers(facts, wanted)}
    return [r for r in rows if r.provider_uuid in kept]


def provider_traits(engine: Engine, provider_uuid: str | None = None) -> dict[str, list[str]]:
    """Every live provider's traits (or one provider's), by provider UUID, sorted."""
    t = tables.provider_traits.c
    return _values_by_provider(engine, t.provider_uuid, t.trait, provider_uuid)


def provider_aggregates(engine: Engine, provider_uuid: str | None = None
                        ) -> dict[str, list[str]]:
    """Every live provider's aggregates (or one provider's), by provider UUID, sorted."""
    g = tables.provider_aggregates.c
    return _values_by_provider(engine, g.provider_uuid, g.aggregate_uuid, provider_uuid)


def _values_by_provider(engine: Engine, key: Any, value: Any,
                        provider_uuid: str | None) -> dict[str, list[str]]:
    """``value`` of each row, gathered by ``key`` (a provider UUID column), both sorted."""
    query = select(key, value).order_by(key, value)
    if provider_uuid is not None:
        query = query.where(key == provider_uuid)
    found: dict[str, list[str]] = {}
    with engine.connect() as conn:
        for uuid, item in conn.execute(query):
            found.setdefault(uuid, []).append(item)
    return found


def holdings_on(engine: Engine, provider_uuid: str) -> list[Holding]:
    """Every consumer's allocations on one provider, by consumer UUID."""
    a = tables.allocations.c
    query = (select(a.consumer_uuid, a.generation, a.resource_class, a.amount)
             .where(a.provider_uuid == provider_uuid)
             .order_by(a.consumer_uuid, a.resource_class))
    found: dict[str, Holding] = {}
    with engine.connect() as conn:
        for consumer, generation, rc, amount in conn.execute(query):
            held = found.setdefault(consumer, Holding(consumer, generation, {}))
            held.resources[rc] = amount
    return list(found.values())


def project_usages(engine: Engine, project_id: str, user_id: str | None = None,
                   consumer_type: str | None = None) -> list[ProjectUsage]:
    """Usage per consumer type and class of a project's (and user's) consumers, with the
    number of consumers: Placement's ``GET /usages``, which Nova counts quotas with."""
    a = tables.allocations.c
    query = (select(a.consumer_type, a.resource_class, func.sum(a.amount),
                    func.count(a.consumer_uuid.distinct()))
             .where(a.project_id == project_id)
             .group_by(a.consumer_type, a.resource_class))
    counts = (select(a.consumer_type, func.count(a.consumer_uuid.distinct()))
              .where(a.project_id == project_id).group_by(a.consumer_type))
    if user_id is not None:
        query, counts = query.where(a.user_id == user_id), counts.where(a.user_id == user_id)
    if consumer_type is not None:
        query = query.where(a.consumer_type == consumer_type)
        counts = counts.where(a.consumer_type == consumer_type)
    with engine.connect() as conn:
        by_type = {ct: ProjectUsage(ct, int(n), {}) for ct, n in conn.execute(counts)}
        for ct, rc, total, _ in conn.execute(query):
            by_type[ct].usages[rc] = int(total)
    return [by_type[ct] for ct in sorted(by_type)]
