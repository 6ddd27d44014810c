"""Device assignment within one write: one named device per unit of a device-backed class.

Order matters and is fixed: devices named by a target are reserved first; other targets
keep the devices they hold (lowest ids first, up to their new amount); everything a target
consumer no longer keeps is released; then named and kept devices are taken and the rest of
each need is filled with the lowest free ids. So a swap hands devices over, a revert hands
them back, and a same-host resize holds old and new sets that never overlap.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from allocation_ledger.domain.errors import DevicesUnavailable, InvalidRequest
from allocation_ledger.domain.holdings import NOTHING, Holding, ProviderLoader, Target
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import Devices

Key = tuple[str, str, str]  # consumer, provider, class
HolderChanges = dict[str, dict[str, dict[str, str | None]]]  # provider -> class -> device


def assign_devices(
    load_provider: ProviderLoader, before: Mapping[str, Holding], targets: Sequence[Target]
) -> tuple[dict[str, Devices], HolderChanges]:
    """Each target consumer's new devices, and the holder changes per provider and class.

    Raises :class:`DevicesUnavailable` when too few are free or a named one is held.
    """
    if not _involves_devices(load_provider, before, targets):
        return {}, {}  # what the plan below comes to when no device is concerned
    plan = _Plan(load_provider)
    plan.reserve_named(targets)
    plan.keep_held(before, targets)
    plan.release(before, targets)
    plan.take()
    return plan.holdings(), plan.changes()


def _involves_devices(load_provider: ProviderLoader, before: Mapping[str, Holding],
                      targets: Sequence[Target]) -> bool:
    """True when a target consumer holds devices, or a target allocates a device-backed
    class (only those are planned: named devices of any other class are not looked at)."""
    for target in targets:
        if before.get(target.consumer_uuid, NOTHING).devices:
            return True
        for rp, resources in target.allocations.items():
            provider = load_provider(rp)
            for rc in resources:
                if provider.is_device_backed(rc):
                    return True
    return False


class _Plan:
    def __init__(self, load_provider: ProviderLoader) -> None:
        self._load = load_provider
        self._tables: dict[tuple[str, str], dict[str, str | None]] = {}
        self._wanted: dict[Key, list[str]] = {}
        self._need: dict[Key, int] = {}

    def _table(self, rp: str, rc: str) -> dict[str, str | None]:
        if (rp, rc) not in self._tables:
            self._tables[(rp, rc)] = dict(self._load(rp).devices.get(rc, {}))
        return self._tables[(rp, rc)]

    def _records(self, targets: Sequence[Target]) -> Iterator[tuple[Target, Provider, str, int]]:
        for target in targets:
            for rp, resources in target.allocations.items():
                provider = self._load(rp)
                for rc, amount in resources.items():
                    if provider.is_device_backed(rc):
                        yield target, provider, rc, amount

    def reserve_named(self, targets: Sequence[Target]) -> None:
        for target, provider, rc, amount in self._records(targets):
            named = target.devices.get(provider.uuid, {}).get(rc)
            if named is not None:
                key = (target.consumer_uuid, provider.uuid, rc)
                self._wanted[key] = _check_named(provider, rc, amount, named)

    def keep_held(self, before: Mapping[str, Holding], targets: Sequence[Target]) -> None:
        reserved = {(rp, rc, d) for (_, rp, rc), ids in self._wanted.items() for d in ids}
        for target, provider, rc, amount in self._records(targets):
            key = (target.consumer_uuid, provider.uuid, rc)
            if key in self._wanted:
                continue
            held = before.get(target.consumer_uuid, NOTHING).devices
            mine = sorted(held.get(provider.uuid, {}).get(rc, []))
            kept = [d for d in mine if (provider.uuid, rc, d) not in reserved][:amount]
            self._wanted[key] = kept
            self._need[key] = amount - len(kept)

    def release(self, before: Mapping[str, Holding], targets: Sequence[Target]) -> None:
        for target in targets:
            consumer = target.consumer_uuid
            for rp, by_rc in before.get(consumer, NOTHING).devices.items():
                for rc, ids in by_rc.items():
                    keep = set(self._wanted.get((consumer, rp, rc), []))
                    table = self._table(rp, rc)
                    for device in ids:
                        if device not in keep and table.get(device) == consumer:
                            table[device] = None

    def take(self) -> None:
        # Named and kept devices first (they are spoken for), then fill from the free ones.
        for (consumer, rp, rc), ids in sorted(self._wanted.items()):
            table = self._table(rp, rc)
            for device in ids:
                holder = table.get(device)
                if holder not in (None, consumer):
                    free = sum(1 for h in table.values() if h is None)
                    raise DevicesUnavailable(rp, rc, len(ids), free,
                                             f"device {device} is held by {holder}")
                table[device] = consumer
        for key, need in sorted(self._need.items()):
            if need:
                self._fill(key, need)

    def _fill(self, key: Key, need: int) -> None:
        consumer, rp, rc = key
        table = self._table(rp, rc)
        free = sorted(d for d, h in table.items() if h is None)
        if len(free) < need:
            raise DevicesUnavailable(rp, rc, need, len(free))
        for device in free[:need]:
            table[device] = consumer
        self._wanted[key] = sorted(self._wanted[key] + free[:need])

    def holdings(self) -> dict[str, Devices]:
        result: dict[str, Devices] = {}
        for (consumer, rp, rc), ids in sorted(self._wanted.items()):
            if ids:
                result.setdefault(consumer, {}).setdefault(rp, {})[rc] = sorted(ids)
        return result

    def changes(self) -> HolderChanges:
        result: HolderChanges = {}
        for (rp, rc), table in self._tables.items():
            original = self._load(rp).devices.get(rc, {})
            diff = {d: h for d, h in table.items() if original.get(d) != h}
            if diff:
                result.setdefault(rp, {})[rc] = diff
        return result


def _check_named(provider: Provider, rc: str, amount: int, named: Iterable[str]) -> list[str]:
    ids = sorted(set(named))
    known = provider.devices.get(rc, {})
    missing = [d for d in ids if d not in known]
    if missing:
        raise InvalidRequest(
            f"provider {provider.uuid} has no {rc} devices {', '.join(missing)}",
            provider_uuid=provider.uuid, resource_class=rc, devices=missing,
        )
    if len(ids) != amount:
        raise InvalidRequest(
            f"{amount} {rc} on provider {provider.uuid} needs {amount} devices, "
            f"{len(ids)} named",
            provider_uuid=provider.uuid, resource_class=rc, amount=amount, devices=ids,
        )
    return ids
