"""Frozen values and the plain shapes events carry.

Events store only JSON-native data (str, int, float, lists, dicts) so that the ledger's
history stays readable by any tool and never depends on a Python class to decode.
"""

from __future__ import annotations

import copy
import re
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar, Self

MAX_INT = 2147483647
RESOURCE_CLASS_PATTERN = re.compile(r"[A-Z0-9_]+")
STANDARD_RESOURCE_CLASSES = frozenset(
    {
        "VCPU", "MEMORY_MB", "DISK_GB", "PCI_DEVICE", "SRIOV_NET_VF", "NUMA_SOCKET",
        "NUMA_CORE", "NUMA_THREAD", "NUMA_MEMORY_MB", "IPV4_ADDRESS", "VGPU",
        "VGPU_DISPLAY_HEAD", "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC",
        "PCPU", "MEM_ENCRYPTION_CONTEXT", "FPGA", "PGPU", "NET_PACKET_RATE_KILOPACKET_PER_SEC",
        "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC", "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC",
    }
)

#: provider uuid -> resource class -> amount
Allocations = dict[str, dict[str, int]]
#: provider uuid -> resource class -> sorted device ids
Devices = dict[str, dict[str, list[str]]]
#: actor, request_id, reason: who asked for a change and why
RequestMeta = dict[str, str]


@dataclass(frozen=True)
class Inventory:
    """One resource class's inventory on one provider, with Placement's defaults."""

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = MAX_INT
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def capacity(self) -> int:
        """``(total - reserved) * allocation_ratio``, floored, as Placement computes it."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    def to_dict(self) -> dict[str, Any]:
        """The inventory as the plain dict events carry."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Inventory:
        """The inventory an event's plain dict describes."""
        if tuple(data) == _INVENTORY_FIELDS:  # every field, in order (as events hold them):
            inventory = object.__new__(cls)  # what __init__ would make, without its calls
            object.__setattr__(inventory, "__dict__", data.copy())
            return inventory
        return cls(**data)


#: The fields of an :class:`Inventory`, in order.
_INVENTORY_FIELDS = tuple(f.name for f in fields(Inventory))


def is_valid_resource_class(name: str) -> bool:
    """True for a standard class or a ``CUSTOM_*`` one, as Placement allows."""
    if not isinstance(name, str) or not RESOURCE_CLASS_PATTERN.fullmatch(name):
        return False
    return name in STANDARD_RESOURCE_CLASSES or (
        name.startswith("CUSTOM_") and len(name) > len("CUSTOM_")
    )


def copy_allocations(allocations: Allocations) -> Allocations:
    """A deep copy, so aggregates never share mutable state with callers."""
    return {rp: dict(resources) for rp, resources in allocations.items()}


def copy_devices(devices: Devices) -> Devices:
    """A deep copy of a device mapping."""
    return {rp: {rc: list(ids) for rc, ids in by_rc.items()} for rp, by_rc in devices.items()}


def provider_uuids(allocations: Allocations) -> list[str]:
    """The providers an allocation touches, sorted."""
    return sorted(rp for rp, resources in allocations.items() if resources)


def merge_allocations(a: Allocations, b: Allocations) -> Allocations:
    """Two allocations added together (used by evacuation: source plus destination)."""
    merged = copy_allocations(a)
    for rp, resources in b.items():
        into = merged.setdefault(rp, {})
        for rc, amount in resources.items():
            into[rc] = into.get(rc, 0) + amount
    return merged


def subtract_allocations(a: Allocations, b: Allocations) -> Allocations:
    """``a`` without ``b`` (used by evacuation's source cleanup); empty entries dropped."""
    result: Allocations = {}
    for rp, resources in a.items():
        for rc, amount in resources.items():
            left = amount - b.get(rp, {}).get(rc, 0)
            if left > 0:
                result.setdefault(rp, {})[rc] = left
    return result



def plain_copy(value: Any) -> Any:
    """A deep copy of plain data: dicts and lists are copied, everything else (str, int,
    float, None, UUID, datetime, frozen events) is immutable and shared."""
    if type(value) is dict:
        return {k: plain_copy(v) for k, v in value.items()}
    if type(value) is list:
        return [plain_copy(v) for v in value]
    return value


class PlainState:
    """Mixin for aggregates whose state is plain data: ``copy.deepcopy`` copies it directly,
    several times faster than the generic walk, and :meth:`working_copy` gives the copy a
    command decides on."""

    #: True when every event of the class gives the aggregate new containers (dicts, lists)
    #: rather than changing its own in place: a working copy may then share them
    shares_containers: ClassVar[bool] = False

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        clone = object.__new__(type(self))
        clone.__dict__.update({k: plain_copy(v) for k, v in self.__dict__.items()})
        return clone

    def working_copy(self) -> Self:
        """A copy to decide on and change through events, leaving this aggregate as it is:
        its own attributes and list of pending events, sharing the containers of this one
        when the class's events replace containers (``shares_containers``, a copy of a few
        attributes however large its state), else a deep copy."""
        if not self.shares_containers:
            return copy.deepcopy(self)
        clone = object.__new__(type(self))
        state = self.__dict__.copy()
        pending = state.get("_pending_events")
        if pending is not None:
            state["_pending_events"] = list(pending)
        clone.__dict__.update(state)
        return clone
