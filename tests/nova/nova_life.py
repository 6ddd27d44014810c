"""A compute node's life in Placement, driven by Nova's own ``SchedulerReportClient``.

Run with a Python that has ``nova`` installed (``.venv-nova``), as
``python nova_life.py ENDPOINT``. Every uuid is fixed, so two runs against two empty
Placement services (the ledger's ``serve`` and Placement 16) make the same calls; after
each step the script reads what the service then holds through plain GETs and prints one
JSON list of ``{"step", "result", "state"}``: the report client method's own return value
and the state (each provider of each tree with its parent, root, generation, inventories,
traits, aggregates and usages; each consumer's allocations with its generation).

The steps are those of nova-compute and the scheduler:

1. ``update_from_provider_tree`` with a NUMA tree: a root compute node (DISK_GB and
   VGPU inventory, ``COMPUTE_*`` and ``CUSTOM_*`` traits, two aggregates) and two NUMA
   children (VCPU, MEMORY_MB, a ``HW_NUMA_ROOT`` trait), as the resource tracker does
   after ``get_provider_tree_and_ensure_root``; a second host with its own tree;
2. ``claim_resources`` of an instance holding VGPU and DISK_GB on the root and VCPU,
   MEMORY_MB on a NUMA node;
3. the reshape after nova-compute restarts (a fresh client): VGPU moves from the root to
   a new pGPU child, the instance's VGPU with it, through ``get_allocations_for_provider_tree`` and
   ``update_from_provider_tree(..., allocations=...)`` (``POST /reshaper``);
4. ``get_allocation_candidates`` with a ``ResourceRequest`` built by Nova from a
   ``RequestSpec`` whose flavor has granular groups (``resources1:VGPU``,
   ``resources_NUMA…``), ``group_policy=isolate``, a required trait and the root disk;
5. ``claim_resources`` of a second instance with the first candidate;
6. ``move_allocations`` of the second instance to a migration, then ``claim_resources``
   on the other host and ``delete_allocation_for_instance`` of the migration (a cold
   migration confirmed);
7. ``delete_allocation_for_instance`` of the first instance, and
   ``delete_resource_provider(..., cascade=True)`` of both compute nodes (Nova's database
   lookups of the instances on a host, which are not Placement calls, are answered with
   the fixed uuids).
"""

from __future__ import annotations

import json
import sys
from typing import Any
from unittest import mock

import nova.monkey_patch  # noqa: F401  # as nova-compute runs: its ProviderTree copies need it
from keystoneauth1 import adapter, noauth, session
from nova import context as nova_context
from nova import objects
from nova.compute import provider_tree
from nova.scheduler import utils as scheduler_utils
from nova.scheduler.client import report

objects.register_all()

HOSTS = {
    "compute1": "c0000000-0000-4000-8000-000000000001",
    "compute2": "c0000000-0000-4000-8000-000000000002",
}
NUMA = {
    "compute1": ("d0000000-0000-4000-8000-000000000011", "d0000000-0000-4000-8000-000000000012"),
    "compute2": ("d0000000-0000-4000-8000-000000000021", "d0000000-0000-4000-8000-000000000022"),
}
PGPU = {"compute1": "e0000000-0000-4000-8000-000000000011",
        "compute2": "e0000000-0000-4000-8000-000000000021"}
AGG_RACK = "a0000000-0000-4000-8000-00000000000a"
AGG_AZ = "a0000000-0000-4000-8000-00000000000b"
VM1 = "f0000000-0000-4000-8000-000000000001"
VM2 = "f0000000-0000-4000-8000-000000000002"
MIGRATION = "f0000000-0000-4000-8000-0000000000ee"
PROJECT, USER = "f1e1d1c1-0000-4000-8000-000000000001", "f1e1d1c1-0000-4000-8000-000000000002"
NUMA_TRAITS = {"HW_NUMA_ROOT", "CUSTOM_NUMA_CELL"}
ROOT_TRAITS = {"COMPUTE_VOLUME_MULTI_ATTACH", "HW_CPU_X86_AVX2", "CUSTOM_RACK_A"}
GPU_TRAITS = {"CUSTOM_VGPU_NVIDIA_11"}


