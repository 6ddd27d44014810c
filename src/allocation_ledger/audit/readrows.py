"""The read models' rows, read from one snapshot of their database.

Only the table definitions of the ``projections`` package are used (its schema is the
contract). Every table is read in one transaction (repeatable read on PostgreSQL; SQLite
reads from one snapshot in WAL mode), so a runner writing meanwhile cannot show a row and
a position from two different moments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, select

Allocations = dict[str, dict[str, int]]


@dataclass
class ReadRows:
    """What the read models say, keyed as a replayed state would be."""

    positions: dict[str, int] = field(default_factory=dict)  # projection -> position
    followed: dict[str, bytes | None] = field(default_factory=dict)  # chain hash there
    usages: dict[tuple[str, str], int] = field(default_factory=dict)  # (provider, class)
    generations: dict[str, int | None] = field(default_factory=dict)  # consumer
    holdings: dict[str, Allocations] = field(default_factory=dict)  # consumer
    holders: dict[tuple[str, str, str], str | None] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)  # migration


def read_rows(engine: Engine, tables: Any) -> ReadRows:
    """Every read model table (``tables``: the projections' table module), at once."""
    t, u, c = tables.tracking.c, tables.host_usage.c, tables.consumers.c
    a, d, m = tables.allocations.c, tables.device_holders.c, tables.migrations.c
    rows = ReadRows()
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            for p, n, h in conn.execute(select(t.projection, t.notification_id,
                                               t.chain_hash)).all():
                rows.positions[p], rows.followed[p] = int(n), h
            rows.usages = {(p, rc): n for p, rc, n in conn.execute(
                select(u.provider_uuid, u.resource_class, u.used)).all()}
            rows.generations = {uuid: g for uuid, g in conn.execute(
                select(c.consumer_uuid, c.generation)).all()}
            for consumer, provider, rc, amount in conn.execute(
                    select(a.consumer_uuid, a.provider_uuid, a.resource_class, a.amount)):
                rows.holdings.setdefault(consumer, {}).setdefault(provider, {})[rc] = amount
            rows.holders = {(p, rc, dev): h for p, rc, dev, h in conn.execute(
                select(d.provider_uuid, d.resource_class, d.device_id, d.holder)).all()}
            rows.statuses = {uuid: status for uuid, status in conn.execute(
                select(m.migration_uuid, m.status)).all()}
    return rows
