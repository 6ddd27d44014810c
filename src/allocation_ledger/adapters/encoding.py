"""Encoding domain events for the store, as the store's mapper does, but faster.

The mapper writes an event's attributes as JSON with the standard library's encoder, which
calls a Python hook for every value JSON has no type for (a datetime, a UUID, a decimal) and
writes it as ``{"_type_": ..., "_data_": ...}``. The ledger's events hold one such value, the
top-level ``timestamp``; everything else is plain JSON by design (``domain.values``). When an
event's attributes are plain JSON (strings, integers of at most 64 bits, booleans, ``None``,
lists, and dicts with string keys), apart from top-level values of a type the transcoder
knows and that encode to plain JSON, those values are replaced by the objects the hook would
have made and ``orjson`` writes the same bytes as the mapper, several times faster (both
escape the same characters of a string and nothing else: ``tests/unit/test_encoding.py``).
Any other event (a float, whose digits the two write differently, a typed value deeper
down, a subclass of a plain type, a cipher, compression) goes through the mapper itself.
Stored events are read back the way a replay reads them (``decoding.Decoder``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import JSONTranscoder, Mapper, StoredEvent
from eventsourcing.utils import get_topic

from allocation_ledger.adapters.decoding import Decoder, plain_json

#: Integers both encoders write the same way (orjson refuses others).
_LOWEST, _BEYOND = -(2**63), 2**64


def is_plain(value: Any) -> bool:
    """True when ``value`` is plain JSON that ``orjson`` and the standard library's
    encoder write identically."""
    kind = type(value)
    if kind is dict:
        for key in value:
            if type(key) is not str:
                return False
        return _plain_items(value.values())
    if kind is list:
        return _plain_items(value)
    return _plain_items((value,))


def _plain_items(items: Iterable[Any]) -> bool:
    """True when every one of ``items`` is plain (leaves checked here, without a call)."""
    for item in items:
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            number: int = item
            if not _LOWEST <= number < _BEYOND:
                return False
        elif (kind is not dict and kind is not list) or not is_plain(item):
            return False
    return True


class PlainMapper(Mapper[UUID]):
    """The store's mapper, writing plain events with ``orjson`` (see the module)."""

    def __init__(self, transcoder: Any, compressor: Any = None, cipher: Any = None) -> None:
        super().__init__(transcoder, compressor=compressor, cipher=cipher)
        self._plain = plain_json(self)
        #: the library's decoding, for the records the fast path leaves to it
        self.decode_slowly = super().to_domain_event
        self._decode = Decoder(self)

    def to_domain_event(self, stored_event: StoredEvent) -> DomainEventProtocol[UUID]:
        """The domain event, as the library's mapper makes it, decoded as a replay decodes
        (``decoding.Decoder``: several times faster for the ledger's plain events)."""
        event: DomainEventProtocol[UUID] = self._decode(stored_event)
        return event

    def to_stored_event(self, domain_event: DomainEventProtocol[UUID]) -> StoredEvent:
        """The stored event, byte for byte what the library's mapper makes of it."""
        if not self._plain:
            return super().to_stored_event(domain_event)
        kind = type(domain_event)
        state = dict(vars(domain_event))
        originator_id = state.pop("originator_id")
        originator_version = state.pop("originator_version")
        class_version = getattr(kind, "class_version", 1)
        if class_version > 1:
            state["class_version"] = class_version
        encoded = self._encode(state)
        if encoded is None:
            return super().to_stored_event(domain_event)
        return StoredEvent(originator_id=originator_id, originator_version=originator_version,
                           topic=get_topic(kind), state=encoded)

    def _encode(self, state: dict[str, Any]) -> bytes | None:
        """``state`` as the JSON transcoder writes it, or ``None`` to leave it to the
        transcoder."""
        assert isinstance(self.transcoder, JSONTranscoder)
        typed: dict[str, Any] = {}
        for key, value in state.items():
            kind = type(value)  # the leaves most values are, checked here without a call
            if kind is str or value is None or kind is bool:
                continue
            if kind is int:
                if _LOWEST <= value < _BEYOND:
                    continue
            elif is_plain(value):
                continue
            transcoding = self.transcoder.types.get(type(value))
            if transcoding is None:
                return None
            data = transcoding.encode(value)
            if not is_plain(data):
                return None
            typed[key] = {"_type_": transcoding.name, "_data_": data}
        state.update(typed)  # in place: the keys keep their order
        try:
            return orjson.dumps(state)
        except orjson.JSONEncodeError:  # a lone surrogate: the library says what is wrong
            return None
