"""Writing events straight into the store, past every check of the service, the way a bug,
a botched migration script or a hand-edited database would: what the audit is for."""

from __future__ import annotations

import itertools
from typing import Any

from eventsourcing.persistence import StoredEvent

from allocation_ledger import Ledger
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
