"""Nested trees and sharing providers: Placement's ``allocation-candidates.yaml``
(``SharedStorageFixture``) and ``granular-same-subtree.yaml`` (``NUMANetworkFixture``)
gabbits, transcribed with the counts and amounts Placement answers."""

from __future__ import annotations

import pytest

from tests.unit.candidates_clouds import numa_network, shared_storage

# name, version, query, candidates, summaries (None: not checked), {(provider, class): amounts}
SHARED = [
    ("no allocations yet, before 1.29: one provider per tree", (1, 10),
     "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100", 5, 4,
     {("cn1", "VCPU"): [1, 1], ("cn2", "VCPU"): [1, 1, 1], ("cn2", "DISK_GB"): [100],
      ("ss", "DISK_GB"): [100, 100], ("ss2", "DISK_GB"): [100, 100]}),
    ("required trait", (1, 17),
     "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&required=HW_CPU_X86_SSE", 2, 3, {}),
    ("forbidden trait", (1, 22),
     "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&required=!HW_CPU_X86_SSE", 3, None,
     {("cn2", "VCPU"): [1, 1, 1], ("cn2", "DISK_GB"): [100], ("ss", "DISK_GB"): [100]}),
    ("multiple required traits", (1, 17),
     "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&required=HW_CPU_X86_SSE,HW_CPU_X86_SSE2",
     2, 3, {}),
    ("required trait and no matching", (1, 17),
     "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:100&required=HW_CPU_X86_SSE3", 0, 0, {}),
    ("only nested provider old microversion", (1, 28), "resources=SRIOV_NET_VF:4", 4, 4, {}),
    ("only nested provider new microversion", (1, 29), "resources=SRIOV_NET_VF:4", 4, 10, {}),
    ("root and nested old microversion", (1, 28), "resources=VCPU:1,SRIOV_NET_VF:4", 0, 0, {}),
    ("root and nested new microversion", (1, 29), "resources=VCPU:1,SRIOV_NET_VF:4", 4, 10,
     {("cn1", "VCPU"): [1, 1], ("pf1_1", "SRIOV_NET_VF"): [4], ("cn2", "VCPU"): [1, 1]}),
    ("nested limit", (1, 29), "resources=VCPU:1,SRIOV_NET_VF:4&limit=1", 1, 5, {}),
    ("shared and nested old microversion", (1, 28), "resources=DISK_GB:10,SRIOV_NET_VF:4",
     8, 6, {}),
    ("in tree with root", (1, 31), "resources=VCPU:1,SRIOV_NET_VF:4&in_tree=$cn1", 2, 5,
     {("cn1", "VCPU"): [1, 1], ("pf1_2", "SRIOV_NET_VF"): [4]}),
    ("in tree with child", (1, 31), "resources=VCPU:1,SRIOV_NET_VF:4&in_tree=$pf1_2", 2, 5,
     {("cn1", "VCPU"): [1, 1], ("pf1_1", "SRIOV_NET_VF"): [4]}),
    ("in tree with shared 1", (1, 31), "resources=VCPU:1,DISK_GB:10&in_tree=$cn1", 0, 0, {}),
    ("in tree with shared 2", (1, 31), "resources=VCPU:1,DISK_GB:10&in_tree=$cn2", 1, None,
     {("cn2", "DISK_GB"): [10]}),
    ("in tree with shared 3", (1, 31), "resources=VCPU:1,DISK_GB:10&in_tree=$ss", 0, 0, {}),
    ("in_tree root granular root resource", (1, 31), "resources1=VCPU:1&in_tree1=$cn1", 1,
     None, {("cn1", "VCPU"): [1]}),
    ("in_tree child granular root resource", (1, 31), "resources1=VCPU:1&in_tree1=$pf1_1",
     1, None, {("cn1", "VCPU"): [1]}),
    ("in_tree child granular child resource", (1, 31),
     "resources1=SRIOV_NET_VF:4&in_tree1=$pf1_1", 2, None,
     {("pf1_1", "SRIOV_NET_VF"): [4], ("pf1_2", "SRIOV_NET_VF"): [4]}),
    ("in tree granular local storage nonexistent", (1, 31),
     "resources=VCPU:1&resources1=DISK_GB:10&in_tree1=$cn1", 0, 0, {}),
    ("in tree granular local storage exists", (1, 31),
     "resources=VCPU:1&resources1=DISK_GB:10&in_tree1=$cn2", 1, None,
     {("cn2", "VCPU"): [1], ("cn2", "DISK_GB"): [10]}),
    ("in tree granular shared storage", (1, 31),
     "resources=VCPU:1&resources1=DISK_GB:10&in_tree1=$ss", 2, None,
     {("cn1", "VCPU"): [1], ("cn2", "VCPU"): [1], ("ss", "DISK_GB"): [10, 10]}),
    ("in tree unnumbered compute granular disk from shared storage only", (1, 31),
     "resources=VCPU:1&in_tree=$cn1&resources1=DISK_GB:10", 2, None,
     {("cn1", "VCPU"): [1, 1], ("ss", "DISK_GB"): [10], ("ss2", "DISK_GB"): [10]}),
    ("in tree unnumbered compute granular disk from shared or local", (1, 31),
     "resources=VCPU:1&in_tree=$cn2&resources1=DISK_GB:10", 3, None,
     {("cn2", "VCPU"): [1, 1, 1], ("cn2", "DISK_GB"): [10], ("ss", "DISK_GB"): [10]}),
    ("in tree granular compute and granular shared storage", (1, 31),
     "resources1=VCPU:1&in_tree1=$cn1&resources2=DISK_GB:10&in_tree2=$ss&group_policy=none",
     1, None, {("cn1", "VCPU"): [1], ("ss", "DISK_GB"): [10]}),
]

