"""Reading a Placement database (its schema as Placement 16's own migrations create it):
resource providers with their trees, inventories, traits and aggregates, resource classes,
the custom traits, consumers with project, user, type and generation, and allocations.
Read-only, in one transaction, so the picture is consistent even while Placement keeps
running.

``mysql+pymysql://`` (MySQL, MariaDB), ``postgresql://`` (psycopg) and ``sqlite:///`` URLs
are accepted; ``mysql://`` means PyMySQL (the ``placement`` extra installs it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from allocation_ledger.domain.errors import InvalidRequest, StoreUnavailable

PROVIDERS = """
SELECT rp.uuid, rp.name, rp.generation, parent.uuid AS parent_uuid, root.uuid AS root_uuid
FROM resource_providers rp
LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id
LEFT JOIN resource_providers root ON root.id = rp.root_provider_id
ORDER BY rp.id
"""
INVENTORIES = """
SELECT rp.uuid AS provider_uuid, i.resource_class_id, i.total, i.reserved, i.min_unit,
       i.max_unit, i.step_size, i.allocation_ratio
FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id
ORDER BY rp.id, i.resource_class_id
"""
CONSUMERS = """
SELECT c.uuid, p.external_id AS project_id, u.external_id AS user_id, ct.name AS type,
       c.generation
