"""Writing events straight into the store, past every check of the service, the way a bug,
a botched migration script or a hand-edited database would: what the audit is for."""

from __future__ import annotations

import itertools
import sqlite3
from contextlib import closing
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.persistence import StoredEvent

from allocation_ledger import Ledger
from allocation_ledger.adapters import chain, deploy
from allocation_ledger.adapters.chain import ChainKey
from allocation_ledger.config import parse_url
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.ids import consumer_stream_id, provider_stream_id
from allocation_ledger.domain.provider import Provider

_EDITS = itertools.count(1)


def edit() -> dict[str, str]:
    """Request metadata for one hand edit (its own request id, as a script would log)."""
    return {"actor": "intruder", "request_id": f"edit-{next(_EDITS)}", "reason": "hand edit"}


def provider(ledger: Ledger, uuid: str) -> Provider:
    """The provider aggregate as stored now."""
    found: Provider = ledger.store.repository.get(provider_stream_id(uuid))
    return found


def consumer(ledger: Ledger, uuid: str) -> Consumer:
    """The consumer aggregate as stored now."""
    found: Consumer = ledger.store.repository.get(consumer_stream_id(uuid))
    return found


def save(ledger: Ledger, *aggregates: Any) -> list[int]:
    """Append the aggregates' pending events in one write; their positions."""
    recordings = ledger.store.save(*aggregates)
    return [r.notification.id for r in recordings]


def usage(ledger: Ledger, provider_uuid: str, usages: dict[str, int],
          holds: dict[str, dict[str, str | None]] | None = None,
          consumers: list[str] | None = None,
          request: dict[str, str] | None = None) -> Provider:
    """A provider whose next event says its usage is ``usages``, whatever is allocated."""
    found = provider(ledger, provider_uuid)
    found.trigger_event(Provider.AllocationsChanged, consumers=consumers or [],
                        usages=usages, holds=holds or {}, request=request or edit())
    return found


def holding(ledger: Ledger, consumer_uuid: str, allocations: dict[str, dict[str, int]],
            devices: dict[str, dict[str, list[str]]] | None = None,
            request: dict[str, str] | None = None) -> Consumer:
    """A consumer whose next event says it holds ``allocations``."""
    found = consumer(ledger, consumer_uuid)
    found.set_holding(Consumer.AllocationsClaimed, allocations, devices or {},
                      request or edit(), project_id=found.project_id, user_id=found.user_id,
                      consumer_type=found.consumer_type)
    return found


def raw(ledger: Ledger, stream: Any, version: int, topic: str, state: bytes) -> int:
    """Store one record as is (any version, any topic, any bytes); its position."""
    recorder = ledger.store.recorder
    recorder.insert_events([StoredEvent(stream, version, topic, state)])
    return recorder.max_notification_id() or 0


def copy_with_version(ledger: Ledger, position: int, version: int) -> int:
    """Store the event at ``position`` again under another version of its stream."""
    original = ledger.store.recorder.select_notifications(position, 1)[0]
    return raw(ledger, original.originator_id, version, original.topic, original.state)


# -- The events table by hand: what someone with the database's rights (not the key) can do


Row = tuple[int, UUID, int, str, bytes, bytes | None]  # position, stream, version, topic,
#                                                         state, chain hash


class EventsTable:
    """The ledger's events table of a store URL, read and rewritten whole by plain SQL,
    past the append (as the table's owner or a superuser would)."""

    def __init__(self, url: str) -> None:
        config = parse_url(url)
        self.sqlite = config.kind == "sqlite"
        if self.sqlite:
            self.name = "stored_events"
            self.path = config.env["SQLITE_DBNAME"]
        else:
            schema = config.env.get("POSTGRES_SCHEMA", "public")
            self.name = f'"{schema}".ledger_events'
            self.conninfo = " ".join(f"{k}={v}" for k, v in deploy.connection(config).items()
                                     if v is not None)

    def _connect(self) -> Any:
        if self.sqlite:
            return closing(sqlite3.connect(self.path, isolation_level=None))
        return psycopg.connect(self.conninfo, autocommit=True)

    def rows(self) -> list[Row]:
        """Every event, in ledger order."""
        with self._connect() as conn:
            found = conn.execute(
                "SELECT " + ("rowid" if self.sqlite else "notification_id") +
                ", originator_id, originator_version, topic, state, chain_hash FROM "
                f"{self.name} ORDER BY 1").fetchall()
        return [(p, UUID(str(s)), v, t, bytes(b), bytes(h) if h is not None else None)
                for p, s, v, t, b, h in found]

    def replace(self, rows: list[Row]) -> None:
        """Make the table hold exactly ``rows``."""
        mark = "?" if self.sqlite else "%s"
        position = "rowid" if self.sqlite else "notification_id"
        with self._connect() as conn:
            conn.execute("BEGIN")
            conn.execute(f"DELETE FROM {self.name}")
            insert = (f"INSERT INTO {self.name} ({position}, originator_id, originator_version,"
                      f" topic, state, chain_hash) VALUES ({', '.join([mark] * 6)})")
            values = [(p, s.hex if self.sqlite else s, v, t, b, h) for p, s, v, t, b, h in rows]
            if self.sqlite:
                conn.executemany(insert, values)
            else:
                conn.cursor().executemany(insert, values)
            conn.execute("COMMIT")

    def set_unkeyed(self) -> None:
        """Make the ledger's chain facts say it was created without a key."""
        with self._connect() as conn:
            conn.execute(f"UPDATE {self.name}_chain SET keyed = (1 = 0), key_check = NULL")

    def delete_snapshots(self) -> None:
        """Drop every stored snapshot (they would give a rewrite away)."""
        table = "stored_snapshots" if self.sqlite else self.name.replace(
            "ledger_events", "ledger_snapshots")
        with self._connect() as conn:
            conn.execute(f"DELETE FROM {table}")


def rechain(rows: list[Row], key: ChainKey | None = None) -> list[Row]:
    """The rows with every chain hash recomputed: a consistent rewrite (without the key,
    an intruder can only compute the unkeyed chain)."""
    previous, out = chain.GENESIS, []
    for p, s, v, t, b, _ in rows:
        previous = chain.link(previous, p, s, v, t, b, key)
        out.append((p, s, v, t, b, previous))
    return out


def with_state(row: Row, state: bytes) -> Row:
    """``row`` with another state (and its old chain hash)."""
    return (*row[:4], state, row[5])
