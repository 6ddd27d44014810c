"""Every rejected command leaves the store exactly as it was (guarantees §6), on every store.

Each row of the table is a command that must be refused with a given error and fields. It
runs against a small world of its own (fresh ids, see :class:`World`) in a store shared by
the module. Before and after, every stored event (``snapshot``) and every read of the world
must be identical, and the ledger must then still accept a valid command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from allocation_ledger import Ledger
from allocation_ledger.domain.errors import (
    ConsumerGenerationConflict,
    InsufficientCapacity,
    InvalidAllocation,
    InvalidInventory,
    InvalidRequest,
    InventoryInUse,
    LedgerError,
    ProviderExists,
    ProviderGenerationConflict,
    ProviderHasChildren,
    ProviderInUse,
    ProviderNotFound,
    ResourceClassNotOnProvider,
)
from tests.builders import PROJECT, USER, new_id, snapshot
from tests.invariants import assert_invariants
from tests.service import shared_ledger_fixture
from tests.service.claiming import write

shared_ledger = shared_ledger_fixture()


@dataclass(frozen=True)
class World:
    """The ids of one row's world; ``build`` gives them this state."""

    host: str = field(default_factory=new_id)  # VCPU 4, MEMORY_MB 256..1024 by 256, DISK_GB 0
    child: str = field(default_factory=new_id)  # child of host with VGPU 2
    over: str = field(default_factory=new_id)  # VCPU lowered to 2 under a usage of 4
    bare: str = field(default_factory=new_id)  # no inventory, one child
    bare_kid: str = field(default_factory=new_id)
    missing: str = field(default_factory=new_id)  # never registered
    late: str = field(default_factory=new_id)  # never registered either
    vm: str = field(default_factory=new_id)  # 2 VCPU + 512 MB on host, generation 2
    emptied: str = field(default_factory=new_id)  # claimed then released: reads as None
    hog: str = field(default_factory=new_id)  # 4 VCPU on over, generation 1
    newbie: str = field(default_factory=new_id)  # never written

    def build(self, ledger: Ledger) -> None:
        """Register the providers and write the consumers described above."""
        ledger.register_provider(self.host, f"host-{self.host}", inventories={
            "VCPU": {"total": 4},
            "MEMORY_MB": {"total": 2048, "min_unit": 256, "max_unit": 1024, "step_size": 256},
            "DISK_GB": {"total": 10, "reserved": 10},
        })
        ledger.register_provider(self.child, f"gpu-{self.child}", parent_uuid=self.host,
                                 inventories={"VGPU": {"total": 2}})
        ledger.register_provider(self.over, f"over-{self.over}", inventories={"VCPU": {"total": 4}})
        ledger.register_provider(self.bare, f"bare-{self.bare}")
        ledger.register_provider(self.bare_kid, f"kid-{self.bare_kid}", parent_uuid=self.bare)
        claim(ledger, self.vm, {self.host: {"VCPU": 1, "MEMORY_MB": 256}})
        claim(ledger, self.vm, {self.host: {"VCPU": 2, "MEMORY_MB": 512}}, 1)
        claim(ledger, self.emptied, {self.host: {"VCPU": 1}})
        ledger.release(self.emptied, 1)
        claim(ledger, self.hog, {self.over: {"VCPU": 4}})
        ledger.set_inventory(self.over, "VCPU", {"total": 2}, generation(ledger, self.over))

    def reads(self, ledger: Ledger) -> list[object]:
        """Everything the world's reads return."""
        providers = (self.host, self.child, self.over, self.bare, self.bare_kid)
        consumers = (self.vm, self.emptied, self.hog, self.newbie)
        return [*(ledger.provider(p) for p in providers), ledger.usages_in_tree(self.host),
                *(ledger.consumer(c) for c in consumers)]


Allocs = dict[str, dict[str, Any]]
Command = Callable[[Ledger, World], object]
Fields = Callable[[Ledger, World], dict[str, Any]]


def claim(ledger: Ledger, consumer: str, allocations: Allocs, generation: Any = None,
          **kwargs: Any) -> object:
    """A claim with the builders' project and user."""
    return ledger.claim(consumer, allocations, generation, project_id=PROJECT, user_id=USER,
                        **kwargs)


