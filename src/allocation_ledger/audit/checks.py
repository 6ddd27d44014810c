"""The invariants of docs/guarantees.md §5, as pure functions that return findings.

Two sorts of check:

- per event, true of every single event whatever command it belongs to: a write never grows
  a provider's usage above capacity (§5.2, with Placement's rule from ``domain.rules``), a
  resolved migration holds nothing (§5.4), allocations name registered providers;
- per (provider, class), true once a whole command has been applied (one command's events
  pass through inconsistent states while they are applied one at a time): usage equals the
  sum of allocations (§5.1), every device has at most one holder and provider and consumer
  agree on it, and held devices match device-backed usage (§5.3).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allocation_ledger.audit import findings as f
from allocation_ledger.audit.findings import Finding, Where
from allocation_ledger.audit.index import HoldingsIndex, Key
from allocation_ledger.audit.state import kind_of
from allocation_ledger.domain import rules
from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.migration import IN_PROGRESS, Migration
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import Inventory

#: Inventories as read from providers' plain dicts, per (provider, class), each beside the
#: dict it was read from (a provider's events replace these dicts, never edit them) and its
#: capacity
Inventories = dict[Key, tuple[dict[str, Any], Inventory, int]]


def check_growth(where: Where, provider: Provider, before: Mapping[str, int],
                 usages: Mapping[str, int], known: Inventories | None = None) -> list[Finding]:
    """§5.2: an allocation write may not grow usage above capacity (nor below zero).
    ``known``: inventories already read, kept up to date here (a replay checks the same
    inventory at every claim)."""
    found: list[Finding] = []
    for rc, used in usages.items():
        old = before.get(rc, 0)
        if 0 <= used <= old:
            continue  # only a write that grows usage is held to capacity
        if used < 0:
            found.append(Finding.at(where, f.NEGATIVE_USAGE,
                                    f"provider {provider.uuid} {rc} usage became {used}",
                                    {"provider_uuid": provider.uuid, "resource_class": rc},
                                    {"usage": used}))
            continue
        raw = provider.inventories.get(rc)
        if raw is not None:
            inventory, capacity = _inventory(provider.uuid, rc, raw, known)
            if used <= capacity:  # what capacity_exceeded answers first, without the call
                continue
        if raw is None or rules.capacity_exceeded(inventory, old, used):
            capacity = inventory.capacity if raw is not None else 0
            found.append(Finding.at(
                where, f.OVER_CAPACITY,
                f"provider {provider.uuid} {rc} usage grew from {old} to {used}, above "
                f"capacity {capacity}" + ("" if raw else " (no inventory of that class)"),
                {"provider_uuid": provider.uuid, "resource_class": rc},
                {"before": old, "usage": used, "capacity": capacity}))
    return found


def _inventory(rp: str, rc: str, raw: dict[str, Any],
               known: Inventories | None) -> tuple[Inventory, int]:
    """The inventory ``raw`` describes and its capacity (from ``known`` while ``raw`` is
    the dict it was read from)."""
    if known is None:
        inventory = Inventory.from_dict(raw)
        return inventory, inventory.capacity
    seen = known.get((rp, rc))
    if seen is not None and seen[0] is raw:
        return seen[1], seen[2]
    inventory = Inventory.from_dict(raw)
    known[(rp, rc)] = (raw, inventory, inventory.capacity)
    return inventory, inventory.capacity


def check_consumer(where: Where, consumer: Consumer,
                   providers: Mapping[str, Provider]) -> list[Finding]:
    """§5.4 and sanity of one consumer's new holding."""
    found: list[Finding] = []
    ids: dict[str, Any] = {"consumer_uuid": consumer.uuid}
    resolved = kind_of(consumer) is Migration and not consumer.in_flight  # type: ignore[attr-defined]
    if resolved and (consumer.allocations or consumer.devices):
        status = getattr(consumer, "status", "")
        found.append(Finding.at(
            where, f.RESOLVED_HOLDS,
            f"migration {consumer.uuid} is {status} but holds "
            f"{consumer.allocations or consumer.devices}", ids,
            {"amount": _total(consumer.allocations)}))
    for rp, resources in consumer.allocations.items():
        provider = providers.get(rp)
        if provider is None or provider.deleted:
            state = "never registered" if provider is None else "deleted"
            found.append(Finding.at(where, f.UNKNOWN_PROVIDER,
                                    f"consumer {consumer.uuid} holds {resources} on provider "
                                    f"{rp}, which is {state}", {**ids, "provider_uuid": rp}))
        for rc, amount in resources.items():
            if not isinstance(amount, int) or amount < 1:
                found.append(Finding.at(
                    where, f.INVALID_AMOUNT,
                    f"consumer {consumer.uuid} holds {amount!r} {rc} on {rp}",
                    {**ids, "provider_uuid": rp, "resource_class": rc}))
    return found


