"""Placement's ``granular.yaml`` gabbits (microversion 1.25, ``GranularFixture``), transcribed:
the query, how many candidates and summaries Placement answers, and the amounts it lists
for a provider and class over all candidates (``$..allocations[P].resources[RC]``)."""

from __future__ import annotations

import pytest

from tests.unit.candidates_clouds import granular

V = (1, 25)

# name, query, candidates, summaries, {(provider, class): sorted amounts}
CASES = [
    ("different groups hit with group_policy=none",
     "resources1=VCPU:1&resources2=MEMORY_MB:1024&group_policy=none", 3, 3,
     {("cn_left", "VCPU"): [1], ("cn_left", "MEMORY_MB"): [1024],
      ("cn_middle", "VCPU"): [1], ("cn_right", "MEMORY_MB"): [1024]}),
    ("different groups miss with group_policy=isolate",
     "resources1=VCPU:1&resources2=MEMORY_MB:1024&group_policy=isolate", 0, 0, {}),
    ("multiple group_policy picks the first one",
     "resources1=VCPU:1&resources2=MEMORY_MB:1024&group_policy=isolate&group_policy=none",
     0, 0, {}),
    ("resources combine",
     "resources=VCPU:3,MEMORY_MB:512&resources1=VCPU:1,MEMORY_MB:1024&resources2=VCPU:2"
     "&group_policy=none", 3, 3,
     {("cn_left", "VCPU"): [6], ("cn_left", "MEMORY_MB"): [1536],
      ("cn_middle", "VCPU"): [6], ("cn_right", "VCPU"): [6]}),
    ("group policy not required with only one numbered group",
     "resources=VCPU:1&resources1=MEMORY_MB:2048", 3, 3, {}),
    ("disk sharing isolated",
     "resources1=VCPU:1,MEMORY_MB:1024&resources2=DISK_GB:100&group_policy=isolate", 5, 5,
     {("cn_left", "VCPU"): [1, 1], ("cn_left", "DISK_GB"): [],
      ("cn_middle", "VCPU"): [1, 1], ("cn_right", "VCPU"): [1],
      ("shr_disk_1", "DISK_GB"): [100, 100], ("shr_disk_2", "DISK_GB"): [100, 100, 100]}),
    ("disk sharing non-isolated",
     "resources1=VCPU:1,MEMORY_MB:1024&resources2=DISK_GB:100&group_policy=none", 7, 5,
     {("cn_left", "DISK_GB"): [100], ("cn_right", "DISK_GB"): [100]}),
    ("disk alone", "resources1=DISK_GB:800", 2, 2,
     {("shr_disk_1", "DISK_GB"): [800], ("shr_disk_2", "DISK_GB"): [800]}),
    ("disk alone non-granular", "resources=DISK_GB:800", 2, 2,
     {("shr_disk_1", "DISK_GB"): [800], ("shr_disk_2", "DISK_GB"): [800]}),
    ("isolated ssd",
     "resources1=VCPU:1,MEMORY_MB:1024&resources2=DISK_GB:100&required2=CUSTOM_DISK_SSD"
     "&group_policy=isolate", 2, 3,
     {("cn_left", "VCPU"): [1], ("cn_middle", "VCPU"): [1],
      ("shr_disk_1", "DISK_GB"): [100, 100], ("cn_right", "DISK_GB"): []}),
    ("no isolation, forbid ssd",
     "resources1=VCPU:1&resources2=DISK_GB:100&required2=!CUSTOM_DISK_SSD"
     "&group_policy=none", 4, 4,
     {("cn_left", "VCPU"): [1, 1], ("cn_middle", "VCPU"): [1], ("cn_right", "VCPU"): [1],
      ("shr_disk_2", "DISK_GB"): [100, 100, 100]}),
    ("member_of filters",
     "resources1=VCPU:1&resources2=DISK_GB:100&member_of2=$aggC&group_policy=none", 1, 1,
     {("cn_right", "VCPU"): [1], ("cn_right", "DISK_GB"): [100]}),
    ("required, forbidden, member_of in",
     "resources1=VCPU:1&required1=!HW_CPU_X86_SSE&resources2=DISK_GB:100"
     "&required2=CUSTOM_DISK_SSD&member_of2=in:$aggA,$aggC&group_policy=none", 2, 3,
     {("cn_left", "VCPU"): [1], ("cn_right", "VCPU"): [1],
      ("shr_disk_1", "DISK_GB"): [100], ("cn_right", "DISK_GB"): [100]}),
    ("multiple member_of",
     "resources1=VCPU:1&resources2=DISK_GB:100&member_of2=$aggA&member_of2=in:$aggB,$aggC"
     "&group_policy=isolate", 3, 4,
     {("cn_left", "VCPU"): [1], ("cn_middle", "VCPU"): [1], ("cn_right", "VCPU"): [1],
      ("shr_disk_2", "DISK_GB"): [100, 100, 100]}),
    ("multiple disks, multiple networks",
     "resources1=VCPU:1&resources2=VGPU:1&required2=HW_GPU_API_DXVA"
     "&resources3=MEMORY_MB:1024&resources4=DISK_GB:100&required4=CUSTOM_DISK_SSD"
     "&resources5=DISK_GB:50&required5=!CUSTOM_DISK_SSD"
     "&resources6=SRIOV_NET_VF:1,CUSTOM_NET_MBPS:1000"
     "&resources7=SRIOV_NET_VF:2,CUSTOM_NET_MBPS:2000&group_policy=none", 3, 5,
     {("cn_left", "VCPU"): [1, 1], ("cn_left", "SRIOV_NET_VF"): [3, 3],
      ("cn_left", "CUSTOM_NET_MBPS"): [3000, 3000], ("cn_left", "DISK_GB"): [50],
      ("shr_disk_1", "DISK_GB"): [100, 100], ("shr_disk_2", "DISK_GB"): [50, 50],
      ("cn_right", "DISK_GB"): [100], ("shr_net", "SRIOV_NET_VF"): [3],
      ("shr_net", "CUSTOM_NET_MBPS"): [3000]}),
    ("combining request groups exceeds capacity",
     "resources=VCPU:2,MEMORY_MB:2048,SRIOV_NET_VF:1,CUSTOM_NET_MBPS:2000"
     "&resources1=SRIOV_NET_VF:1,CUSTOM_NET_MBPS:3000", 1, 2,
     {("cn_right", "VCPU"): [2], ("shr_net", "SRIOV_NET_VF"): [2],
      ("shr_net", "CUSTOM_NET_MBPS"): [5000]}),
    ("combining request groups exceeds max_unit",
     "resources=VGPU:1&resources1=VGPU:1&resources2=VGPU:1&group_policy=none", 1, 1,
     {("cn_left", "VGPU"): [3]}),
]