def generation(ledger: Ledger, provider: str) -> int:
    """A provider's current generation."""
    return ledger.provider(provider).generation


def row(command: Command, error: type[LedgerError], fields: Fields | None = None, *,
        says: str = "", id: str, xfail: str = "") -> Any:
    """One rejected command: the error it must raise, a subset of its fields (computed from
    the world before the command runs), and text its message must contain. ``xfail`` marks
    a known core bug (strict)."""
    marks = [pytest.mark.xfail(strict=True, reason=f"core bug: {xfail}")] if xfail else []
    return pytest.param(command, error, fields or (lambda led, w: {}), says, id=id,
                        marks=marks)


def capacity(requested: int, used: int, cap: int, rc: str = "VCPU") -> dict[str, Any]:
    """The numbers of an InsufficientCapacity."""
    return {"resource_class": rc, "requested": requested, "used": used, "capacity": cap,
            "free": max(cap - used, 0)}


def units(amount: int, reason: str) -> Fields:
    """The fields of an InvalidAllocation of MEMORY_MB on the host for the newbie."""
    return lambda led, w: {"consumer_uuid": w.newbie, "provider_uuid": w.host,
                           "resource_class": "MEMORY_MB", "amount": amount, "reason": reason}


def mem(amount: Any) -> Command:
    """The newbie claims ``amount`` MEMORY_MB on the host."""
    return lambda led, w: claim(led, w.newbie, {w.host: {"MEMORY_MB": amount}})


def vcpu(amount: Any) -> Command:
    """The newbie claims ``amount`` VCPU on the host."""
    return lambda led, w: claim(led, w.newbie, {w.host: {"VCPU": amount}})


def stale_host(led: Ledger, w: World) -> dict[str, Any]:
    """The conflict a stale host generation (1) causes."""
    return {"provider_uuid": w.host, "expected": 1, "actual": generation(led, w.host)}


def on(attribute: str, extra: dict[str, Any] | None = None, *,
       key: str = "provider_uuid") -> Fields:
    """Fields naming the world's ``attribute`` under ``key``, plus ``extra``."""
    return lambda led, w: {key: getattr(w, attribute), **(extra or {})}


