"""The whole of each read model as plain dicts: for audits comparing them with a replay.

``read_model_state(engine)`` answers, from the tables alone, what a replay of the ledger
answers from the events: each provider's usage, each consumer's holding and generation,
each device's holder, each migration's status.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine, select

from projections import tables


@dataclass(frozen=True)
class ReadModelState:
    """Everything the read models say, keyed like a replayed state would be."""

    positions: dict[str, int] = field(default_factory=dict)
    usages: dict[tuple[str, str], int] = field(default_factory=dict)  # (provider, class)
    generations: dict[str, int | None] = field(default_factory=dict)  # consumer
    holdings: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    holders: dict[tuple[str, str, str], str | None] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)  # migration


def read_model_state(engine: Engine) -> ReadModelState:
    """Read every read model table into a :class:`ReadModelState`."""
    t, u, c, a = tables.tracking.c, tables.host_usage.c, tables.consumers.c, tables.allocations.c
    d, m = tables.device_holders.c, tables.migrations.c
    state = ReadModelState()
    with engine.connect() as conn:
        state.positions.update(conn.execute(select(t.projection, t.notification_id)).tuples())
        for provider, rc, used in conn.execute(select(u.provider_uuid, u.resource_class, u.used)):
            state.usages[(provider, rc)] = used
        state.generations.update(conn.execute(select(c.consumer_uuid, c.generation)).tuples())
        for consumer, provider, rc, amount in conn.execute(
                select(a.consumer_uuid, a.provider_uuid, a.resource_class, a.amount)):
            state.holdings.setdefault(consumer, {}).setdefault(provider, {})[rc] = amount
        for provider, rc, device, holder in conn.execute(
                select(d.provider_uuid, d.resource_class, d.device_id, d.holder)):
            state.holders[(provider, rc, device)] = holder
        state.statuses.update(conn.execute(select(m.migration_uuid, m.status)).tuples())
    return state
