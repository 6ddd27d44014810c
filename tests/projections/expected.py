"""The read models' rows as the domain itself folds them, and as the tables hold them.

``folded(ledger)`` loads every aggregate through ``ledger.store`` (the domain's appliers,
not the projections' handlers) and derives the rows each read model table should hold;
``stored(engine)`` reads what the tables do hold, in the same shape, so a test compares
the two with ``==``.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Engine, select

from allocation_ledger import Ledger
from allocation_ledger.application.views import ProviderView
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider
from allocation_ledger.projections import tables
from tests.invariants import current_aggregates

Rows = dict[str, list[tuple[Any, ...]]]
READ_MODELS = [tables.providers, tables.host_usage, tables.consumers, tables.allocations,
               tables.device_holders, tables.migrations, tables.migration_devices,
               tables.provider_traits, tables.provider_aggregates]
JSON_COLUMNS = {"old_allocations", "old_devices", "new_allocations", "new_devices"}


def stored(engine: Engine, everything: bool = False) -> Rows:
    """Every row of the read model tables (``everything``: the stream map and positions
    too), sorted, with JSON as canonical text."""
    found: Rows = {}
    chosen = tables.metadata.sorted_tables if everything else READ_MODELS
    with engine.connect() as conn:
        for table in chosen:
            rows = conn.execute(select(table)).mappings()
            names = [column.name for column in table.columns]
            found[table.name] = sorted(
                tuple(_plain(k, row[k]) for k in names) for row in rows
            )
    return found


def folded(ledger: Ledger) -> Rows:
    """The rows every read model table should hold, from the domain's own aggregates."""
    providers, consumers = current_aggregates(ledger)
    found: Rows = {t.name: [] for t in READ_MODELS}
    for p in providers:
        _provider_rows(found, p)
    for c in consumers:
        _consumer_rows(found, c)
        if isinstance(c, Migration):
            _migration_rows(found, c)
    return {name: sorted(rows) for name, rows in found.items()}


def _provider_rows(found: Rows, p: Provider) -> None:
    found["proj_providers"].append(
        (p.uuid, p.name, p.parent_uuid, p.root_uuid, p.generation, p.deleted))
    if p.deleted:
        return
    for rc, c in ProviderView.of(p).classes.items():
        inv = c.inventory
        found["proj_host_usage"].append((
            p.uuid, rc, p.root_uuid, inv.total, inv.reserved, inv.min_unit, inv.max_unit,
            inv.step_size, float(inv.allocation_ratio), c.used, c.capacity, c.free,
            c.over_capacity))
    for rc, devices in p.devices.items():
        for device, holder in devices.items():
            found["proj_device_holders"].append((p.uuid, rc, device, holder))
    found["proj_provider_traits"] += [(p.uuid, t) for t in p.traits]
    found["proj_provider_aggregates"] += [(p.uuid, a) for a in p.aggregates]


def _consumer_rows(found: Rows, c: Consumer) -> None:
    found["proj_consumers"].append(
        (c.uuid, c.consumer_type, c.project_id, c.user_id, c.generation, c.version))
    for rp, by_rc in c.allocations.items():
        for rc, amount in by_rc.items():
            found["proj_allocations"].append(
                (c.uuid, rp, rc, amount, c.generation, c.consumer_type, c.project_id, c.user_id))


def _migration_rows(found: Rows, m: Migration) -> None:
    found["proj_migrations"].append((
        m.uuid, m.instance_uuid, m.kind, m.status, m.source_root, m.destination_root,
        _canonical(m.old_allocations), _canonical(m.old_devices),
        _canonical(m.new_allocations), _canonical(m.new_devices), m.started_at,
        m.finished_at))
    if not m.in_flight:
        return
    for role, devices in (("old", m.old_devices), ("new", m.new_devices)):
        for rp, by_rc in devices.items():
            for rc, ids in by_rc.items():
                for device in set(ids):
                    found["proj_migration_devices"].append(
                        (m.uuid, role, rp, rc, device, m.instance_uuid))


def _plain(column: str, value: Any) -> Any:
    return _canonical(value) if column in JSON_COLUMNS else value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def differences(found: Rows, wanted: Rows, most: int = 5) -> str:
    """What a failed ``stored == folded`` comparison differs in, table by table: the rows
    only the tables hold and those only the fold gives (``most`` of each)."""
    lines = []
    for name in sorted(set(found) | set(wanted)):
        extra = sorted(set(found.get(name, [])) - set(wanted.get(name, [])))
        missing = sorted(set(wanted.get(name, [])) - set(found.get(name, [])))
        if extra or missing:
            lines.append(f"{name}: {len(extra)} rows only stored, e.g. {extra[:most]}; "
                         f"{len(missing)} only folded, e.g. {missing[:most]}")
    return "\n".join(lines)