CLAIMS = [
    row(vcpu(3), InsufficientCapacity, on("host", capacity(3, 2, 4)), id="over-capacity"),
    row(lambda led, w: claim(led, w.newbie, {w.host: {"DISK_GB": 1}}), InsufficientCapacity,
        on("host", capacity(1, 0, 0, "DISK_GB")), id="reserved-equals-total"),
    row(lambda led, w: claim(led, w.hog, {w.over: {"VCPU": 5}}, 1), InsufficientCapacity,
        on("over", capacity(1, 4, 2)), id="over-capacity-provider-grows"),
    row(lambda led, w: claim(led, w.newbie, {w.over: {"VCPU": 1}}), InsufficientCapacity,
        on("over", capacity(1, 4, 2)), id="over-capacity-provider-newcomer"),
    row(lambda led, w: claim(led, w.vm, {w.host: {"VCPU": 5, "MEMORY_MB": 512}}, 2),
        InsufficientCapacity, on("host", capacity(3, 2, 4)), id="replace-beyond-capacity"),
    row(lambda led, w: claim(led, w.newbie, {w.host: {"VCPU": 2}, w.child: {"VGPU": 3}}),
        InsufficientCapacity, on("child", capacity(3, 0, 2, "VGPU")),
        id="second-provider-full"),
    row(mem(128), InvalidAllocation, units(128, "below min_unit 256"), id="below-min-unit"),
    row(mem(1280), InvalidAllocation, units(1280, "above max_unit 1024"), id="above-max-unit"),
    row(mem(384), InvalidAllocation, units(384, "not a multiple of step_size 256"),
        id="off-step"),
    row(lambda led, w: claim(led, w.newbie, {w.child: {"VCPU": 1}}),
        ResourceClassNotOnProvider, on("child", {"resource_class": "VCPU"}),
        id="class-not-on-provider"),
    row(lambda led, w: claim(led, w.newbie, {w.host: {"VCPU": 1}, w.missing: {"VCPU": 1}}),
        ProviderNotFound, on("missing"), id="unknown-provider"),
    row(lambda led, w: claim(led, w.newbie, {w.host: {"GPU": 1}}), InvalidRequest,
        says="unknown resource class 'GPU'", id="unknown-class-name"),
    row(vcpu(0), InvalidRequest, says="greater than or equal to 1", id="amount-0"),
    row(vcpu(-1), InvalidRequest, says="greater than or equal to 1", id="amount-negative"),
    row(vcpu(1.5), InvalidRequest, says="integer", id="amount-float"),
    row(vcpu("1"), InvalidRequest, says="integer", id="amount-string"),
    row(vcpu(True), InvalidRequest, says="integer", id="amount-bool"),
    row(vcpu(2**31), InvalidRequest, says="2147483647", id="amount-above-max-int"),
    row(lambda led, w: claim(led, w.newbie[:-4], {w.host: {"VCPU": 1}}), InvalidRequest,
        says="consumer_uuid", id="malformed-consumer-uuid"),
    row(lambda led, w: claim(led, w.newbie, {"host-1": {"VCPU": 1}}), InvalidRequest,
        says="malformed UUID 'host-1'", id="malformed-provider-uuid"),
    row(lambda led, w: claim(led, w.newbie, {}), InvalidRequest, says="allocations",
        id="claim-of-nothing"),
    row(lambda led, w: claim(led, w.newbie, {w.host: {}}), InvalidRequest,
        id="empty-classes-new"),
    row(lambda led, w: claim(led, w.vm, {w.host: {}}, 2), InvalidRequest,
        id="empty-classes-present"),
    row(lambda led, w: claim(led, w.newbie, {w.host: {"VCPU": 1}}, consumer_type="MIGRATION"),
        InvalidRequest, on("newbie", key="consumer_uuid"), id="claim-as-migration"),
    row(lambda led, w: claim(led, w.newbie, {w.host: {"VCPU": 1}}, request={"who": "me"}),
        InvalidRequest, says="who", id="unknown-request-field"),
]


def gen_conflict(attribute: str, expected: int | None, actual: int | None) -> Fields:
    """The fields of a ConsumerGenerationConflict on the world's ``attribute``."""
    return on(attribute, {"expected": expected, "actual": actual}, key="consumer_uuid")


GENERATIONS = [
    row(lambda led, w: claim(led, w.vm, {w.host: {"VCPU": 1}}), ConsumerGenerationConflict,
        gen_conflict("vm", None, 2), id="none-for-present"),
    row(lambda led, w: claim(led, w.vm, {w.host: {"VCPU": 1}}, 1), ConsumerGenerationConflict,
        gen_conflict("vm", 1, 2), id="stale"),
    row(lambda led, w: claim(led, w.newbie, {w.host: {"VCPU": 1}}, 1),
        ConsumerGenerationConflict, gen_conflict("newbie", 1, None), id="number-for-absent"),
    row(lambda led, w: claim(led, w.emptied, {w.host: {"VCPU": 1}}, 2),
        ConsumerGenerationConflict, gen_conflict("emptied", 2, None), id="number-for-emptied"),
    row(lambda led, w: claim(led, w.vm, {w.host: {"VCPU": 1}}, True), InvalidRequest,
        says="expected_generation", id="bool-generation"),
    row(lambda led, w: led.release(w.vm, 1), ConsumerGenerationConflict,
        gen_conflict("vm", 1, 2), id="release-stale"),
    row(lambda led, w: led.release(w.vm, None), ConsumerGenerationConflict,
        gen_conflict("vm", None, 2), id="release-none-for-present"),
    row(lambda led, w: led.release(w.newbie, 1), ConsumerGenerationConflict,
        gen_conflict("newbie", 1, None), id="release-number-for-absent"),
    row(lambda led, w: claim(led, w.vm, {w.host: {"VCPU": 1}}, 0), ConsumerGenerationConflict,
        gen_conflict("vm", 0, 2), id="generation-0"),
    row(lambda led, w: claim(led, w.newbie, {w.host: {"VCPU": 1}}, 0),
        ConsumerGenerationConflict, gen_conflict("newbie", 0, None), id="generation-0-absent"),
    row(lambda led, w: led.release(w.vm, 0), ConsumerGenerationConflict,
        gen_conflict("vm", 0, 2), id="release-generation-0"),
    row(lambda led, w: claim(led, w.vm, {w.host: {"VCPU": 1}}, -1), InvalidRequest,
        says="expected_generation", id="negative-generation"),
    row(lambda led, w: led.force_release("nope"), InvalidRequest, says="nope",
        id="force-release-malformed"),
]