def check_resolved_again(where: Where, migration: Migration, before: str) -> list[Finding]:
    """A migration resolves at most once (§4): a second resolution is an invalid
    transition that should never have been written."""
    if before == IN_PROGRESS:
        return []
    return [Finding.at(where, f.RESOLVED_TWICE,
                       f"migration {migration.uuid} was already {before} and was resolved "
                       f"again as {migration.status}",
                       {"consumer_uuid": migration.uuid, "status": migration.status})]


def check_usage(where: Where, key: Key, provider: Provider | None,
                index: HoldingsIndex) -> list[Finding]:
    """§5.1: the provider's usage of a class equals what consumers hold of it."""
    rp, rc = key
    used = provider.usages.get(rc, 0) if provider is not None else 0
    allocated = index.allocated.get(key, 0)
    if used == allocated:
        return []
    return [Finding.at(
        where, f.USAGE_MISMATCH,
        f"provider {rp} {rc}: usage {used} but consumers hold {allocated}",
        {"provider_uuid": rp, "resource_class": rc},
        {"usage": used, "allocated": allocated, "difference": used - allocated})]


def check_devices(where: Where, key: Key, provider: Provider | None,
                  index: HoldingsIndex) -> list[Finding]:
    """§5.3: at most one holder per device, provider and consumers agree, counts match."""
    rp, rc = key
    table = provider.devices.get(rc, {}) if provider is not None else {}
    listing = index.listed.get(key, {})
    ids = {"provider_uuid": rp, "resource_class": rc}
    found: list[Finding] = []
    for device, holders in sorted(listing.items()):
        here = {**ids, "device": device}
        if len(holders) > 1:
            found.append(Finding.at(
                where, f.DOUBLE_HOLDER,
                f"device {device} ({rc}) on {rp} is held by {len(holders)} consumers: "
                f"{', '.join(sorted(holders))}", {**here, "consumers": sorted(holders)},
                {"holders": len(holders)}))
        elif holders and device not in table:
            found.append(Finding.at(where, f.UNKNOWN_DEVICE,
                                    f"consumer {min(holders)} holds device {device} ({rc}), "
                                    f"which provider {rp} does not have", here))
        elif holders and table[device] not in holders:
            found.append(Finding.at(
                where, f.HOLDER_MISMATCH,
                f"device {device} ({rc}) on {rp}: provider says {table[device]}, consumer "
                f"{min(holders)} says it holds it", {**here, "consumer_uuid": min(holders)}))
    for device, holder in sorted(table.items()):
        if holder is not None and holder not in listing.get(device, ()):
            found.append(Finding.at(
                where, f.HOLDER_MISMATCH,
                f"device {device} ({rc}) on {rp}: provider says {holder} holds it, but "
                f"{holder} does not list it", {**ids, "device": device,
                                              "consumer_uuid": holder}))
    held = sum(1 for h in table.values() if h is not None)
    backed = index.device_backed.get(key, 0)
    if not found and held != backed:
        found.append(Finding.at(
            where, f.DEVICE_COUNT,
            f"provider {rp} {rc}: {held} devices held but consumers holding devices use "
            f"{backed}", ids, {"held": held, "device_backed_usage": backed}))
    return found


def _total(allocations: Mapping[str, Mapping[str, int]]) -> int:
    return sum(sum(r.values()) for r in allocations.values())
