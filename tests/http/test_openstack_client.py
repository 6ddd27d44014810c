"""A real OpenStack client drives the server: ``osc-placement`` through the ``openstack``
command (no keystone: ``--os-auth-type none`` and an endpoint), its own output checked."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from tests.http.server import running_server
from tests.stores import postgres_schema_url

OPENSTACK = str(Path(sys.executable).parent / "openstack")


@pytest.fixture(scope="module", params=[
    "sqlite",
    # the same commands over PostgreSQL: a long trial (a process per command), --slow;
    # the store under the server is checked over HTTP on PostgreSQL by the other modules
    pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.slow]),
])
def server_port(request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """This module's server: SQLite in the default run, PostgreSQL too with --slow."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("osc") / "ledger.db"
        with running_server(f"sqlite:///{path}") as port:
            yield port
    else:
        with postgres_schema_url() as url, running_server(url) as port:
            yield port


class Openstack:
    """The ``openstack`` CLI pointed at one server."""

    def __init__(self, port: int) -> None:
        self.base = [OPENSTACK, "--os-auth-type", "none", "--os-endpoint",
                     f"http://127.0.0.1:{port}"]

    def run(self, *args: str, version: str = "1.39") -> subprocess.CompletedProcess[str]:
        """Run one command at a microversion."""
        return subprocess.run([*self.base, "--os-placement-api-version", version, *args],
                              capture_output=True, text=True, timeout=120, check=False)

    def json(self, *args: str, version: str = "1.39") -> Any:
        """Run one command with ``-f json``; its parsed output (it must succeed)."""
        done = self.run(*args, "-f", "json", version=version)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else None


def test_osc_placement_manages_a_tree_its_inventory_and_allocations(server_port: int) -> None:
    osc = Openstack(server_port)
    tag = uuid4().hex[:8]
    host = osc.json("resource", "provider", "create", f"host-{tag}")
    assert (host["name"], host["generation"], host["parent_provider_uuid"]) == (
        f"host-{tag}", 0, None)
    numa = osc.json("resource", "provider", "create", f"numa-{tag}", "--parent-provider",
                    host["uuid"])
    assert numa["root_provider_uuid"] == host["uuid"]
    tree = osc.json("resource", "provider", "list", "--in-tree", host["uuid"])
    assert sorted(p["name"] for p in tree) == [f"host-{tag}", f"numa-{tag}"]

    inventory = osc.json("resource", "provider", "inventory", "set", host["uuid"],
                         "--resource", "VCPU=8", "--resource", "VCPU:allocation_ratio=2.0",
                         "--resource", "MEMORY_MB=4096")
    assert {i["resource_class"]: (i["total"], i["allocation_ratio"]) for i in inventory} == {
        "VCPU": (8, 2.0), "MEMORY_MB": (4096, 1.0)}
    listed = osc.json("resource", "provider", "inventory", "list", host["uuid"])
    assert sorted(i["resource_class"] for i in listed) == ["MEMORY_MB", "VCPU"]
    assert osc.run("resource", "class", "create", f"CUSTOM_{tag.upper()}").returncode == 0

    vm, project = str(uuid4()), str(uuid4())
    allocated = osc.json("resource", "provider", "allocation", "set", vm, "--project-id",
                         project, "--user-id", "u", "--consumer-type", "INSTANCE",
                         "--allocation", f"rp={host['uuid']},VCPU=4,MEMORY_MB=1024")
    assert [(a["resource_provider"], a["resources"]) for a in allocated] == [
        (host["uuid"], {"VCPU": 4, "MEMORY_MB": 1024})]
    shown = osc.json("resource", "provider", "allocation", "show", vm)
    assert [(a["resources"], a["project_id"], a["consumer_type"]) for a in shown] == [
        ({"VCPU": 4, "MEMORY_MB": 1024}, project, "INSTANCE")]
    usage = osc.json("resource", "provider", "usage", "show", host["uuid"])
    assert {u["resource_class"]: u["usage"] for u in usage} == {"VCPU": 4, "MEMORY_MB": 1024}
    totals = osc.json("resource", "usage", "show", project, version="1.9")
    assert {u["resource_class"]: u["usage"] for u in totals} == {"VCPU": 4, "MEMORY_MB": 1024}

    too_much = osc.run("resource", "provider", "allocation", "set", str(uuid4()),
                       "--project-id", project, "--user-id", "u", "--consumer-type",
                       "INSTANCE", "--allocation", f"rp={host['uuid']},VCPU=13")
    assert too_much.returncode == 1
    assert "would exceed the capacity. (13 requested, 4 used of capacity 16, 12 free)" in (
        too_much.stderr)
    in_use = osc.run("resource", "provider", "delete", host["uuid"])
    assert in_use.returncode == 1 and "HTTP 409" in in_use.stderr

    assert osc.run("resource", "provider", "allocation", "unset", vm).returncode == 0
    assert osc.json("resource", "provider", "allocation", "show", vm) == []
    renamed = osc.json("resource", "provider", "set", numa["uuid"], "--name", f"n0-{tag}",
                       "--parent-provider", host["uuid"])
    # a rename keeps the generation, as Placement's does
    assert (renamed["name"], renamed["generation"]) == (f"n0-{tag}", numa["generation"])
    assert osc.run("resource", "provider", "delete", numa["uuid"]).returncode == 0
    assert osc.run("resource", "provider", "delete", host["uuid"]).returncode == 0
    assert osc.json("resource", "provider", "list", "--name", f"host-{tag}") == []


def test_osc_placement_manages_traits_aggregates_and_filters(server_port: int) -> None:
    osc = Openstack(server_port)
    tag = uuid4().hex[:8].upper()
    trait = f"CUSTOM_OSC_{tag}"
    assert osc.run("trait", "create", trait).returncode == 0
    assert osc.json("trait", "show", trait)["name"] == trait
    assert trait in [t["name"] for t in osc.json("trait", "list", "--name",
                                                 f"startswith:CUSTOM_OSC_{tag}")]
    host = osc.json("resource", "provider", "create", f"host-{tag}")
    other = osc.json("resource", "provider", "create", f"other-{tag}")
    traits = osc.json("resource", "provider", "trait", "set", host["uuid"], "--trait", trait,
                      "--trait", "HW_CPU_X86_AVX2")
    assert sorted(t["name"] for t in traits) == sorted([trait, "HW_CPU_X86_AVX2"])
    assert sorted(t["name"] for t in osc.json("resource", "provider", "trait", "list",
                                              host["uuid"])) == sorted([trait, "HW_CPU_X86_AVX2"])
    refused = osc.run("trait", "delete", trait)
    assert refused.returncode != 0 and "in use" in refused.stderr

    agg = str(uuid4())
    generation = osc.json("resource", "provider", "show", host["uuid"])["generation"]
    aggregates = osc.json("resource", "provider", "aggregate", "set", host["uuid"],
                          "--aggregate", agg, "--generation", str(generation))
    assert [a["uuid"] for a in aggregates] == [agg]
    assert [a["uuid"] for a in osc.json("resource", "provider", "aggregate", "list",
                                        other["uuid"])] == []

    listed = osc.json("resource", "provider", "list", "--required", trait, "--member-of", agg)
    assert [p["uuid"] for p in listed] == [host["uuid"]]
    forbidden = osc.json("resource", "provider", "list", "--forbidden", trait,
                         "--name", f"other-{tag}")
    assert [p["uuid"] for p in forbidden] == [other["uuid"]]

    assert osc.run("resource", "provider", "trait", "delete", host["uuid"]).returncode == 0
    assert osc.run("trait", "delete", trait).returncode == 0
