"""Create a Placement database with Placement's own code and fill it through its API.

Run with a Python that has ``openstack-placement`` installed (not the ledger's: the two
have conflicting pins), as

    fill_placement.py CONNECTION [EXTRA]

where CONNECTION is an oslo.db URL (``mysql+pymysql://root@127.0.0.1/db``,
``sqlite:////tmp/placement.db``). The schema comes from Placement's migrations
(``sync_on_startup``), the resource classes and traits from its startup sync, and every
row from requests to its WSGI application (no server, no network). Prints, as JSON, what
the API itself then reports: each provider's generation, inventories, usages, traits and
aggregates, the custom traits, each
consumer's allocations, generation, project, user and type. EXTRA (default 0) more
instances, one VCPU each on hosts of their own, make an import that runs long enough to be
interrupted.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import uuid

from oslo_config import cfg
from placement import conf, db_api, deploy
from webob import Request

ADMIN = {"X-Auth-Token": "admin", "Content-Type": "application/json"}


def make_app(connection: str):  # type: ignore[no-untyped-def]
    config = cfg.ConfigOpts()
    conf.register_opts(config)
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as file:
        file.write(f"[placement_database]\nconnection = {connection}\n"
                   "sync_on_startup = true\n[api]\nauth_strategy = noauth2\n")
    try:
        config([], project="placement", default_config_files=[file.name])
        db_api.configure(config)
        return deploy.loadapp(config)
    finally:
        os.unlink(file.name)


class Api:
    def __init__(self, app, version: str = "1.38") -> None:  # type: ignore[no-untyped-def]
        self.app, self.version = app, version

    def __call__(self, method: str, path: str, body: object = None,
                 version: str | None = None) -> dict:  # type: ignore[type-arg]
        headers = {**ADMIN, "OpenStack-API-Version": f"placement {version or self.version}"}
        req = Request.blank(path, method=method, headers=headers)
        if body is not None:
            req.body = json.dumps(body).encode()
        resp = req.get_response(self.app)
        if resp.status_int >= 400:
            raise SystemExit(f"{method} {path}: {resp.status} {resp.text}")
        return resp.json if resp.body else {}


def provider(api: Api, name: str, parent: str | None = None) -> str:
    rp = str(uuid.uuid4())
    body = {"uuid": rp, "name": name, **({"parent_provider_uuid": parent} if parent else {})}
    api("POST", "/resource_providers", body)
    return rp


def inventories(api: Api, rp: str, invs: dict) -> None:  # type: ignore[type-arg]
    gen = api("GET", f"/resource_providers/{rp}")["generation"]
    api("PUT", f"/resource_providers/{rp}/inventories",
        {"resource_provider_generation": gen, "inventories": invs})


def traits(api: Api, rp: str, names: list[str]) -> None:
    gen = api("GET", f"/resource_providers/{rp}")["generation"]
    api("PUT", f"/resource_providers/{rp}/traits",
        {"resource_provider_generation": gen, "traits": names})


def aggregates(api: Api, rp: str, uuids: list[str]) -> None:
    gen = api("GET", f"/resource_providers/{rp}")["generation"]
    api("PUT", f"/resource_providers/{rp}/aggregates",
        {"resource_provider_generation": gen, "aggregates": uuids})


def allocate(api: Api, consumer: str, allocations: dict, project: str, user: str,  # type: ignore[type-arg]
             kind: str | None = "INSTANCE") -> None:
    current = api("GET", f"/allocations/{consumer}")
    body = {"allocations": {rp: {"resources": r} for rp, r in allocations.items()},
            "project_id": project, "user_id": user,
            "consumer_generation": current.get("consumer_generation")}
    if kind is None:  # an old client: no consumer type (microversion 1.28)
        api("PUT", f"/allocations/{consumer}", body, version="1.28")
        return
    api("PUT", f"/allocations/{consumer}", {**body, "consumer_type": kind})


def move_allocations(api: Api, instance: str, migration: str, *, typed: bool) -> None:
    """Nova's ``move_allocations`` (``nova/scheduler/client/report.py``): one ``POST
    /allocations`` emptying the instance at its generation and giving the new migration
    consumer exactly what it held (generation null). Nova sends it at 1.28, untyped;
    ``typed``: at 1.38 with the types a typed client sends."""
    held = api("GET", f"/allocations/{instance}")
    types = ({"consumer_type": "INSTANCE"}, {"consumer_type": "MIGRATION"}) if typed else (
        {}, {})
    owner = {"project_id": held["project_id"], "user_id": held["user_id"]}
    api("POST", "/allocations", {
        instance: {"allocations": {}, "consumer_generation": held["consumer_generation"],
                   **owner, **types[0]},
        migration: {"allocations": held["allocations"], "consumer_generation": None,
                    **owner, **types[1]}}, version="1.38" if typed else "1.28")


def fill(api: Api) -> dict[str, list[str]]:
    api("PUT", "/resource_classes/CUSTOM_GOLD", version="1.7")
    api("PUT", "/resource_classes/CUSTOM_FPGA_SLOT", version="1.7")
    host1 = provider(api, "compute-1")
    numa0 = provider(api, "compute-1-numa0", host1)
    nic = provider(api, "compute-1-numa0-nic", numa0)
    host2 = provider(api, "compute-2")
    inventories(api, host1, {
        "VCPU": {"total": 16, "allocation_ratio": 4.0},
        "MEMORY_MB": {"total": 32768, "reserved": 512, "max_unit": 16384},
        "DISK_GB": {"total": 100, "reserved": 10, "step_size": 5, "min_unit": 5}})
    inventories(api, numa0, {"PCPU": {"total": 8}, "CUSTOM_FPGA_SLOT": {"total": 2}})
    inventories(api, nic, {"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 10000, "reserved": 1000},
                           "CUSTOM_GOLD": {"total": 8, "step_size": 2}})
    inventories(api, host2, {"VCPU": {"total": 8, "allocation_ratio": 0.9},
                             "MEMORY_MB": {"total": 8192, "allocation_ratio": 1.5}})
    # traits (standard and custom; one custom trait held by nobody) and aggregates
    # (one shared by two hosts)
    api("PUT", "/traits/CUSTOM_RACK_A", version="1.6")
    api("PUT", "/traits/CUSTOM_UNUSED", version="1.6")
    traits(api, host1, ["HW_CPU_X86_AVX2", "CUSTOM_RACK_A", "COMPUTE_VOLUME_MULTI_ATTACH"])
    traits(api, numa0, ["HW_NUMA_ROOT"])
    az, rack = str(uuid.uuid4()), str(uuid.uuid4())
    aggregates(api, host1, [az, rack])
    aggregates(api, host2, [az])
    vm1, vm2, vm3, vm4, old = (str(uuid.uuid4()) for _ in range(5))
    migration = str(uuid.uuid4())
    allocate(api, vm1, {host1: {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 20},
                        numa0: {"PCPU": 2, "CUSTOM_FPGA_SLOT": 1},
                        nic: {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "CUSTOM_GOLD": 4}},
             "project-a", "alice")
    allocate(api, vm2, {host2: {"VCPU": 2, "MEMORY_MB": 2048}}, "project-a", "bob")
    for vcpu in (1, 2, 3):  # rewritten: generation 3
        allocate(api, vm3, {host1: {"VCPU": vcpu, "MEMORY_MB": 1024}}, "project-b", "carol")
    # a resize in flight, as Nova makes it: the instance's allocation moved to the
    # migration consumer, then the instance claims its destination (Placement deleted the
    # emptied instance consumer: the claim makes it anew)
    allocate(api, vm4, {host1: {"VCPU": 2, "MEMORY_MB": 2048}}, "project-b", "dave")
    move_allocations(api, vm4, migration, typed=True)
    allocate(api, vm4, {host2: {"VCPU": 3, "MEMORY_MB": 4096}}, "project-b", "dave")
    # the same at 1.28 with no consumer types, exactly as Nova writes it (a resize on the
    # same host)
    vm6, untyped_migration = str(uuid.uuid4()), str(uuid.uuid4())
    allocate(api, vm6, {host1: {"VCPU": 1, "MEMORY_MB": 512}}, "project-e", "grace",
             kind=None)
    move_allocations(api, vm6, untyped_migration, typed=False)
    allocate(api, vm6, {host1: {"VCPU": 2, "MEMORY_MB": 1024}}, "project-e", "grace",
             kind=None)
    allocate(api, old, {host2: {"VCPU": 1}}, "project-c", "erin", kind=None)
    gone = str(uuid.uuid4())  # allocated then deleted: Placement forgets the consumer
    allocate(api, gone, {host2: {"VCPU": 1}}, "project-c", "erin")
    api("DELETE", f"/allocations/{gone}")
    inventories(api, host2, {"VCPU": {"total": 8, "allocation_ratio": 0.9},  # generation up
                             "MEMORY_MB": {"total": 8192, "allocation_ratio": 1.5,
                                           "reserved": 256}})
    # over capacity: Placement lets an inventory be lowered (total and max_unit) under
    # what is already allocated, and warns
    host3 = provider(api, "compute-3")
    inventories(api, host3, {"VCPU": {"total": 8}})
    vm5 = str(uuid.uuid4())
    allocate(api, vm5, {host3: {"VCPU": 6}}, "project-d", "frank")
    inventories(api, host3, {"VCPU": {"total": 4, "max_unit": 4}})
    return {"providers": [host1, numa0, nic, host2, host3],
            "consumers": [vm1, vm2, vm3, migration, vm4, old, vm5, untyped_migration, vm6]}


def report(api: Api, made: dict[str, list[str]]) -> dict:  # type: ignore[type-arg]
    providers = {}
    for rp in made["providers"]:
        shown = api("GET", f"/resource_providers/{rp}")
        invs = api("GET", f"/resource_providers/{rp}/inventories")["inventories"]
        usages = api("GET", f"/resource_providers/{rp}/usages")["usages"]
        providers[rp] = {"name": shown["name"], "generation": shown["generation"],
                         "parent_uuid": shown["parent_provider_uuid"],
                         "inventories": invs, "usages": usages,
                         "traits": api("GET", f"/resource_providers/{rp}/traits")["traits"],
                         "aggregates": api("GET", f"/resource_providers/{rp}/aggregates"
                                           )["aggregates"]}
    consumers = {}
    for c in made["consumers"]:
        shown = api("GET", f"/allocations/{c}")
        consumers[c] = {"allocations": {rp: a["resources"]
                                        for rp, a in shown["allocations"].items()},
                        "generation": shown["consumer_generation"],
                        "project_id": shown["project_id"], "user_id": shown["user_id"],
                        "consumer_type": shown["consumer_type"]}
    custom = api("GET", "/traits?name=startswith:CUSTOM_", version="1.6")["traits"]
    return {"providers": providers, "consumers": consumers, "custom_traits": custom}


def extra(api: Api, count: int) -> None:
    hosts = [provider(api, f"extra-{n}") for n in range(max(1, count // 100))]
    for rp in hosts:
        inventories(api, rp, {"VCPU": {"total": 1000}})
    for n in range(count):
        allocate(api, str(uuid.uuid4()), {hosts[n % len(hosts)]: {"VCPU": 1}}, "project-x",
                 "xavier")


if __name__ == "__main__":
    api = Api(make_app(sys.argv[1]))
    made = fill(api)
    if len(sys.argv) > 2:
        extra(api, int(sys.argv[2]))
    print(json.dumps(report(api, made)))
