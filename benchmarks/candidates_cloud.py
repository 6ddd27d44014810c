"""The cloud the candidates benchmark asks about, written into the ledger and into Placement.

Compute node ``i`` is a tree of three providers, all fixed by ``i`` (UUIDs are uuid5 of
their names), so the two clouds hold the same providers, inventories, traits, aggregates
and usages:

- the root ``cn-i``: ``DISK_GB`` 2,000; traits ``COMPUTE_VOLUME_MULTI_ATTACH`` and (four
  nodes in five) ``HW_CPU_X86_AVX2``; in one of 20 aggregates;
- two NUMA children ``cn-i-numa0`` / ``-numa1``: ``VCPU`` 32 (ratio 4.0) and ``MEMORY_MB``
  65,536 (512 reserved); ``HW_CPU_HYPERTHREADING`` on both, ``HW_CPU_X86_AVX512F`` on one;
- usage: every third node runs an instance (8 VCPU, 16 GiB on NUMA 0, 100 GB of disk), every
  eleventh has NUMA 1's memory full.

Placement is filled by rows written straight into its own schema (made by its migrations when
its server started), because 30,000 providers through its HTTP API take longer than the
benchmark itself; the ledger is then started from that database by ``import-placement``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg

NAMESPACE = uuid.UUID("5b0c1a1e-6d5c-4c59-9a53-c4ad1d5ea2a1")
AGGREGATES = 20
DEFAULTS = {"reserved": 0, "min_unit": 1, "step_size": 1, "allocation_ratio": 1.0}


def uuid_of(name: str) -> str:
    """The fixed UUID of a provider, aggregate or consumer name."""
    return str(uuid.uuid5(NAMESPACE, name))


@dataclass(frozen=True)
class Provider:
    """One provider of the cloud, as both sides are given it."""

    name: str
    parent: str | None
    inventories: dict[str, dict[str, Any]]
    traits: tuple[str, ...]
    aggregates: tuple[str, ...] = ()

    @property
    def uuid(self) -> str:
        return uuid_of(self.name)


@dataclass(frozen=True)
class Node:
    """A compute node: its three providers (root first) and its instance's allocations."""

    providers: tuple[Provider, ...]
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    consumer: str = ""


def _inventory(total: int, **fields: Any) -> dict[str, Any]:
    return {**DEFAULTS, "total": total, "max_unit": total, **fields}


def node(i: int) -> Node:
    """Compute node ``i``."""
    root_traits = ["COMPUTE_VOLUME_MULTI_ATTACH"] + (["HW_CPU_X86_AVX2"] if i % 5 else [])
    root = Provider(f"cn-{i}", None, {"DISK_GB": _inventory(2000)}, tuple(root_traits),
                    (uuid_of(f"agg-{i % AGGREGATES}"),))
    numas = tuple(
        Provider(f"cn-{i}-numa{j}", root.uuid,
                 {"VCPU": _inventory(32, max_unit=32, allocation_ratio=4.0),
                  "MEMORY_MB": _inventory(65536, reserved=512)},
                 ("HW_CPU_HYPERTHREADING",) + (("HW_CPU_X86_AVX512F",) if (i + j) % 2 else ()))
        for j in (0, 1))
    usage: dict[str, dict[str, int]] = {}
    if i % 3 == 0:
        usage[numas[0].uuid] = {"VCPU": 8, "MEMORY_MB": 16384}
        usage[root.uuid] = {"DISK_GB": 100}
    if i % 11 == 0:
        usage[numas[1].uuid] = {"MEMORY_MB": 65024}
    return Node((root, *numas), usage, uuid_of(f"vm-{i}") if usage else "")


def nodes(start: int, stop: int) -> Iterator[Node]:
    """Compute nodes ``start`` to ``stop - 1``."""
    return (node(i) for i in range(start, stop))


