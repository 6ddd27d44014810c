"""Notifications as the recorders read them: the library's record plus its chain hash."""

from __future__ import annotations

from typing import Any

from eventsourcing.persistence import Notification


def notification(position: int, stream: Any, version: int, topic: str, state: bytes,
                 chain_hash: bytes | None) -> Notification:
    """A ``Notification`` that also carries ``chain_hash`` (``None`` where a row has none),
    built without the frozen dataclass's per-field ``object.__setattr__`` (a third of the
    cost of reading a row)."""
    found = object.__new__(Notification)
    object.__setattr__(found, "__dict__", {
        "originator_id": stream, "originator_version": version, "topic": topic,
        "state": state, "id": position,
        "chain_hash": bytes(chain_hash) if chain_hash is not None else None})
    return found


def chain_hash(found: Notification) -> bytes | None:
    """The chain hash a recorder read with ``found`` (``None``: none, or not read)."""
    value: bytes | None = found.__dict__.get("chain_hash")
    return value


def chained(store: Any) -> bool:
    """True when the event store keeps a hash chain (SQLite and PostgreSQL do; memory does
    not)."""
    return hasattr(store.recorder, "chain_facts")
