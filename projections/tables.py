"""The read models' tables (SQLAlchemy Core).

Every name starts with ``proj_``, so the read models never clash with the event store's
tables, whether they share its database (the default: the ledger's SQLite file, or its
PostgreSQL schema) or live in one of their own. Each table is written by exactly one
projection, always together with that projection's row in ``proj_tracking``.

- ``proj_tracking``: each projection's position (the last ledger notification id it shows).
- ``proj_streams``: each projection's map from event stream id to the provider, consumer or
  migration UUID the stream belongs to (events after the first carry only the stream id).
- host usage: ``proj_providers`` (the tree), ``proj_host_usage`` (per provider and class),
  ``proj_provider_traits`` and ``proj_provider_aggregates`` (what the provider-list filters
  look at).
- consumer allocations: ``proj_consumers`` and ``proj_allocations``.
- device assignments: ``proj_device_holders`` (who holds each device now) and
  ``proj_migration_devices`` (the old and new devices of every in-flight migration); the view
  ``proj_device_assignments`` shows both with a ``role`` of current, old or new.
- migration contexts: ``proj_migrations``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    TypeDecorator,
)


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every database (SQLite stores it naive, in UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        value = value.astimezone(UTC)
        return value if dialect.name == "postgresql" else value.replace(tzinfo=None)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


metadata = MetaData()

tracking = Table(
    "proj_tracking", metadata,
    Column("projection", String, primary_key=True),
    Column("application_name", String, nullable=False),
    Column("notification_id", BigInteger, nullable=False),
    # the ledger's chain hash at that position: the history the rows were built from
    Column("chain_hash", LargeBinary, nullable=True),
)

streams = Table(
    "proj_streams", metadata,
    Column("projection", String, primary_key=True),
    Column("stream_id", String(32), primary_key=True),
    Column("uuid", String, nullable=False),
)

providers = Table(
    "proj_providers", metadata,
    Column("provider_uuid", String, primary_key=True),
    Column("name", String, nullable=False),
    Column("parent_uuid", String),
    Column("root_uuid", String, nullable=False, index=True),
    Column("generation", Integer, nullable=False),
    Column("deleted", Boolean, nullable=False),
    # a name looked up (a registration's or rename's check, ?name=) without a scan
    Index("proj_providers_name", "name"),
)

host_usage = Table(
    "proj_host_usage", metadata,
    Column("provider_uuid", String, primary_key=True),
    Column("resource_class", String, primary_key=True),
    Column("root_uuid", String, nullable=False, index=True),
    Column("total", BigInteger, nullable=False),
    Column("reserved", BigInteger, nullable=False),
    Column("min_unit", BigInteger, nullable=False),
    Column("max_unit", BigInteger, nullable=False),
    Column("step_size", BigInteger, nullable=False),
    Column("allocation_ratio", Float, nullable=False),
    Column("used", BigInteger, nullable=False),
    Column("capacity", BigInteger, nullable=False),
    Column("free", BigInteger, nullable=False),
    Column("over_capacity", Boolean, nullable=False),
)

provider_traits = Table(
    "proj_provider_traits", metadata,
    Column("provider_uuid", String, primary_key=True),
    Column("trait", String, primary_key=True, index=True),
)

provider_aggregates = Table(
    "proj_provider_aggregates", metadata,
    Column("provider_uuid", String, primary_key=True),
    Column("aggregate_uuid", String, primary_key=True, index=True),
)

consumers = Table(
    "proj_consumers", metadata,
    Column("consumer_uuid", String, primary_key=True),
    Column("consumer_type", String, nullable=False),
    Column("project_id", String, nullable=False),
    Column("user_id", String, nullable=False),
    Column("generation", Integer),  # None while the consumer holds nothing
    Column("version", Integer, nullable=False),
)

allocations = Table(
    "proj_allocations", metadata,
    Column("consumer_uuid", String, primary_key=True),
    Column("provider_uuid", String, primary_key=True),
    Column("resource_class", String, primary_key=True),
    Column("amount", BigInteger, nullable=False),
    Column("generation", Integer, nullable=False),
    Column("consumer_type", String, nullable=False),
    Column("project_id", String, nullable=False),
    Column("user_id", String, nullable=False),
    Index("proj_allocations_provider", "provider_uuid", "resource_class"),
)

device_holders = Table(
    "proj_device_holders", metadata,
    Column("provider_uuid", String, primary_key=True),
    Column("resource_class", String, primary_key=True),
    Column("device_id", String, primary_key=True),
    Column("holder", String, index=True),  # None: free
)

migration_devices = Table(
    "proj_migration_devices", metadata,
    Column("migration_uuid", String, primary_key=True),
    Column("role", String, primary_key=True),  # "old" (source) or "new" (destination)
    Column("provider_uuid", String, primary_key=True),
    Column("resource_class", String, primary_key=True),
    Column("device_id", String, primary_key=True),
    Column("holder", String, nullable=False),  # the instance that moves
    Index("proj_migration_devices_provider", "provider_uuid"),
)

migrations = Table(
    "proj_migrations", metadata,
    Column("migration_uuid", String, primary_key=True),
    Column("instance_uuid", String, nullable=False, index=True),
    Column("kind", String, nullable=False),
    Column("status", String, nullable=False),
    Column("source_root", String, nullable=False),
    Column("destination_root", String),
    Column("old_allocations", JSON, nullable=False),
    Column("old_devices", JSON, nullable=False),
    Column("new_allocations", JSON, nullable=False),
    Column("new_devices", JSON, nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    Column("finished_at", UtcDateTime),
    Index("proj_migrations_status", "status", "started_at"),
)

#: The view over the two device tables (created by ``store.create_tables``).
DEVICE_ASSIGNMENTS = "proj_device_assignments"
