"""Running totals of what consumers hold, kept up to date event by event.

Checking "usage equals the sum of allocations" by summing every consumer at every position
would cost the whole ledger per event; instead each consumer event moves its own old holding
out of the totals and its new one in, and reports which (provider, class) pairs it touched,
so a check only looks at those.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.reallocation import Holding

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
            index.move(consumer.uuid, Holding(), Holding(consumer.allocations, consumer.devices))
        return index

    def move(self, consumer: str, before: Holding, after: Holding) -> tuple[set[Key], set[Key]]:
        """Replace ``consumer``'s ``before`` holding by ``after``; returns the keys whose
        allocated amount changed and those whose devices changed."""
        usage: set[Key] = set()
        devices: set[Key] = set()
        if before.allocations is after.allocations and before.devices is after.devices:
            return usage, devices
        for rp in before.allocations.keys() | after.allocations.keys():
            old = before.allocations.get(rp, {})
            new = after.allocations.get(rp, {})
            old_dev = before.devices.get(rp, {})
            new_dev = after.devices.get(rp, {})
            for rc in old.keys() | new.keys():
                key = (rp, rc)
                delta = new.get(rc, 0) - old.get(rc, 0)
                if delta:
                    self.allocated[key] = self.allocated.get(key, 0) + delta
                    usage.add(key)
                backed = (new.get(rc, 0) if new_dev.get(rc) else 0) - (
                    old.get(rc, 0) if old_dev.get(rc) else 0)
                if backed:
                    self.device_backed[key] = self.device_backed.get(key, 0) + backed
                    devices.add(key)
        for rp in before.devices.keys() | after.devices.keys():
            old_by = before.devices.get(rp, {})
            new_by = after.devices.get(rp, {})
            for rc in old_by.keys() | new_by.keys():
                old_ids, new_ids = set(old_by.get(rc, ())), set(new_by.get(rc, ()))
                if old_ids == new_ids:
                    continue
                table = self.listed.setdefault((rp, rc), {})
                for device in old_ids - new_ids:
                    table.get(device, set()).discard(consumer)
                for device in new_ids - old_ids:
                    table.setdefault(device, set()).add(consumer)
                devices.add((rp, rc))
        return usage, devices
