"""Clouds for the candidates tests, written as Placement's gabbi fixtures build them
(``placement/tests/functional/fixtures/gabbits.py``), and a way to ask them a query string.

Providers are named; their UUIDs are uuid5 of the name, and answers are read back by name so
a test reads like the gabbit it comes from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl
from uuid import NAMESPACE_URL, uuid5

from allocation_ledger.domain.candidates import search
from allocation_ledger.domain.candidates_request import (
    SHARING_TRAIT,
    Candidates,
    ProviderSnapshot,
)
from allocation_ledger.domain.values import Inventory, is_valid_resource_class
from allocation_ledger.http.candidates_query import parse

SHARES = SHARING_TRAIT


def uuid_of(name: str) -> str:
    """The UUID of a named provider or aggregate."""
    return str(uuid5(NAMESPACE_URL, f"candidates-test/{name}"))


@dataclass
class Cloud:
    """Providers being built, by name, in order."""

    providers: dict[str, ProviderSnapshot] = field(default_factory=dict)

    def add(self, name: str, *, parent: str | None = None, aggs: tuple[str, ...] = (),
            traits: tuple[str, ...] = (), used: dict[str, int] | None = None,
            **inventories: int | Inventory) -> Cloud:
        """A provider with ``inventories`` (a total, or an :class:`Inventory`)."""
        parent_uuid = uuid_of(parent) if parent else None
        root = self.providers[parent].root_uuid if parent else uuid_of(name)
        self.providers[name] = ProviderSnapshot(
            uuid=uuid_of(name), name=name, parent_uuid=parent_uuid, root_uuid=root,
            generation=0,
            inventories={rc: v if isinstance(v, Inventory) else Inventory(v)
                         for rc, v in inventories.items()},
            usages=dict(used or {}), traits=frozenset(traits),
            aggregates=frozenset(uuid_of(a) for a in aggs))
        return self

    def ask(self, query: str, version: tuple[int, int] = (1, 39),
            traits: set[str] | None = None) -> Answer:
        """The answer to ``GET /allocation_candidates?{query}`` (names for ``$NAME``)."""
        items = [(k, _names_to_uuids(v)) for k, v in parse_qsl(query, keep_blank_values=True)]
        request = parse(version, items)
        found = search(self.providers.values(), request, class_exists=is_valid_resource_class,
                       trait_exists=(lambda t: t in traits) if traits is not None
                       else (lambda t: True))
        return Answer(found, {p.uuid: name for name, p in self.providers.items()})


def _names_to_uuids(value: str) -> str:
    """``$name`` in a query value -> the UUID of that provider or aggregate."""
    return re.sub(r"\$([A-Za-z0-9_]+)", lambda m: uuid_of(m.group(1)), value)


@dataclass(frozen=True)
class Answer:
    """An answer read back by provider name."""

    found: Candidates
    names: dict[str, str]

    def __len__(self) -> int:
        return len(self.found.allocation_requests)

    @property
    def candidates(self) -> list[dict[str, dict[str, int]]]:
        """Each candidate's allocations: provider name -> class -> amount."""
        return [{self.names[rp]: res for rp, res in a.allocations.items()}
                for a in self.found.allocation_requests]

    @property
    def mappings(self) -> list[dict[str, list[str]]]:
        """Each candidate's mappings: suffix -> provider names."""
        return [{s: [self.names[rp] for rp in rps] for s, rps in a.mappings.items()}
                for a in self.found.allocation_requests]

    @property
    def summarised(self) -> list[str]:
        """The names of the summarised providers."""
        return [self.names[s.uuid] for s in self.found.provider_summaries]

    def amounts(self, provider: str, rc: str) -> list[int]:
        """The amounts of ``rc`` on ``provider`` over every candidate that has it, sorted
        (what a gabbit's ``$..allocations[P].resources[RC]`` lists)."""
        return sorted(c[provider][rc] for c in self.candidates
                      if provider in c and rc in c[provider])

    def summary(self, provider: str) -> Any:
        """The summary of a named provider."""
        return next(s for s in self.found.provider_summaries
                    if self.names[s.uuid] == provider)


