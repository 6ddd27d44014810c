"""Placement's ``allocation-candidates-root-required.yaml`` gabbits (1.35,
``NUMANetworkFixture``), transcribed: ``root_required`` picks the roots a candidate may be
anchored at, by the root's own traits only."""

from __future__ import annotations

import pytest

from allocation_ledger.domain.candidates_request import NoSuchTraits
from tests.unit.candidates_clouds import numa_network

# name, query, candidates, {(provider, class): amounts}
CASES = [
    ("required trait only on children", "resources=VCPU:1&root_required=HW_NUMA_ROOT", 0, {}),
    ("required trait on a sharing root",
     "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&root_required=MISC_SHARES_VIA_AGGREGATE",
     0, {}),
    ("required trait not on any provider",
     "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&root_required=HW_CPU_X86_AVX2", 0, {}),
    ("multiattach-capable unsuffixed no sharing",
     "resources=VCPU:1,MEMORY_MB:1024&root_required=COMPUTE_VOLUME_MULTI_ATTACH", 4,
     {("numa0", "VCPU"): [1, 1], ("numa1", "MEMORY_MB"): [1024, 1024]}),
    ("multiattach-capable separate granular no isolate",
     "resources1=VCPU:1&resources2=MEMORY_MB:1024&group_policy=none"
     "&root_required=COMPUTE_VOLUME_MULTI_ATTACH", 4, {}),
    ("multiattach-capable separate granular isolate",
     "resources1=VCPU:1&resources2=MEMORY_MB:1024&group_policy=isolate"
     "&root_required=COMPUTE_VOLUME_MULTI_ATTACH", 2,
     {("numa0", "VCPU"): [1], ("numa1", "MEMORY_MB"): [1024]}),
    ("multiattach-capable unsuffixed sharing",
     "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&root_required=COMPUTE_VOLUME_MULTI_ATTACH",
     4, {}),
    ("multiattach-capable granular sharing",
     "resources1=VCPU:1,MEMORY_MB:1024&resources2=DISK_GB:100&&group_policy=none"
     "&root_required=COMPUTE_VOLUME_MULTI_ATTACH", 2,
     {("numa0", "VCPU"): [1], ("numa1", "MEMORY_MB"): [1024]}),
    ("trait on root and child, unsuffixed required",
     "resources=VCPU:1,DISK_GB:100&required=CUSTOM_FOO", 3,
     {("numa1", "VCPU"): [1], ("cn2", "VCPU"): [1, 1], ("ss1", "DISK_GB"): [100, 100]}),
    ("trait on root and child, unsuffixed root_required",
     "resources=VCPU:1,DISK_GB:100&root_required=CUSTOM_FOO", 2,
     {("cn2", "VCPU"): [1, 1], ("ss1", "DISK_GB"): [100]}),
    ("trait on root and child, suffixed required",
     "resources1=VCPU:1&required1=CUSTOM_FOO&resources2=DISK_GB:100&group_policy=none", 3,
     {("numa1", "VCPU"): [1], ("cn2", "DISK_GB"): [100]}),
    ("trait on root and child, suffixed root_required",
     "resources1=VCPU:1&resources2=DISK_GB:100&group_policy=none&root_required=CUSTOM_FOO", 2,
     {("cn2", "VCPU"): [1, 1]}),
    ("forbidden trait only on children", "resources=VCPU:3&root_required=!HW_NUMA_ROOT", 2,
     {("numa1", "VCPU"): [3], ("cn2", "VCPU"): [3]}),
    ("forbidden trait on a sharing root",
     "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&root_required=!MISC_SHARES_VIA_AGGREGATE",
     6, {("ss1", "DISK_GB"): [100] * 5}),
    ("required with irrelevant forbidden",
     "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&root_required=CUSTOM_FOO,!HW_NUMA_ROOT", 2,
     {("cn2", "MEMORY_MB"): [1024, 1024], ("ss1", "DISK_GB"): [100]}),
    ("forbiddens cancel each other",
     "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100"
     "&root_required=!CUSTOM_FOO,!COMPUTE_VOLUME_MULTI_ATTACH", 0, {}),
    ("isolate foo granular sharing",
     "resources1=VCPU:1,MEMORY_MB:1024&resources2=DISK_GB:100&&group_policy=none"
     "&root_required=!CUSTOM_FOO", 2, {("ss1", "DISK_GB"): [100, 100]}),
    ("unsuffixed required and root_required same trait",
     "resources=VCPU:1&required=CUSTOM_FOO&root_required=CUSTOM_FOO", 1,
     {("cn2", "VCPU"): [1]}),
    ("required positive and root_required negative same trait",
     "resources1=VCPU:1&required1=CUSTOM_FOO&root_required=!CUSTOM_FOO", 1,
     {("numa1", "VCPU"): [1]}),
    ("required negative and root_required positive same trait",
     "resources1=VCPU:1&required1=!CUSTOM_FOO&root_required=CUSTOM_FOO", 0, {}),
]


@pytest.mark.parametrize(("query", "candidates", "amounts"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_root_required_gabbit(query: str, candidates: int,
                              amounts: dict[tuple[str, str], list[int]]) -> None:
    answer = numa_network().ask(query, (1, 35))
    assert len(answer) == candidates
    for (provider, rc), expected in amounts.items():
        assert answer.amounts(provider, rc) == expected, (provider, rc)


@pytest.mark.parametrize("root_required", ["CUSTOM_NO_EXIST,HW_CPU_X86_SSE,!HW_CPU_X86_AVX",
                                           "!CUSTOM_NO_EXIST,HW_CPU_X86_SSE,!HW_CPU_X86_AVX"])
def test_unknown_root_trait_is_refused(root_required: str) -> None:
    known = {"HW_CPU_X86_SSE", "HW_CPU_X86_AVX"}
    with pytest.raises(NoSuchTraits, match=r"No such trait\(s\): CUSTOM_NO_EXIST\."):
        numa_network().ask(f"resources=VCPU:1&root_required={root_required}", (1, 35),
                           traits=known)
