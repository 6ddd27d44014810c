"""The one write rule: move consumers from what they hold to what they should hold.

Every command that changes allocations (claim, multi-consumer write, release, swap, confirm,
revert, forced moves, evacuation) ends here. Placement's order is kept: the old allocations
of every consumer the write names are taken out before the new ones are checked, so
replacing a consumer's allocation never double counts it. Capacity is checked only where
usage grows; unit rules only on targets that ask for them (hand-overs of existing records
skip them, so tightening ``max_unit`` never strands an instance mid-move).

Device-backed classes (a provider with named devices for the class) hand out exactly one
device per unit: named ones when the caller names them, otherwise the consumer keeps what it
holds and takes the lowest free ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from allocation_ledger.domain import rules
from allocation_ledger.domain.errors import DevicesUnavailable, InvalidRequest
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import Allocations, Devices, RequestMeta

ProviderLoader = Callable[[str], Provider]


@dataclass(frozen=True)
class Holding:
    """What one consumer holds: its allocations and the devices behind them."""

    allocations: Allocations = field(default_factory=dict)
    devices: Devices = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    """What one consumer should hold after a write.

    ``devices`` names devices explicitly (hand-overs, or a caller's choice); for a
    (provider, class) it leaves out, the consumer keeps what it holds and takes the lowest
    free ids. ``check_units`` applies min/max/step to every record.
    """

    consumer_uuid: str
    allocations: Allocations
    devices: Devices = field(default_factory=dict)
    check_units: bool = True


def reallocate(
    load_provider: ProviderLoader,
    before: Mapping[str, Holding],
    targets: Sequence[Target],
    request: RequestMeta,
) -> dict[str, Holding]:
    """Check a write and record it on every provider it changes.

    ``before`` holds what each target consumer holds now. Raises a :class:`LedgerError`
    (and records nothing) when the write breaks a rule. Returns each consumer's new holding.
    """
    deltas: dict[str, dict[str, int]] = {}
    for target in targets:
        old = before.get(target.consumer_uuid, Holding())
        _add(deltas, old.allocations, -1)
        _add(deltas, target.allocations, +1)
        if target.check_units:
            check_unit_rules(load_provider, target.consumer_uuid, target.allocations)
        else:
            for rp, resources in target.allocations.items():
                for rc in resources:
                    load_provider(rp).inventory(rc)
    usages: dict[str, dict[str, int]] = {}
    for rp, by_rc in deltas.items():
        provider = load_provider(rp)
        for rc, delta in by_rc.items():
            if delta == 0:
                continue
            used = provider.used(rc)
            if delta > 0:
                rules.check_capacity(rp, rc, provider.inventory(rc), used, used + delta)
            usages.setdefault(rp, {})[rc] = used + delta
    new_devices, holds = _assign_devices(load_provider, before, targets)
    for rp in sorted(set(usages) | set(holds)):
        names = sorted(
            t.consumer_uuid
            for t in targets
            if rp in t.allocations or rp in before.get(t.consumer_uuid, Holding()).allocations
        )
        load_provider(rp).record_allocations(names, usages.get(rp, {}), holds.get(rp, {}),
                                             request)
    return {
        t.consumer_uuid: Holding(_clean(t.allocations), new_devices.get(t.consumer_uuid, {}))
        for t in targets
    }


def check_unit_rules(
    load_provider: ProviderLoader, consumer_uuid: str, allocations: Allocations
) -> None:
    """Apply min/max/step to every record of ``allocations`` (and know each class)."""
    for rp, resources in allocations.items():
        provider = load_provider(rp)
        for rc, amount in resources.items():
            rules.check_units(consumer_uuid, rp, rc, provider.inventory(rc), amount)


def _add(deltas: dict[str, dict[str, int]], allocations: Allocations, sign: int) -> None:
    for rp, resources in allocations.items():
        by_rc = deltas.setdefault(rp, {})
        for rc, amount in resources.items():
            by_rc[rc] = by_rc.get(rc, 0) + sign * amount


def _clean(allocations: Allocations) -> Allocations:
    return {
        rp: dict(sorted(res.items()))
        for rp, res in sorted(allocations.items())
        if res
    }


DeviceKey = tuple[str, str, str]  # consumer, provider, class


def _assign_devices(
    load_provider: ProviderLoader,
    before: Mapping[str, Holding],
    targets: Sequence[Target],
) -> tuple[dict[str, Devices], dict[str, dict[str, dict[str, str | None]]]]:
    """New device holdings per consumer and the holder changes per provider and class."""
    holders: dict[tuple[str, str], dict[str, str | None]] = {}

    def table(rp: str, rc: str) -> dict[str, str | None]:
        if (rp, rc) not in holders:
            holders[(rp, rc)] = dict(load_provider(rp).devices.get(rc, {}))
        return holders[(rp, rc)]

    wanted: dict[DeviceKey, list[str]] = {}
    auto: dict[DeviceKey, int] = {}
    for target in targets:
        for rp, resources in target.allocations.items():
            provider = load_provider(rp)
            for rc, amount in resources.items():
                named = target.devices.get(rp, {}).get(rc)
                if provider.is_device_backed(rc) and named is not None:
                    wanted[(target.consumer_uuid, rp, rc)] = _check_named(
                        provider, rc, amount, named
                    )
    taken = {(rp, rc, d) for (_, rp, rc), ids in wanted.items() for d in ids}
    for target in targets:
        held = before.get(target.consumer_uuid, Holding()).devices
        for rp, resources in target.allocations.items():
            provider = load_provider(rp)
            for rc, amount in resources.items():
                key = (target.consumer_uuid, rp, rc)
                if not provider.is_device_backed(rc) or key in wanted:
                    continue
                mine = [
                    d for d in sorted(held.get(rp, {}).get(rc, [])) if (rp, rc, d) not in taken
                ]
                wanted[key] = mine[:amount]
                auto[key] = amount - len(wanted[key])
    # Release first: everything a target consumer held and does not keep.
    for target in targets:
        held = before.get(target.consumer_uuid, Holding()).devices
        for rp, by_rc in held.items():
            for rc, ids in by_rc.items():
                keep = set(wanted.get((target.consumer_uuid, rp, rc), []))
                devices = table(rp, rc)
                for device in ids:
                    if device not in keep and devices.get(device) == target.consumer_uuid:
                        devices[device] = None
    # Then take: named devices first, then the lowest free ones.
    for (consumer, rp, rc), ids in sorted(wanted.items(), key=lambda kv: (kv[0] in auto, kv[0])):
        devices = table(rp, rc)
        for device in ids:
            holder = devices.get(device)
            if holder not in (None, consumer):
                raise DevicesUnavailable(
                    rp, rc, len(ids), _free_count(devices),
                    f"device {device} is held by {holder}",
                )
            devices[device] = consumer
        need = auto.get((consumer, rp, rc), 0)
        if need:
            free = sorted(d for d, h in devices.items() if h is None)
            if len(free) < need:
                raise DevicesUnavailable(rp, rc, need, len(free))
            for device in free[:need]:
                devices[device] = consumer
            ids.extend(free[:need])
    new_devices: dict[str, Devices] = {}
    for (consumer, rp, rc), ids in sorted(wanted.items()):
        if ids:
            new_devices.setdefault(consumer, {}).setdefault(rp, {})[rc] = sorted(ids)
    changes: dict[str, dict[str, dict[str, str | None]]] = {}
    for (rp, rc), devices in holders.items():
        original = load_provider(rp).devices.get(rc, {})
        diff = {d: h for d, h in devices.items() if original.get(d) != h}
        if diff:
            changes.setdefault(rp, {})[rc] = diff
    return new_devices, changes


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


def _free_count(devices: Mapping[str, str | None]) -> int:
    return sum(1 for h in devices.values() if h is None)