def granular() -> Cloud:
    """``GranularFixture``: three compute nodes, two sharing disks, a sharing network."""
    c = Cloud()
    c.add("cn_left", aggs=("aggA",), VCPU=8, MEMORY_MB=4096, DISK_GB=500, VGPU=8,
          SRIOV_NET_VF=8, CUSTOM_NET_MBPS=4000,
          traits=("HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_GPU_API_DXVA", "HW_NIC_DCB_PFC",
                  "CUSTOM_FOO"))
    c.add("cn_middle", aggs=("aggA", "aggB"), VCPU=8, MEMORY_MB=4096, SRIOV_NET_VF=8,
          CUSTOM_NET_MBPS=4000,
          traits=("HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", "HW_NIC_ACCEL_TLS"))
    c.add("cn_right", aggs=("aggB", "aggC"), VCPU=8, MEMORY_MB=4096, DISK_GB=500,
          VGPU=Inventory(8, max_unit=2),
          traits=("HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD"))
    c.add("shr_disk_1", aggs=("aggA",), DISK_GB=1000, traits=(SHARES, "CUSTOM_DISK_SSD"))
    c.add("shr_disk_2", aggs=("aggA", "aggB"), DISK_GB=1000, traits=(SHARES,))
    c.add("shr_net", aggs=("aggC",), SRIOV_NET_VF=16, CUSTOM_NET_MBPS=40000, traits=(SHARES,))
    return c


def shared_storage() -> Cloud:
    """``SharedStorageFixture``: two compute nodes with NUMA children and PFs, two sharing
    storage providers, one aggregate."""
    c = Cloud()
    for cn in ("cn1", "cn2"):
        c.add(cn, aggs=("agg",), VCPU=Inventory(24, allocation_ratio=16.0),
              MEMORY_MB=Inventory(128 * 1024, allocation_ratio=1.5),
              **({"DISK_GB": Inventory(2000, reserved=100)} if cn == "cn2" else {}),
              traits=("HW_CPU_X86_SSE", "HW_CPU_X86_SSE2") if cn == "cn1" else ())
    for ss in ("ss", "ss2"):
        c.add(ss, aggs=("agg",), DISK_GB=Inventory(2000, reserved=100), traits=(SHARES,))
    for n in ("1", "2"):
        for i in ("1", "2"):
            c.add(f"numa{n}_{i}", parent=f"cn{n}")
            c.add(f"pf{n}_{i}", parent=f"numa{n}_{i}", SRIOV_NET_VF=8)
    return c


def numa_network() -> Cloud:
    """``NUMANetworkFixture``: cn1 without inventory over two NUMA nodes with devices and two
    network agents; cn2 with inventory over three NICs of PFs; ss1 sharing disk."""
    c = Cloud()
    c.add("ss1", aggs=("aggA",), DISK_GB=2000, traits=(SHARES,))
    c.add("cn1", aggs=("aggA",), traits=("COMPUTE_VOLUME_MULTI_ATTACH",))
    c.add("numa0", parent="cn1", traits=("HW_NUMA_ROOT",), used={"VCPU": 2}, VCPU=4,
          MEMORY_MB=Inventory(2048, min_unit=512, step_size=256))
    c.add("numa1", parent="cn1", traits=("HW_NUMA_ROOT", "CUSTOM_FOO"), VCPU=4,
          MEMORY_MB=Inventory(2048, min_unit=256, max_unit=1024))
    c.add("fpga0", parent="numa0", FPGA=1)
    c.add("pgpu0", parent="numa0", VGPU=8)
    c.add("fpga1_0", parent="numa1", FPGA=1)
    c.add("fpga1_1", parent="numa1", FPGA=1)
    c.add("sriov_agent", parent="cn1", traits=("CUSTOM_VNIC_TYPE_DIRECT",))
    c.add("esn1", parent="sriov_agent", traits=("CUSTOM_PHYSNET1",),
          NET_BW_EGR_KILOBIT_PER_SEC=10000)
    c.add("esn2", parent="sriov_agent", traits=("CUSTOM_PHYSNET2",),
          NET_BW_EGR_KILOBIT_PER_SEC=20000)
    c.add("ovs_agent", parent="cn1", traits=("CUSTOM_VNIC_TYPE_NORMAL",))
    c.add("br_int", parent="ovs_agent", traits=("CUSTOM_PHYSNET0",),
          NET_BW_EGR_KILOBIT_PER_SEC=1000)
    c.add("cn2", aggs=("aggA",), traits=("CUSTOM_FOO",), used={"VCPU": 3}, VCPU=8,
          MEMORY_MB=Inventory(2048, min_unit=1024, step_size=128), DISK_GB=1000)
    for i in (1, 2, 3):
        c.add(f"nic{i}", parent="cn2", traits=("CUSTOM_HW_NIC_ROOT",))
    for i in (1, 2):
        c.add(f"pf1_{i}", parent="nic1", traits=(f"CUSTOM_PHYSNET{i}",), CUSTOM_VF=4)
    for i in (0, 1, 2, 3):
        c.add(f"pf2_{i + 1}", parent="nic2", traits=(f"CUSTOM_PHYSNET{i % 2 + 1}",),
              CUSTOM_VF=2)
    c.add("pf3_1", parent="nic3", traits=("CUSTOM_PHYSNET1",), CUSTOM_VF=8)
    return c