FROM consumers c
JOIN projects p ON p.id = c.project_id
JOIN users u ON u.id = c.user_id
LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
ORDER BY c.id
"""
ALLOCATIONS = """
SELECT a.consumer_id, rp.uuid AS provider_uuid, a.resource_class_id, a.used
FROM allocations a JOIN resource_providers rp ON rp.id = a.resource_provider_id
ORDER BY a.id
"""
CLASSES = "SELECT id, name FROM resource_classes"
PROVIDER_TRAITS = """
SELECT rp.uuid AS provider_uuid, t.name
FROM resource_provider_traits rpt
JOIN resource_providers rp ON rp.id = rpt.resource_provider_id
JOIN traits t ON t.id = rpt.trait_id
"""
PROVIDER_AGGREGATES = """
SELECT rp.uuid AS provider_uuid, pa.uuid AS aggregate_uuid
FROM resource_provider_aggregates rpa
JOIN resource_providers rp ON rp.id = rpa.resource_provider_id
JOIN placement_aggregates pa ON pa.id = rpa.aggregate_id
"""
CUSTOM_TRAITS = "SELECT name FROM traits WHERE name LIKE 'CUSTOM%'"


@dataclass(frozen=True)
class SourceProvider:
    """A resource provider as Placement holds it."""

    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str


@dataclass(frozen=True)
class SourceConsumer:
    """A consumer as Placement holds it (``type`` is ``None`` when Placement has none)."""

    uuid: str
    project_id: str
    user_id: str
    type: str | None
    generation: int


@dataclass
class PlacementData:
    """Everything the import needs, read in one transaction."""

    providers: list[SourceProvider] = field(default_factory=list)
    inventories: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    consumers: list[SourceConsumer] = field(default_factory=list)
    allocations: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    #: provider -> its trait names / the UUIDs of its aggregates, sorted (absent: none)
    traits: dict[str, list[str]] = field(default_factory=dict)
    aggregates: dict[str, list[str]] = field(default_factory=dict)
    #: every custom trait Placement knows, held by a provider or not
    custom_traits: list[str] = field(default_factory=list)

    def usages(self) -> dict[str, dict[str, int]]:
        """Provider -> class -> amount used, summed from the allocations."""
        used: dict[str, dict[str, int]] = {}
        for by_provider in self.allocations.values():
            for rp, amounts in by_provider.items():
                for rc, amount in amounts.items():
                    used.setdefault(rp, {})[rc] = used.get(rp, {}).get(rc, 0) + amount
        return used


def _password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:  # not a URL urllib can split: nothing to mask
        return None


def shown(url: str) -> str:
    """``url`` as messages show it: its password masked."""
    password = _password(url)
    return url.replace(f":{password}@", ":***@") if password else url


def _masked(text: str, url: str) -> str:
    """``text`` (a driver's message) without the password of ``url``."""
    password = _password(url)
    return text.replace(password, "***") if password else text


def engine_url(url: str) -> str:
    """The SQLAlchemy URL with the driver this package uses for a bare scheme."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise InvalidRequest(f"not a database URL: {shown(url)!r}", url=shown(url))
    drivers = {"mysql": "mysql+pymysql", "postgresql": "postgresql+psycopg",
               "postgres": "postgresql+psycopg"}
    return f"{drivers.get(scheme, scheme)}://{rest}"


def read(url: str) -> PlacementData:
    """Read the Placement database ``url`` names."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import SQLAlchemyError

    if url.startswith("sqlite:///"):  # connecting would create a mistyped path's file
        path = url.removeprefix("sqlite:///").partition("?")[0]
        if not os.path.isfile(path):
            raise InvalidRequest(f"no Placement database at {path}: no such file",
                                 url=url)
    try:
        engine = create_engine(engine_url(url))
    except ModuleNotFoundError:
        raise  # its driver is not installed: the command line names the extra that brings it
    except (ImportError, SQLAlchemyError, ValueError) as err:  # ValueError: a bad port
        raise InvalidRequest(f"cannot use {shown(url)!r}: {_masked(str(err), url)}",
                             url=shown(url)) from None
    try:
        with engine.connect() as conn, conn.begin():
            if engine.dialect.name == "mysql":
                conn.exec_driver_sql("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            rows = {name: [dict(r._mapping) for r in conn.execute(text(sql))]
                    for name, sql in (("providers", PROVIDERS), ("inventories", INVENTORIES),
                                      ("consumers", CONSUMERS), ("allocations", ALLOCATIONS),
                                      ("classes", CLASSES),
                                      ("traits", PROVIDER_TRAITS),
                                      ("aggregates", PROVIDER_AGGREGATES),
                                      ("custom_traits", CUSTOM_TRAITS))}
    except SQLAlchemyError as err:
        # a source that cannot be reached or read is an operation that failed (exit 1), as
        # for the ledger's own store; a malformed URL stays bad input (above)
        first = _masked(str(getattr(err, "orig", None) or err).strip().splitlines()[0], url)
        raise StoreUnavailable(shown(url), f"cannot read a Placement schema there: {first}"
                               ) from None
    finally:
        engine.dispose()
    return _assemble(rows)


def _assemble(rows: Mapping[str, list[dict[str, Any]]]) -> PlacementData:
    classes = {int(r["id"]): str(r["name"]) for r in rows["classes"]}

    def name_of(class_id: int) -> str:
        if class_id not in classes:
            raise InvalidRequest(
                f"resource class id {class_id} is not in the resource_classes table (has "
                "Placement run against this database since its schema was created?)",
                resource_class_id=class_id)
        return classes[class_id]

    data = PlacementData()
    for r in rows["providers"]:
        data.providers.append(SourceProvider(
            str(r["uuid"]), str(r["name"] or r["uuid"]), int(r["generation"] or 0),
            r["parent_uuid"], str(r["root_uuid"] or r["uuid"])))
    for r in rows["inventories"]:
        data.inventories.setdefault(r["provider_uuid"], {})[name_of(r["resource_class_id"])] = {
            "total": int(r["total"]), "reserved": int(r["reserved"]),
            "min_unit": int(r["min_unit"]), "max_unit": int(r["max_unit"]),
            "step_size": int(r["step_size"]),
            "allocation_ratio": _ratio(float(r["allocation_ratio"]))}
    for r in rows["consumers"]:
        data.consumers.append(SourceConsumer(str(r["uuid"]), str(r["project_id"]),
                                             str(r["user_id"]), r["type"],
                                             int(r["generation"])))
    for r in rows["allocations"]:
        by_rp = data.allocations.setdefault(str(r["consumer_id"]), {})
        rc = name_of(r["resource_class_id"])
        by_rp.setdefault(r["provider_uuid"], {})[rc] = (
            by_rp.get(r["provider_uuid"], {}).get(rc, 0) + int(r["used"]))
    for r in rows["traits"]:
        data.traits.setdefault(str(r["provider_uuid"]), []).append(str(r["name"]))
    for r in rows["aggregates"]:
        data.aggregates.setdefault(str(r["provider_uuid"]), []).append(
            str(r["aggregate_uuid"]))
    for held in (*data.traits.values(), *data.aggregates.values()):
        held.sort()
    data.custom_traits = sorted(str(r["name"]) for r in rows["custom_traits"]
                                if str(r["name"]).startswith("CUSTOM_"))
    return data


def _ratio(value: float) -> float:
    """MySQL's FLOAT column is single precision (16.0 comes back exact, 1.5 too, but 0.9
    as 0.8999999761581421): the shortest decimal that the same float32 holds."""
    import struct

    single = struct.unpack("f", struct.pack("f", value))[0]
    if single != value:
        return value  # a double column (PostgreSQL, SQLite): already exact
    for digits in range(1, 10):
        rounded = round(value, digits)
        if struct.unpack("f", struct.pack("f", rounded))[0] == single:
            return rounded
    return value
