"""Records as the recorders read them: notifications (the library's record plus its chain
hash) and a stream's stored events, built without the frozen dataclass's per-field
``object.__setattr__``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification, StoredEvent


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


def stored_event(stream: Any, version: int, topic: str, state: bytes) -> StoredEvent:
    """A ``StoredEvent``, built as :func:`notification` builds a notification."""
    found = object.__new__(StoredEvent)
    object.__setattr__(found, "__dict__", {
        "originator_id": stream, "originator_version": version, "topic": topic,
        "state": state})
    return found


def stream_events(asked: Any, rows: list[Any],
                  convert: Callable[[str], Any]) -> list[StoredEvent]:
    """One stream's ``(version, topic, state)`` rows as the library's ``select_events``
    gives them: each with the stream id it was asked for, as the library would read it
    from the row (``convert`` of the text; every row is of that stream, so it is parsed
    once, not per row)."""
    stream = asked if isinstance(asked, UUID) or not rows else convert(asked)
    return [stored_event(stream, version, topic, state) for version, topic, state in rows]


def events_filter(gt: int | None, lte: int | None, desc: bool, limit: int | None,
                  placeholder: str) -> tuple[str, list[int]]:
    """The rest of the library's query of one stream's events (after ``WHERE
    originator_id = ?``), and its parameters after the stream's: the same filter, order
    and limit as the library's ``select_events``."""
    text, params = "", []
    if gt is not None:
        text += f" AND originator_version > {placeholder}"
        params.append(gt)
    if lte is not None:
        text += f" AND originator_version <= {placeholder}"
        params.append(lte)
    text += " ORDER BY originator_version " + ("DESC" if desc else "ASC")
    if limit is not None:
        text += f" LIMIT {placeholder}"
        params.append(limit)
    return text, params
