"""What one event changed, as plain data and a short sentence.

Every event carries the absolute new state of what it changes, so the change is the
difference between the aggregate just before the event and the event's values. These
functions only read; they never apply anything.
"""

from __future__ import annotations

from typing import Any

from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.migration import Migration
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.trait import Trait

Changes = dict[str, Any]


def changes(event: Any, before: Any) -> Changes:
    """What ``event`` changes in ``before`` (the aggregate before it; ``None`` if new)."""
    if isinstance(event, Migration.Started):
        return {"kind": event.kind, "instance_uuid": event.instance_uuid,
                "source_root": event.source_root, "destination_root": event.destination_root,
                "allocations": event.allocations, "devices": event.devices,
                "old_allocations": event.old_allocations,
                "new_allocations": event.new_allocations}
    if isinstance(event, Consumer.Created):
        return {"allocations": event.allocations, "devices": event.devices,
                "project_id": event.project_id, "user_id": event.user_id,
                "consumer_type": event.consumer_type}
    if isinstance(event, Consumer.AllocationsSet):
        return _holding(event, before)
    if isinstance(event, Migration.DestinationClaimed):
        return {"destination_root": event.destination_root,
                "new_allocations": event.new_allocations, "new_devices": event.new_devices}
    if isinstance(event, Migration.DestinationRemoved):
        return {"destination_root": None, "new_allocations": {}, "new_devices": {}}
    if isinstance(event, Provider.Event):
        return _provider(event, before)
    if isinstance(event, Trait.Created):
        return {"trait": event.name, "created": True}
    if isinstance(event, Trait.Recreated | Trait.Deleted):
        return {"trait": before.name if before is not None else None,
                "created": isinstance(event, Trait.Recreated)}
    return {}


def _holding(event: Any, before: Any) -> Changes:
    old_alloc = before.allocations if before is not None else {}
    old_dev = before.devices if before is not None else {}
    found: Changes = {"allocations": {}, "devices": {}}
    for rp in sorted(old_alloc.keys() | event.allocations.keys()):
        old, new = old_alloc.get(rp, {}), event.allocations.get(rp, {})
        diff = {rc: [old.get(rc, 0), new.get(rc, 0)] for rc in sorted(old.keys() | new.keys())
                if old.get(rc, 0) != new.get(rc, 0)}
        if diff:
            found["allocations"][rp] = diff
    for rp in sorted(old_dev.keys() | event.devices.keys()):
        old_by, new_by = old_dev.get(rp, {}), event.devices.get(rp, {})
        for rc in sorted(old_by.keys() | new_by.keys()):
            old_ids, new_ids = set(old_by.get(rc, ())), set(new_by.get(rc, ()))
            if old_ids != new_ids:
                found["devices"].setdefault(rp, {})[rc] = {
                    "taken": sorted(new_ids - old_ids), "given_back": sorted(old_ids - new_ids)}
    for name in ("migration_uuid", "forced", "status"):
        if hasattr(event, name):
            found[name] = getattr(event, name)
    return found


def _provider(event: Any, before: Any) -> Changes:
    if isinstance(event, Provider.Registered | Provider.Reregistered):
        return {"name": event.name, "parent_uuid": event.parent_uuid,
                "root_uuid": event.root_uuid}
    if isinstance(event, Provider.InventoriesSet):
        old = before.inventories if before is not None else {}
        return {"inventories": {rc: [old.get(rc), event.inventories.get(rc)]
                                for rc in sorted(old.keys() | event.inventories.keys())
                                if old.get(rc) != event.inventories.get(rc)}}
    if isinstance(event, Provider.AllocationsChanged):
        usages = before.usages if before is not None else {}
        devices = before.devices if before is not None else {}
        return {"consumers": event.consumers,
                "usages": {rc: [usages.get(rc, 0), n] for rc, n in event.usages.items()},
                "holds": {rc: {d: [devices.get(rc, {}).get(d), h] for d, h in held.items()}
                          for rc, held in event.holds.items()}}
    if isinstance(event, Provider.DevicesSet):
        old_ids = set(before.devices.get(event.resource_class, {})) if before else set()
        return {"resource_class": event.resource_class,
                "added": sorted(set(event.device_ids) - old_ids),
                "removed": sorted(old_ids - set(event.device_ids)),
                "inventory": event.inventory}
    if isinstance(event, Provider.Renamed):
        return {"name": [before.name if before is not None else None, event.name]}
    if isinstance(event, Provider.ChildAttached | Provider.ChildDetached):
        return {"child_uuid": event.child_uuid}
    if isinstance(event, Provider.ParentChanged):
        return {"parent_uuid": [before.parent_uuid if before is not None else None,
                                event.parent_uuid],
                "root_uuid": [before.root_uuid if before is not None else None,
                              event.root_uuid]}
    if isinstance(event, Provider.RootChanged):
        return {"root_uuid": [before.root_uuid if before is not None else None,
                              event.root_uuid]}
    if isinstance(event, Provider.TraitsSet):
        return _set_change("traits", before.traits if before is not None else [], event.traits)
    if isinstance(event, Provider.AggregatesSet):
        return _set_change("aggregates", before.aggregates if before is not None else [],
                           event.aggregates)
    return {}


def _set_change(what: str, old: list[str], new: list[str]) -> Changes:
    """A whole set replaced: what it became, what was added and what was removed."""
    return {what: list(new), f"{what}_added": sorted(set(new) - set(old)),
            f"{what}_removed": sorted(set(old) - set(new))}


def summary(event: Any, found: Changes) -> str:
    """A short sentence for a terminal."""
    name = type(event).__qualname__
    parts: list[str] = []
    if isinstance(event, Consumer.Created):
        parts += [f"{rc} {n} on {rp[:8]}" for rp, by in event.allocations.items()
                  for rc, n in by.items()]
    elif isinstance(event, Consumer.AllocationsSet):
        parts += [f"{rc} {old}->{new} on {rp[:8]}"
                  for rp, by_rc in found["allocations"].items()
                  for rc, (old, new) in by_rc.items()]
    parts += [f"{rc} used {old}->{new}" for rc, (old, new) in found.get("usages", {}).items()]
    parts += [f"{rc} inventory {'set' if new else 'removed'}"
              for rc, (_, new) in found.get("inventories", {}).items()]
    parts += [f"{key} {found[key]}" for key in
              ("status", "kind", "destination_root", "child_uuid", "name") if found.get(key)]
    for what in ("traits", "aggregates"):
        parts += [f"{what} +{n}" for n in found.get(f"{what}_added", [])]
        parts += [f"{what} -{n}" for n in found.get(f"{what}_removed", [])]
        if what in found and not found[what]:
            parts.append(f"{what} cleared")
    for key in ("parent_uuid", "root_uuid"):
        if isinstance(found.get(key), list):
            old, new = found[key]
            parts.append(f"{key.removesuffix('_uuid')} {old or '-'} -> {new or '-'}")
    if "trait" in found:
        parts.append(f"trait {found['trait']} {'created' if found['created'] else 'deleted'}")
    return f"{name}: {', '.join(parts)}" if parts else name
