"""Running totals of what consumers hold, kept up to date event by event.

Checking "usage equals the sum of allocations" by summing every consumer at every position
would cost the whole ledger per event; instead each consumer event moves its own old holding
out of the totals and its new one in, and reports which (provider, class) pairs it touched,
so a check only looks at those.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.values import Allocations, Devices

Key = tuple[str, str]  # provider uuid, resource class


@dataclass
class HoldingsIndex:
    """Per (provider, class): the amount allocated, the amount allocated by consumers that
    hold devices for it, and which consumers list each device."""

    allocated: dict[Key, int] = field(default_factory=dict)
    device_backed: dict[Key, int] = field(default_factory=dict)
    listed: dict[Key, dict[str, set[str]]] = field(default_factory=dict)

    @classmethod
    def of(cls, consumers: Iterable[Consumer]) -> HoldingsIndex:
        """The totals of a set of consumers (to start checking mid-ledger)."""
        index = cls()
        for consumer in consumers:
            index.move_parts(consumer.uuid, {}, {}, consumer.allocations,
                             consumer.devices, {}, {}, None)
        return index

    def move_parts(self, consumer: str, old_all: Allocations, old_devices: Devices,
                   new_all: Allocations, new_devices: Devices, usage: dict[Key, Any],
                   devices: dict[Key, Any], mark: Any) -> None:
        """Replace ``consumer``'s holding (its allocations and devices) by the new one;
        sets ``mark`` in ``usage`` at the keys whose allocated amount changed and in
        ``devices`` at those whose devices changed (a replay moves a consumer at every
        event, and notes which keys each command changed)."""
        if old_all is new_all and old_devices is new_devices:
            return
        allocated = self.allocated
        for rp in _keys(old_all, new_all):
            old, new = old_all.get(rp, _EMPTY), new_all.get(rp, _EMPTY)
            for rc in _keys(old, new):
                delta = new.get(rc, 0) - old.get(rc, 0)
                if delta:
                    key = (rp, rc)
                    allocated[key] = allocated.get(key, 0) + delta
                    usage[key] = mark
        if old_devices or new_devices:  # most consumers hold no device: nothing more
            self._move_devices(consumer, old_all, old_devices, new_all, new_devices,
                               devices, mark)

    def _move_devices(self, consumer: str, old_all: Allocations, old_devices: Devices,
                      new_all: Allocations, new_devices: Devices, devices: dict[Key, Any],
                      mark: Any) -> None:
        """The device side of :meth:`move_parts`: the amounts backed by devices, and which
        consumer lists each device."""
        backing = self.device_backed
        for rp in _keys(old_devices, new_devices):
            old, new = old_all.get(rp, _EMPTY), new_all.get(rp, _EMPTY)
            old_by, new_by = old_devices.get(rp, _EMPTY), new_devices.get(rp, _EMPTY)
            for rc in _keys(old, new):
                backed = (new.get(rc, 0) if new_by.get(rc) else 0) - (
                    old.get(rc, 0) if old_by.get(rc) else 0)
                if backed:
                    key = (rp, rc)
                    backing[key] = backing.get(key, 0) + backed
                    devices[key] = mark
            for rc in _keys(old_by, new_by):
                old_ids, new_ids = set(old_by.get(rc, ())), set(new_by.get(rc, ()))
                if old_ids == new_ids:
                    continue
                table = self.listed.setdefault((rp, rc), {})
                for device in old_ids - new_ids:
                    table.get(device, set()).discard(consumer)
                for device in new_ids - old_ids:
                    table.setdefault(device, set()).add(consumer)
                devices[(rp, rc)] = mark


_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _keys(old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterable[str]:
    """The keys of either mapping (without building a set when one of them is empty)."""
    if not old:
        return new
    if not new:
        return old
    return old.keys() | new.keys()