WRITES = [
    row(lambda led, w: led.write_allocations([]), InvalidRequest, id="write-nothing"),
    row(lambda led, w: led.write_allocations([write(w.newbie, {w.host: {"VCPU": 1}}, None),
                                              write(w.newbie, {w.host: {"VCPU": 1}}, None)]),
        InvalidRequest, on("newbie", key="consumer_uuid"), says="twice",
        id="write-same-consumer-twice"),
    row(lambda led, w: led.write_allocations([write(w.newbie, {w.host: {"VCPU": 1}}, None),
                                              write(w.vm, {w.host: {"VCPU": 1}}, 1)]),
        ConsumerGenerationConflict, gen_conflict("vm", 1, 2), id="write-one-stale"),
    row(lambda led, w: led.write_allocations([write(w.vm, {}, 2),
                                              write(w.newbie, {w.host: {"VCPU": 5}}, None)]),
        InsufficientCapacity, on("host", capacity(3, 2, 4)), id="write-frees-too-little"),
    row(lambda led, w: led.write_allocations([write(w.vm, {}, 2) | {"user_id": ""}]),
        InvalidRequest, says="user_id", id="write-bad-user"),
]


def set_vcpu(inventory: dict[str, Any]) -> Command:
    """Set the host's VCPU inventory at its current generation."""
    return lambda led, w: led.set_inventory(w.host, "VCPU", inventory, generation(led, w.host))


PROVIDER_COMMANDS = [
    row(lambda led, w: led.register_provider(w.host, "again"), ProviderExists, on("host"),
        id="register-existing"),
    row(lambda led, w: led.register_provider(w.late, "x", parent_uuid=w.missing),
        ProviderNotFound, on("missing"), id="register-under-unknown-parent"),
    row(lambda led, w: led.register_provider("host-2", "x"), InvalidRequest, says="host-2",
        id="register-malformed-uuid"),
    row(lambda led, w: led.register_provider(w.late, ""), InvalidRequest, says="name",
        id="register-empty-name"),
    row(lambda led, w: led.register_provider(w.late, "kid", parent_uuid=w.host,
                                             inventories={"VCPU": {"total": 0}}),
        InvalidInventory, on("late", {"resource_class": "VCPU"}),
        id="register-child-with-bad-inventory"),
    row(lambda led, w: led.register_provider(w.late, "x",
                                             inventories={"CUSTOM_": {"total": 1}}),
        InvalidRequest, says="CUSTOM_", id="register-bare-custom-prefix"),
    row(lambda led, w: led.set_inventories(w.host, {"VCPU": {"total": 8}}, 1),
        ProviderGenerationConflict, stale_host, id="set-inventories-stale"),
    row(lambda led, w: led.set_inventory(w.host, "VCPU", {"total": 8}, 1),
        ProviderGenerationConflict, stale_host, id="set-inventory-stale"),
    row(lambda led, w: led.set_inventories(w.host, {"VCPU": {"total": 8}}, 0),
        ProviderGenerationConflict,
        lambda led, w: {"provider_uuid": w.host, "expected": 0,
                        "actual": generation(led, w.host)}, id="set-inventories-generation-0"),
    row(lambda led, w: led.set_inventories(w.host, {"VCPU": {"total": 8}}, -1), InvalidRequest,
        says="expected_generation", id="set-inventories-generation-negative"),
    row(set_vcpu({"total": 0}), InvalidInventory, on("host", {"resource_class": "VCPU"}),
        id="set-inventory-total-0"),
    row(set_vcpu({"total": 4, "reserved": 5}), InvalidInventory,
        on("host", {"reason": "reserved 5 exceeds total 4"}), id="reserved-above-total"),
    row(set_vcpu({"total": 4, "allocation_ratio": 0.0}), InvalidInventory,
        on("host", {"resource_class": "VCPU"}), says="allocation_ratio", id="ratio-0"),
    row(set_vcpu({"total": 2**31}), InvalidInventory, on("host", {"resource_class": "VCPU"}),
        says="2147483647", id="total-above-max-int"),
    row(lambda led, w: led.set_inventory(w.host, "Vcpu", {"total": 4},
                                         generation(led, w.host)),
        InvalidRequest, says="Vcpu", id="set-inventory-unknown-class"),
    row(lambda led, w: led.delete_inventory(w.host, "VCPU", generation(led, w.host)),
        InventoryInUse, on("host", {"resource_class": "VCPU", "used": 2}),
        id="delete-inventory-in-use"),
    row(lambda led, w: led.set_inventories(
        w.host, {"VCPU": {"total": 4}, "DISK_GB": {"total": 1}}, generation(led, w.host)),
        InventoryInUse, on("host", {"resource_class": "MEMORY_MB", "used": 512}),
        id="set-inventories-drops-class-in-use"),
    row(lambda led, w: led.delete_provider(w.host, generation(led, w.host)), ProviderInUse,
        on("host"), says="allocations", id="delete-provider-with-allocations"),
    row(lambda led, w: led.delete_provider(w.bare, generation(led, w.bare)),
        ProviderHasChildren,
        lambda led, w: {"provider_uuid": w.bare, "reason": f"it has children {w.bare_kid}",
                        "children": [w.bare_kid]},
        id="delete-provider-with-children"),
    row(lambda led, w: led.delete_provider(w.child, 9), ProviderGenerationConflict,
        on("child", {"expected": 9, "actual": 1}), id="delete-provider-stale"),
    row(lambda led, w: led.delete_provider(w.missing, 1), ProviderNotFound, on("missing"),
        id="delete-unknown-provider"),
    row(lambda led, w: led.set_inventories(w.missing, {"VCPU": {"total": 1}}, 1),
        ProviderNotFound, on("missing"), id="set-inventories-unknown-provider"),
]


