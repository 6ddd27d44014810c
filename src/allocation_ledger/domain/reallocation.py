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

from collections.abc import Mapping, Sequence

from allocation_ledger.domain import rules
from allocation_ledger.domain.devices import assign_devices
from allocation_ledger.domain.holdings import NOTHING, Holding, ProviderLoader, Target
from allocation_ledger.domain.values import Allocations, RequestMeta

__all__ = ["Holding", "Target", "check_unit_rules", "reallocate"]


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
        old = before.get(target.consumer_uuid, NOTHING)
        _add(deltas, old.allocations, -1)
        _add(deltas, target.allocations, +1)
        if target.check_units:
            check_unit_rules(load_provider, target.consumer_uuid, target.allocations)
        else:
            for rp, resources in target.allocations.items():
                for rc in resources:
                    load_provider(rp).inventory(rc)
    # Devices first: for a device-backed class, running out of devices is the clearer error.
    new_devices, holds = assign_devices(load_provider, before, targets)
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
    for rp in sorted(set(usages) | set(holds)):
        names = sorted(
            t.consumer_uuid
            for t in targets
            if rp in t.allocations or rp in before.get(t.consumer_uuid, NOTHING).allocations
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