SUBTREE = [
    ("no resourceless without same subtree",
     "resources_COMPUTE=VCPU:1&resources_ACCEL=FPGA:1&group_policy=none", 6,
     {("numa0", "VCPU"): [1, 1, 1], ("numa1", "VCPU"): [1, 1, 1], ("fpga0", "FPGA"): [1, 1]}),
    ("no resourceless with single same subtree",
     "resources_COMPUTE=VCPU:1&resources_ACCEL=FPGA:1&same_subtree=_COMPUTE"
     "&group_policy=none", 6, {("fpga1_1", "FPGA"): [1, 1]}),
    ("no resourceless with same subtree",
     "resources_COMPUTE=VCPU:1&resources_ACCEL=FPGA:1&same_subtree=_COMPUTE,_ACCEL"
     "&group_policy=none", 3,
     {("numa0", "VCPU"): [1], ("numa1", "VCPU"): [1, 1], ("fpga0", "FPGA"): [1]}),
    ("no resourceless with same subtree same provider",
     "resources_COMPUTE1=VCPU:1&resources_COMPUTE2=MEMORY_MB:1024"
     "&same_subtree=_COMPUTE1,_COMPUTE2&group_policy=none", 3,
     {("numa0", "MEMORY_MB"): [1024], ("cn2", "VCPU"): [1]}),
    ("no resourceless with same subtree same provider isolate",
     "resources_COMPUTE1=VCPU:1&resources_COMPUTE2=MEMORY_MB:1024"
     "&same_subtree=_COMPUTE1,_COMPUTE2&group_policy=isolate", 0, {}),
    ("resourceful without same subtree",
     "resources=VCPU:1&resources_PORT1=CUSTOM_VF:4&required_PORT1=CUSTOM_PHYSNET1"
     "&resources_PORT2=CUSTOM_VF:4&required_PORT2=CUSTOM_PHYSNET2&group_policy=none", 2,
     {("cn2", "VCPU"): [1, 1], ("pf1_2", "CUSTOM_VF"): [4, 4], ("pf3_1", "CUSTOM_VF"): [4]}),
    ("resourceless with same subtree 4VFs",
     "resources=VCPU:1&required_NIC=CUSTOM_HW_NIC_ROOT&resources_PORT1=CUSTOM_VF:4"
     "&required_PORT1=CUSTOM_PHYSNET1&resources_PORT2=CUSTOM_VF:4"
     "&required_PORT2=CUSTOM_PHYSNET2&same_subtree=_NIC,_PORT1,_PORT2&group_policy=none", 1,
     {("pf1_1", "CUSTOM_VF"): [4], ("pf1_2", "CUSTOM_VF"): [4]}),
    ("resourceless with same subtree 2VFs",
     "resources=VCPU:1&required_NIC=CUSTOM_HW_NIC_ROOT&resources_PORT1=CUSTOM_VF:2"
     "&required_PORT1=CUSTOM_PHYSNET1&resources_PORT2=CUSTOM_VF:2"
     "&required_PORT2=CUSTOM_PHYSNET2&same_subtree=_NIC,_PORT1,_PORT2&group_policy=none", 5,
     {("pf2_1", "CUSTOM_VF"): [2, 2], ("pf2_4", "CUSTOM_VF"): [2, 2]}),
    ("resourceless with same subtree 2VFs isolate",
     "resources=VCPU:1&required_NIC=CUSTOM_HW_NIC_ROOT&resources_PORT1=CUSTOM_VF:2"
     "&required_PORT1=CUSTOM_PHYSNET1&resources_PORT2=CUSTOM_VF:2"
     "&required_PORT2=CUSTOM_PHYSNET2&same_subtree=_NIC,_PORT1,_PORT2&group_policy=isolate", 5,
     {("cn2", "VCPU"): [1] * 5}),
    ("resourceless with same subtree 2+1+1 VFs",
     "resources=VCPU:1&required_NIC=CUSTOM_HW_NIC_ROOT&resources_PORT1=CUSTOM_VF:2"
     "&required_PORT1=CUSTOM_PHYSNET1&resources_PORT2A=CUSTOM_VF:1"
     "&required_PORT2A=CUSTOM_PHYSNET2&resources_PORT2B=CUSTOM_VF:1"
     "&required_PORT2B=CUSTOM_PHYSNET2&same_subtree=_NIC,_PORT1,_PORT2A,_PORT2B"
     "&group_policy=none", 9,
     {("pf2_1", "CUSTOM_VF"): [2, 2, 2, 2], ("pf2_2", "CUSTOM_VF"): [1, 1, 1, 1, 2, 2]}),
    ("resourceless with same subtree 2+1+1 VFs isolate",
     "resources=VCPU:1&required_NIC=CUSTOM_HW_NIC_ROOT&resources_PORT1=CUSTOM_VF:2"
     "&required_PORT1=CUSTOM_PHYSNET1&resources_PORT2A=CUSTOM_VF:1"
     "&required_PORT2A=CUSTOM_PHYSNET2&resources_PORT2B=CUSTOM_VF:1"
     "&required_PORT2B=CUSTOM_PHYSNET2&same_subtree=_NIC,_PORT1,_PORT2A,_PORT2B"
     "&group_policy=isolate", 4,
     {("pf2_1", "CUSTOM_VF"): [2, 2], ("pf2_2", "CUSTOM_VF"): [1, 1, 1, 1]}),
    ("resourceless with same subtree same provider",
     "resources_PORT1=CUSTOM_VF:8&required_PORT2=CUSTOM_PHYSNET1&same_subtree=_PORT1,_PORT2"
     "&group_policy=none", 1, {("pf3_1", "CUSTOM_VF"): [8]}),
    ("resourceless with same subtree same provider isolate",
     "resources_PORT1=CUSTOM_VF:8&required_PORT2=CUSTOM_PHYSNET1&same_subtree=_PORT1,_PORT2"
     "&group_policy=isolate", 0, {}),
    ("multiple resourceless with same subtree same provider",
     "resources_COMPUTE1=VCPU:1&required_COMPUTE2=CUSTOM_FOO&required_COMPUTE3=HW_NUMA_ROOT"
     "&same_subtree=_COMPUTE1,_COMPUTE2,_COMPUTE3&group_policy=none", 1,
     {("numa1", "VCPU"): [1]}),
]


