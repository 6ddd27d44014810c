"""Decoding stored events for a replay, as the store's mapper does, but faster.

The mapper's JSON decoder calls a Python hook for every object in every event (to find the
``{"_type_": ..., "_data_": ...}`` values it made of datetimes, UUIDs and decimals). The
ledger's events hold only one such value, the top-level ``timestamp``: everything else is
plain JSON by design (``domain.values``). So when a record has exactly one typed value and
it is the ``timestamp``, plain JSON parsing (``orjson``, three times faster than the
standard library's parser) and decoding that one value gives the same event several times
faster. Any other record (a typed value elsewhere, a cipher, compression, an upcast class,
an integer past 64 bits, which ``orjson`` reads as a float) goes through the
mapper itself. ``tests/audit`` checks both give equal events. Either way an event that
lacks a field its class declares is a :class:`MalformedEvent`, never an event that fails
later wherever the field is read. Used by the audit replay, the
projections catch-up, and the store's own mapper (``encoding.PlainMapper``) for every read of
the write path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn
from uuid import UUID

import orjson
from eventsourcing.persistence import JSONTranscoder, Mapper, StoredEvent, Transcoding
from eventsourcing.utils import TopicError, resolve_topic

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


class MalformedEvent(ValueError):
    """Raised when a stored record decodes but is not an event of its class: a field the
    class declares (and gives no default) is missing. Such a record (appended past the
    service's checks) is as unreadable as bytes that are not JSON: the audit reports it
    where it is, the read side stops there."""


#: What decoding raises for a record that is not an event of its topic (an unknown topic,
#: bytes that are not JSON, a field that does not fit, a :class:`MalformedEvent`).
UNREADABLE = (TopicError, ImportError, AttributeError, ValueError, TypeError, KeyError)


def required_fields(cls: type) -> frozenset[str]:
    """The fields every event of ``cls`` carries: the annotated attributes of its classes
    that have no default (``ClassVar`` ones excluded)."""
    names = {name for klass in cls.__mro__ for name, annotation in
             vars(klass).get("__annotations__", {}).items()
             if "ClassVar" not in str(annotation)}
    return frozenset(name for name in names if not hasattr(cls, name))


def _missing(cls: type, state: dict[str, Any], required: frozenset[str]) -> NoReturn:
    missing = ", ".join(sorted(required.difference(state)))
    raise MalformedEvent(f"{cls.__qualname__} event v{state.get('originator_version')} "
                         f"lacks {missing}")


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
        #: per topic: the event class and the fields it must carry
        self._classes: dict[str, tuple[type, frozenset[str]]] = {}
        self._required: dict[type, frozenset[str]] = {}  # of the classes decoded slowly

    def __call__(self, notification: StoredEvent) -> Any:
        """The domain event; raises what the mapper raises for a record it cannot read,
        and :class:`MalformedEvent` for one that lacks a field of its class."""
        if not self._plain or notification.state.count(TYPED) != 1:
            return self._slowly(notification)
        known = self._classes.get(notification.topic)
        if known is None:
            cls = resolve_topic(notification.topic)
            if getattr(cls, "class_version", 1) != 1:
                return self._slowly(notification)  # needs upcasting
            known = self._classes[notification.topic] = (cls, required_fields(cls))
        cls, required = known
        if _long_number(notification.state):
            return self._slowly(notification)  # orjson may read a float
        try:
            state = orjson.loads(notification.state)
        except orjson.JSONDecodeError:
            return self._slowly(notification)
        if type(state) is not dict or "class_version" in state:
            return self._slowly(notification)
        stamp = state.get("timestamp")
        if type(stamp) is not dict or "_data_" not in stamp:  # the typed value is elsewhere
            return self._slowly(notification)
        transcoding = self._names.get(str(stamp.get("_type_")))
        if transcoding is None:  # a type this store does not know: let the mapper say so
            return self._slowly(notification)
        state["timestamp"] = transcoding.decode(stamp["_data_"])
        originator = notification.originator_id
        state["originator_id"] = originator if isinstance(originator, UUID) else UUID(
            str(originator))
        state["originator_version"] = notification.originator_version
        if not required.issubset(state):
            _missing(cls, state, required)
        event: Any = object.__new__(cls)
        object.__setattr__(event, "__dict__", state)
        return event

    def _slowly(self, notification: StoredEvent) -> Any:
        """The mapper's decoding of a record the fast path leaves to it, checked alike."""
        event = self._fallback(notification)
        state = vars(event)
        required = self._required.get(type(event))
        if required is None:
            required = self._required[type(event)] = required_fields(type(event))
        if not required.issubset(state):
            _missing(type(event), state, required)
        return event
