"""Decoding stored events for a replay, as the store's mapper does, but faster.

The mapper's JSON decoder calls a Python hook for every object in every event (to find the
``{"_type_": ..., "_data_": ...}`` values it made of datetimes, UUIDs and decimals). The
ledger's events hold only one such value, the top-level ``timestamp``: everything else is
plain JSON by design (``domain.values``). So when a record has exactly one typed value,
plain ``json.loads`` plus decoding the top-level typed values gives the same event several
times faster; any other record (more typed values, a cipher, compression, an upcast class)
goes through the mapper itself. ``tests/audit`` checks both give equal events. Used by
the audit replay and the projections catch-up.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from eventsourcing.persistence import JSONTranscoder, Mapper, Notification, Transcoding
from eventsourcing.utils import resolve_topic

TYPED = b'"_type_"'
_JSON = json.JSONDecoder()


class Decoder:
    """Turns a store's notifications into domain events (``Mapper.to_domain_event``)."""

    def __init__(self, mapper: Mapper[UUID]) -> None:
        self._mapper = mapper
        transcoder = mapper.transcoder
        self._names: dict[str, Transcoding] = {}
        if isinstance(transcoder, JSONTranscoder):
            self._names = transcoder.names
        self._plain = bool(self._names) and mapper.cipher is None and mapper.compressor is None
        self._classes: dict[str, type] = {}

    def __call__(self, notification: Notification) -> Any:
        """The domain event; raises what the mapper raises for a record it cannot read."""
        if not self._plain or notification.state.count(TYPED) != 1:
            return self._mapper.to_domain_event(notification)
        cls = self._classes.get(notification.topic)
        if cls is None:
            cls = resolve_topic(notification.topic)
            if getattr(cls, "class_version", 1) != 1:
                return self._mapper.to_domain_event(notification)  # needs upcasting
            self._classes[notification.topic] = cls
        state = _JSON.decode(notification.state.decode("utf-8"))
        if not isinstance(state, dict) or "class_version" in state:
            return self._mapper.to_domain_event(notification)
        for key, value in state.items():
            if type(value) is dict and "_type_" in value:
                state[key] = self._names[value["_type_"]].decode(value["_data_"])
        originator = notification.originator_id
        state["originator_id"] = originator if isinstance(originator, UUID) else UUID(
            str(originator))
        state["originator_version"] = notification.originator_version
        event = object.__new__(cls)
        object.__setattr__(event, "__dict__", state)
        return event