def inv(total: int, **more: int) -> dict[str, int]:
    return {"total": total, "reserved": more.get("reserved", 0), "min_unit": 1,
            "max_unit": more.get("max_unit", total), "step_size": 1,
            "allocation_ratio": more.get("ratio", 1)}


def numa_inventory() -> dict[str, dict[str, int]]:
    return {"VCPU": inv(8, ratio=4, max_unit=8), "MEMORY_MB": inv(16384, reserved=512)}


class Life:
    def __init__(self, endpoint: str) -> None:
        self.raw = adapter.Adapter(session.Session(auth=noauth.NoAuth()),
                                   service_type="placement", endpoint_override=endpoint)
        self.client = report.SchedulerReportClient(adapter=self.raw)
        self.ctx = nova_context.get_admin_context()
        self.steps: list[dict[str, Any]] = []

    # -- reading what the service holds --------------------------------------------------

    def get(self, url: str, version: str = "1.39") -> Any:
        resp = self.raw.get(url, microversion=version, raise_exc=False)
        return {"status": resp.status_code, "body": resp.json() if resp.content else None}

    def state(self) -> dict[str, Any]:
        providers = {}
        for name, root in HOSTS.items():
            tree = self.get(f"/resource_providers?in_tree={root}")
            for rp in (tree["body"] or {}).get("resource_providers", []):
                url = f"/resource_providers/{rp['uuid']}"
                providers[rp["uuid"]] = {
                    "name": rp["name"], "generation": rp["generation"],
                    "parent": rp["parent_provider_uuid"], "root": rp["root_provider_uuid"],
                    "inventories": self.get(url + "/inventories")["body"]["inventories"],
                    "traits": sorted(self.get(url + "/traits")["body"]["traits"]),
                    "aggregates": sorted(self.get(url + "/aggregates")["body"]["aggregates"]),
                    "usages": self.get(url + "/usages")["body"]["usages"],
                }
            del name
        consumers = {c: self.get(f"/allocations/{c}")["body"] for c in (VM1, VM2, MIGRATION)}
        usages = self.get(f"/usages?project_id={PROJECT}")["body"]
        return {"providers": providers, "consumers": consumers, "project_usages": usages}

    def step(self, name: str, result: Any) -> None:
        self.steps.append({"step": name, "result": result, "state": self.state()})

    # -- nova-compute -------------------------------------------------------------------

    def numa_tree(self, host: str) -> provider_tree.ProviderTree:
        tree = self.client.get_provider_tree_and_ensure_root(self.ctx, HOSTS[host], name=host)
        tree.update_inventory(host, {"DISK_GB": inv(500), "VGPU": inv(4)})
        tree.update_traits(host, ROOT_TRAITS)
        tree.update_aggregates(host, [AGG_RACK, AGG_AZ] if host == "compute1" else [AGG_AZ])
        for n, child in enumerate(NUMA[host]):
            if not tree.exists(child):
                tree.new_child(f"{host}_NUMA{n}", host, uuid=child)
            tree.update_inventory(child, numa_inventory())
            tree.update_traits(child, NUMA_TRAITS)
        return tree

    def boot_trees(self) -> None:
        for host in HOSTS:
            tree = self.numa_tree(host)
            self.step(f"update_from_provider_tree {host}",
                      self.client.update_from_provider_tree(self.ctx, tree))

    def reshape(self, host: str) -> None:
        # A driver models pGPUs after nova-compute restarts: a fresh client, empty cache.
        self.client = report.SchedulerReportClient(adapter=self.raw)
        tree = self.client.get_provider_tree_and_ensure_root(self.ctx, HOSTS[host], name=host)
        allocations = self.client.get_allocations_for_provider_tree(self.ctx, host)
        tree.update_inventory(host, {"DISK_GB": inv(500)})
        gpu = PGPU[host]
        tree.new_child(f"{host}_pGPU0", host, uuid=gpu)
        tree.update_inventory(gpu, {"VGPU": inv(4)})
        tree.update_traits(gpu, GPU_TRAITS)
        for record in allocations.values():
            held = record["allocations"]
            vgpu = held.get(HOSTS[host], {}).get("resources", {}).pop("VGPU", None)
            if vgpu is not None:
                held[gpu] = {"resources": {"VGPU": vgpu}}
        self.step(f"reshape {host}", self.client.update_from_provider_tree(
            self.ctx, tree, allocations=allocations))

    # -- scheduler ----------------------------------------------------------------------

    def claim(self, name: str, consumer: str, allocations: dict[str, Any]) -> None:
        self.step(name, self.client.claim_resources(
            self.ctx, consumer, {"allocations": allocations}, PROJECT, USER, "1.36"))

    def candidates(self) -> list[dict[str, Any]]:
        flavor = objects.Flavor(
            vcpus=2, memory_mb=1024, root_gb=20, ephemeral_gb=0, swap=0, name="vgpu.small",
            extra_specs={"resources1:VGPU": "1", "trait1:CUSTOM_VGPU_NVIDIA_11": "required",
                         "resources_NUMA:VCPU": "2", "resources_NUMA:MEMORY_MB": "1024",
                         "trait_NUMA:HW_NUMA_ROOT": "required",
                         "resources:VCPU": "0", "resources:MEMORY_MB": "0",
                         "trait:COMPUTE_VOLUME_MULTI_ATTACH": "required",
                         "group_policy": "isolate"})
        spec = objects.RequestSpec(flavor=flavor, image=objects.ImageMeta.from_dict({}),
                                   is_bfv=False, requested_resources=[])
        request = scheduler_utils.ResourceRequest.from_request_spec(spec)
        asked = request.to_querystring()
        found, summaries, version = self.client.get_allocation_candidates(self.ctx, request)
        self.step("get_allocation_candidates", {
            "query": asked, "version": version, "allocation_requests": found,
            "provider_summaries": summaries})
        return found or []

    # -- the whole life -----------------------------------------------------------------

    def run(self) -> list[dict[str, Any]]:
        self.boot_trees()
        c1, numa10 = HOSTS["compute1"], NUMA["compute1"][0]
        self.claim("claim_resources vm1", VM1, {
            c1: {"resources": {"DISK_GB": 20, "VGPU": 1}},
            numa10: {"resources": {"VCPU": 2, "MEMORY_MB": 1024}}})
        self.reshape("compute1")
        self.reshape("compute2")
        # The scheduler's weighers pick one; here the first in a fixed order, so that
        # both services take the same (Placement's answer order is its own).
        found = sorted(self.candidates(), key=lambda c: json.dumps(c, sort_keys=True))
        on_second = [c for c in found if HOSTS["compute2"] in c["allocations"]]
        self.claim("claim_resources vm2", VM2, on_second[0]["allocations"])
        self.step("move_allocations vm2 to migration",
                  self.client.move_allocations(self.ctx, VM2, MIGRATION))
        on_first = [c for c in found if c1 in c["allocations"]]
        self.claim("claim_resources vm2 on destination", VM2, on_first[0]["allocations"])
        self.step("delete_allocation_for_instance migration",
                  self.client.delete_allocation_for_instance(
                      self.ctx, MIGRATION, consumer_type="migration"))
        self.step("delete_allocation_for_instance vm1",
                  self.client.delete_allocation_for_instance(self.ctx, VM1))
        for host, held in (("compute2", []), ("compute1", [VM2])):
            node = objects.ComputeNode(uuid=HOSTS[host], host=host, hypervisor_hostname=host)
            with mock.patch.object(objects.InstanceList, "get_uuids_by_host_and_node",
                                   return_value=held), \
                    mock.patch.object(self.client,
                                      "_remove_allocations_for_evacuated_instances"):
                self.step(f"delete_resource_provider {host} cascade",
                          self.client.delete_resource_provider(self.ctx, node, cascade=True))
        return self.steps


if __name__ == "__main__":
    print(json.dumps(Life(sys.argv[1]).run(), sort_keys=True, default=str))
