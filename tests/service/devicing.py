"""Helpers for the device tests (``test_devices``, ``test_devices_moves``): hosts backed by
device ids, instances that claim them, and the check of exactly which device each consumer
holds. Every helper checks the docs/guarantees.md §5 invariants after it writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from allocation_ledger import Ledger
from allocation_ledger.application.views import ConsumerView
from tests.builders import a_host, an_instance
from tests.invariants import assert_invariants

PMEM = "CUSTOM_PMEM_NAMESPACE_4GB"
NAMESPACES = ("ns-0", "ns-1", "ns-2", "ns-3")
PCI = "PCI_DEVICE"


def device_host(ledger: Ledger, rc: str, ids: Sequence[str], *, parent: str | None = None,
                name: str | None = None) -> str:
    """A host (or, with ``parent``, a child such as a physical GPU with no other inventory)
    whose ``rc`` is backed by the devices ``ids``."""
    if parent is None:
        provider = a_host(ledger, name=name)
    else:
        provider = a_host(ledger, None, None, parent=parent, name=name)
    ledger.set_devices(provider, rc, list(ids), ledger.provider(provider).generation)
    assert_invariants(ledger)
    return provider


def spawn(ledger: Ledger, allocations: Mapping[str, Mapping[str, int]],
          devices: Mapping[str, Mapping[str, Sequence[str]]] | None = None) -> ConsumerView:
    """A new instance claims ``allocations`` (naming ``devices`` if given)."""
    vm = an_instance(ledger, {rp: dict(r) for rp, r in allocations.items()}, devices=devices)
    assert_invariants(ledger)
    return vm


def assert_holders(ledger: Ledger, provider: str, rc: str,
                   expected: Mapping[str, Sequence[str]], *, free_is_devices: bool = False
                   ) -> None:
    """The invariants hold; the provider says each consumer of ``expected`` holds exactly those
    ids of ``rc`` and every other device is free; and each consumer's own view agrees.

    With ``free_is_devices`` also the class's free capacity equals its free devices (only
    true with no reserved and ratio 1, as in ``test_devices``)."""
    assert_invariants(ledger)
    view = ledger.provider(provider)
    table = view.devices.get(rc, {})
    want = {d: consumer for consumer, ids in expected.items() for d in ids}
    assert table == {d: want.get(d) for d in sorted(set(table) | set(want))}
    for consumer, ids in expected.items():
        assert ledger.consumer(consumer).devices.get(provider, {}).get(rc, []) == sorted(ids)
    if free_is_devices and table:
        assert view.classes[rc].free == sum(1 for h in table.values() if h is None)