def fill_placement(conninfo: str, start: int, stop: int) -> None:
    """Write nodes ``start`` to ``stop - 1`` as rows of Placement's schema (its standard
    traits and resource classes are there already), in one transaction."""
    with psycopg.connect(conninfo) as conn, conn.cursor() as cur:
        classes: dict[str, int] = dict(
            cur.execute("SELECT name, id FROM resource_classes").fetchall())
        traits: dict[str, int] = dict(cur.execute("SELECT name, id FROM traits").fetchall())
        cur.execute("INSERT INTO projects (external_id) VALUES ('bench') "
                    "ON CONFLICT DO NOTHING")
        cur.execute("INSERT INTO users (external_id) VALUES ('bench') ON CONFLICT DO NOTHING")
        project = _one(cur, "SELECT id FROM projects WHERE external_id='bench'")
        user = _one(cur, "SELECT id FROM users WHERE external_id='bench'")
        aggs = _placement_aggregates(cur)
        next_id = _one(cur, "SELECT coalesce(max(id), 0) FROM resource_providers") + 1
        ids: dict[str, int] = {}
        rps, invs, rp_traits, rp_aggs, allocs, consumers = [], [], [], [], [], []
        for n in nodes(start, stop):
            for p in n.providers:
                ids[p.uuid] = rp_id = next_id
                next_id += 1
                parent = ids[p.parent] if p.parent else None
                rps.append((rp_id, p.uuid, p.name, ids[n.providers[0].uuid], parent))
                invs += [(rp_id, classes[rc], inv["total"], inv["reserved"], inv["min_unit"],
                          inv["max_unit"], inv["step_size"], inv["allocation_ratio"])
                         for rc, inv in p.inventories.items()]
                rp_traits += [(traits[t], rp_id) for t in p.traits]
                rp_aggs += [(rp_id, aggs[a]) for a in p.aggregates]
            if n.usage:
                consumers.append((n.consumer, project, user))
                allocs += [(ids[rp], n.consumer, classes[rc], used)
                           for rp, res in n.usage.items() for rc, used in res.items()]
        cur.executemany("INSERT INTO resource_providers (id, uuid, name, generation, "
                        "root_provider_id, parent_provider_id, created_at) "
                        "VALUES (%s, %s, %s, 1, %s, %s, now())", rps)
        cur.execute("SELECT setval('resource_providers_id_seq', %s)", (next_id,))
        cur.executemany("INSERT INTO inventories (resource_provider_id, resource_class_id, "
                        "total, reserved, min_unit, max_unit, step_size, allocation_ratio, "
                        "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, now())", invs)
        cur.executemany("INSERT INTO resource_provider_traits (trait_id, "
                        "resource_provider_id, created_at) VALUES (%s, %s, now())", rp_traits)
        cur.executemany("INSERT INTO resource_provider_aggregates (resource_provider_id, "
                        "aggregate_id, created_at) VALUES (%s, %s, now())", rp_aggs)
        cur.executemany("INSERT INTO consumers (uuid, project_id, user_id, generation, "
                        "created_at) VALUES (%s, %s, %s, 1, now())", consumers)
        cur.executemany("INSERT INTO allocations (resource_provider_id, consumer_id, "
                        "resource_class_id, used, created_at) VALUES (%s, %s, %s, %s, now())",
                        allocs)
        cur.execute("ANALYZE")


def _one(cur: psycopg.Cursor[Any], sql: str) -> int:
    row = cur.execute(sql).fetchone()
    if row is None:
        raise LookupError(f"no row for {sql}")
    return int(row[0])


def _placement_aggregates(cur: psycopg.Cursor[Any]) -> dict[str, int]:
    wanted = [uuid_of(f"agg-{k}") for k in range(AGGREGATES)]
    cur.executemany("INSERT INTO placement_aggregates (uuid, created_at) VALUES (%s, now()) "
                    "ON CONFLICT DO NOTHING", [(a,) for a in wanted])
    return dict(cur.execute("SELECT uuid, id FROM placement_aggregates").fetchall())