@pytest.mark.parametrize(("version", "query", "candidates", "summaries", "amounts"),
                         [c[1:] for c in SHARED], ids=[c[0] for c in SHARED])
def test_shared_storage_gabbit(version: tuple[int, int], query: str, candidates: int,
                               summaries: int | None,
                               amounts: dict[tuple[str, str], list[int]]) -> None:
    answer = shared_storage().ask(query, version)
    assert len(answer) == candidates
    if summaries is not None:
        assert len(answer.summarised) == summaries
    for (provider, rc), expected in amounts.items():
        assert answer.amounts(provider, rc) == expected, (provider, rc)


@pytest.mark.parametrize(("query", "candidates", "amounts"), [c[1:] for c in SUBTREE],
                         ids=[c[0] for c in SUBTREE])
def test_same_subtree_gabbit(query: str, candidates: int,
                             amounts: dict[tuple[str, str], list[int]]) -> None:
    answer = numa_network().ask(query, (1, 36))
    assert len(answer) == candidates
    for (provider, rc), expected in amounts.items():
        assert answer.amounts(provider, rc) == expected, (provider, rc)


def test_resourceless_groups_map_to_their_provider() -> None:
    answer = numa_network().ask(
        "resources=VCPU:1&required_NIC=CUSTOM_HW_NIC_ROOT&resources_PORT1=CUSTOM_VF:4"
        "&required_PORT1=CUSTOM_PHYSNET1&resources_PORT2=CUSTOM_VF:4"
        "&required_PORT2=CUSTOM_PHYSNET2&same_subtree=_NIC,_PORT1,_PORT2&group_policy=none",
        (1, 36))
    assert answer.mappings == [{"": ["cn2"], "_NIC": ["nic1"], "_PORT1": ["pf1_1"],
                                "_PORT2": ["pf1_2"]}]
    assert answer.candidates == [{"cn2": {"VCPU": 1}, "pf1_1": {"CUSTOM_VF": 4},
                                  "pf1_2": {"CUSTOM_VF": 4}}]


def test_summaries_at_1_29_cover_whole_trees_with_parents_and_roots() -> None:
    answer = shared_storage().ask("resources=VCPU:1,SRIOV_NET_VF:4&in_tree=$cn1", (1, 31))
    assert answer.summarised[0] == "cn1"  # each tree's root first
    assert sorted(answer.summarised) == ["cn1", "numa1_1", "numa1_2", "pf1_1", "pf1_2"]
    pf = answer.summary("pf1_1")
    assert (answer.names[pf.parent_uuid], answer.names[pf.root_uuid]) == ("numa1_1", "cn1")
    assert answer.summary("cn1").resources["VCPU"].capacity == 384  # 24 * 16.0