def assert_readable(err: LedgerError) -> None:
    """The message is the error's text and names what the fields name."""
    message = str(err)
    assert message == err.message
    assert len(message) > 20
    assert err.to_dict() == {"error": type(err).__name__, "message": message, **err.fields}
    for key, value in err.fields.items():
        if key.endswith("_uuid") or key in ("resource_class", "reason"):
            assert str(value) in message, f"{key}={value!r} missing from {message!r}"
        if key in ("requested", "used", "capacity", "free", "amount", "expected", "actual"):
            assert str(value) in message, f"{key}={value!r} missing from {message!r}"
        if key == "problems":
            assert value
            assert all(problem in message for problem in value)


@pytest.mark.parametrize(("command", "error", "fields", "says"),
                         CLAIMS + GENERATIONS + WRITES + PROVIDER_COMMANDS)
def test_a_rejected_command_changes_nothing(
    shared_ledger: Ledger, command: Command, error: type[LedgerError], fields: Fields,
    says: str,
) -> None:
    """Refused with the right error and fields; the store and every read are unchanged."""
    ledger, world = shared_ledger, World()
    world.build(ledger)
    expected_fields = fields(ledger, world)
    events, views = snapshot(ledger), world.reads(ledger)

    with pytest.raises(LedgerError) as caught:
        command(ledger, world)

    err = caught.value
    assert type(err) is error, f"{type(err).__name__}: {err}"
    assert {k: err.fields.get(k) for k in expected_fields} == expected_fields
    assert says in str(err)
    assert_readable(err)
    assert snapshot(ledger) == events
    assert world.reads(ledger) == views
    # Nothing half-done lingers (in a cache, say): the ledger still takes a valid claim.
    claim(ledger, world.newbie, {world.host: {"VCPU": 1}})
    assert ledger.consumer(world.newbie).generation == 1
    assert ledger.provider(world.host).usages["VCPU"] == 3


def test_the_worlds_hold_the_invariants(shared_ledger: Ledger) -> None:
    """After every row above (the store is shared), usage still equals allocations."""
    World().build(shared_ledger)
    assert_invariants(shared_ledger)