@pytest.mark.parametrize(("query", "candidates", "summaries", "amounts"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_granular_gabbit(query: str, candidates: int, summaries: int,
                         amounts: dict[tuple[str, str], list[int]]) -> None:
    answer = granular().ask(query, V)
    assert len(answer) == candidates
    assert len(answer.summarised) == summaries
    for (provider, rc), expected in amounts.items():
        assert answer.amounts(provider, rc) == expected, (provider, rc)


def test_summaries_show_capacity_and_every_class_of_the_provider() -> None:
    answer = granular().ask("resources=VCPU:2,MEMORY_MB:2048,SRIOV_NET_VF:1,"
                            "CUSTOM_NET_MBPS:2000&resources1=SRIOV_NET_VF:1,"
                            "CUSTOM_NET_MBPS:3000", V)
    assert answer.summary("cn_right").resources["VCPU"].capacity == 8
    assert answer.summary("shr_net").resources["CUSTOM_NET_MBPS"].capacity == 40000
    assert set(answer.summary("cn_right").resources) == {"VCPU", "MEMORY_MB", "DISK_GB",
                                                          "VGPU"}


def test_mappings_name_the_provider_of_each_group() -> None:
    answer = granular().ask("resources=VCPU:1&resources1=DISK_GB:100&member_of1=$aggC", V)
    assert answer.mappings == [{"": ["cn_right"], "1": ["cn_right"]}]


# allocation-candidates-any-traits.yaml (GranularFixture): name, version, query, candidates,
# amounts
ANY_TRAITS = [
    ("the second required field overwrites the first before 1.39", (1, 38),
     "required=CUSTOM_FOO&required=HW_CPU_X86_MMX&resources=VCPU:1", 1,
     {("cn_right", "VCPU"): [1]}),
    ("the second required field overwrites the first in named groups", (1, 38),
     "requiredX=CUSTOM_FOO&requiredX=HW_CPU_X86_MMX&resourcesX=VCPU:1", 1,
     {("cn_right", "VCPU"): [1]}),
    ("OR, AND and NOT trait queries", (1, 39),
     "required=in:HW_GPU_API_DXVA,HW_NIC_ACCEL_TLS&required=HW_CPU_X86_AVX,!CUSTOM_FOO"
     "&resources=VCPU:1,DISK_GB:1", 2,
     {("cn_middle", "VCPU"): [1, 1], ("shr_disk_1", "DISK_GB"): [1],
      ("shr_disk_2", "DISK_GB"): [1]}),
    ("multiple OR queries", (1, 39),
     "required=in:HW_CPU_X86_MMX,HW_NIC_ACCEL_TLS&required=in:CUSTOM_DISK_SSD,CUSTOM_FOO"
     "&resources=VCPU:1,DISK_GB:1", 3,
     {("cn_middle", "VCPU"): [1], ("shr_disk_1", "DISK_GB"): [1],
      ("cn_right", "VCPU"): [1, 1], ("cn_right", "DISK_GB"): [1],
      ("shr_disk_2", "DISK_GB"): [1]}),
]


@pytest.mark.parametrize(("version", "query", "candidates", "amounts"),
                         [c[1:] for c in ANY_TRAITS], ids=[c[0] for c in ANY_TRAITS])
def test_any_traits_gabbit(version: tuple[int, int], query: str, candidates: int,
                           amounts: dict[tuple[str, str], list[int]]) -> None:
    answer = granular().ask(query, version)
    assert len(answer) == candidates
    for (provider, rc), expected in amounts.items():
        assert answer.amounts(provider, rc) == expected, (provider, rc)
