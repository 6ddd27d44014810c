"""Decoding stored events for a replay, as the store's mapper does, but faster.

The mapper's JSON decoder calls a Python hook for every object in every event (to find the
``{"_type_": ..., "_data_": ...}`` values it made of datetimes, UUIDs and decimals). The
ledger's events hold only one such value, the top-level ``timestamp``: everything else is
plain JSON by design (``domain.values``). So when a record has exactly one typed value and
it is the ``timestamp``, plain JSON parsing (``orjson``, three times faster than the
standard library's parser) and decoding that one value gives the same event several times
faster. Any other record (a typed value elsewhere, a cipher, compression, an upcast class,
an integer past 64 bits, which ``orjson`` reads as a float) goes through the
mapper itself. ``tests/audit`` checks both give equal events. Used by the audit replay, the
projections catch-up, and the store's own mapper (``encoding.PlainMapper``) for every read of
the write path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import JSONTranscoder, Mapper, StoredEvent, Transcoding
from eventsourcing.utils import resolve_topic

TYPED = b'"_type_"'
#: Numbers orjson does not read as Python does: an integer below -2**63 or from 2**64 on
#: comes back a float. Records holding a run of 20 digits, or a "-" and 19, take the
#: mapper's path; the digits are found by turning each into "0" (bytes.translate) and
#: searching for the runs (0.4 us on a 375-byte record; a regular expression took 9 us).
_ZEROED_DIGITS = bytes.maketrans(b"0123456789", b"0000000000")
_LONG_RUNS = (b"0" * 20, b"-" + b"0" * 19)


def _long_number(state: bytes) -> bool:
    zeroed = state.translate(_ZEROED_DIGITS)
    return any(run in zeroed for run in _LONG_RUNS)


def plain_json(mapper: Mapper[UUID]) -> bool:
    """True when the mapper stores events as plain JSON text (the JSON transcoder, no
    cipher, no compression)."""
    return (isinstance(mapper.transcoder, JSONTranscoder) and mapper.cipher is None
            and mapper.compressor is None)


class Decoder:
    """Turns a store's notifications into domain events (``Mapper.to_domain_event``).

    The records the fast path leaves to the mapper go to the library's own decoding where
    the mapper keeps it aside (``decode_slowly``: the store's mapper, which already decodes
    through a ``Decoder``, so that such a record is not checked twice), else to the
    mapper's ``to_domain_event``."""

    def __init__(self, mapper: Mapper[UUID]) -> None:
        self._fallback: Callable[[StoredEvent], Any] = getattr(
            mapper, "decode_slowly", mapper.to_domain_event)
        self._plain = plain_json(mapper)
        self._names: dict[str, Transcoding] = (
            mapper.transcoder.names if isinstance(mapper.transcoder, JSONTranscoder) else {})
        self._classes: dict[str, type] = {}

    def __call__(self, notification: StoredEvent) -> Any:
        """The domain event; raises what the mapper raises for a record it cannot read."""
        if not self._plain or notification.state.count(TYPED) != 1:
            return self._fallback(notification)
        cls = self._classes.get(notification.topic)
        if cls is None:
            cls = resolve_topic(notification.topic)
            if getattr(cls, "class_version", 1) != 1:
                return self._fallback(notification)  # needs upcasting
            self._classes[notification.topic] = cls
        if _long_number(notification.state):
            return self._fallback(notification)  # orjson may read a float
        try:
            state = orjson.loads(notification.state)
        except orjson.JSONDecodeError:
            return self._fallback(notification)
        if type(state) is not dict or "class_version" in state:
            return self._fallback(notification)
        stamp = state.get("timestamp")
        if type(stamp) is not dict or "_data_" not in stamp:  # the typed value is elsewhere
            return self._fallback(notification)
        transcoding = self._names.get(str(stamp.get("_type_")))
        if transcoding is None:  # a type this store does not know: let the mapper say so
            return self._fallback(notification)
        state["timestamp"] = transcoding.decode(stamp["_data_"])
        originator = notification.originator_id
        state["originator_id"] = originator if isinstance(originator, UUID) else UUID(
            str(originator))
        state["originator_version"] = notification.originator_version
        event = object.__new__(cls)
        object.__setattr__(event, "__dict__", state)
        return event
