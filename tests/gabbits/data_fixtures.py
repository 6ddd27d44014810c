"""Placement's gabbit fixtures, rebuilt as HTTP calls to the server under test.

Placement's own fixture module (``placement/tests/functional/fixtures/gabbits.py`` in
openstack-placement 16.0.0) sets up a database and writes its data fixtures through
Placement's Python objects. Here every class of the same name does what Placement's does
through the HTTP API of the running ``allocation-ledger serve`` instead, in the same order:
``APIFixture`` sets the same environment variables; the data fixtures (``AllocationFixture``,
``SharedStorageFixture``, ``NUMAAggregateFixture``, ``NUMANetworkFixture``,
``DeepNUMANetworkFixture``, ``NonSharedStorageFixture``, ``GranularFixture``,
``NeutronQoSMultiSegmentFixture``) create providers, inventories, resource classes, traits,
aggregates and allocations with ``POST /resource_providers``,
``POST /resource_providers/{uuid}/inventories``, ``PUT /resource_classes/{name}``,
``PUT /traits/{name}``, ``PUT /resource_providers/{uuid}/traits``,
``PUT /resource_providers/{uuid}/aggregates`` and ``PUT /allocations/{consumer}``.

Where Placement's objects do not move a provider's generation (``set_aggregates`` without
``increment_generation``), the call is made at a microversion whose handler does not either
(aggregates in the list format, before 1.19). Every generation sent is read back from the
server just before, so nothing here assumes how generations are numbered.

A call the server refuses raises ``FixtureSetupError`` naming the route template and the
status (``PUT /traits/{name} answered 404``): gabbi then reports the whole file as not run,
and the harness records that as the reason.

The policy fixtures (``OpenPolicyFixture``, ``SecureRBACPolicyFixture``,
``LegacyRBACPolicyFixture``) and ``CORSFixture`` configure Placement's policy or CORS
middleware; the server has no such setting, so here they are ``APIFixture``.

Runs inside ``.venv-placement`` (gabbi is there): stdlib and gabbi only.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import random
import uuid
from typing import Any

from gabbi import fixture

SERVER_ENV = "LEDGER_GABBI_SERVER"  # "host:port" of the server under test
MISC_SHARES = "MISC_SHARES_VIA_AGGREGATE"


class FixtureSetupError(Exception):
    """Raised when the server refuses a call a data fixture needs."""


_MADE = itertools.count(1)


def new_uuid() -> str:
    """A random UUID whose first 32 bits count up, so the fixture's providers sort in the
    order they were made. The ledger orders allocation candidates by provider UUID and
    Placement by its row ids (creation order); with UUIDs in creation order a gabbit that
    takes ``allocation_requests[0]`` gets the same candidate from both on every run (with
    random UUIDs it got a different one each run, and some runs failed)."""
    return str(uuid.UUID(int=(next(_MADE) << 96) | random.getrandbits(96), version=4))


def error_detail(raw: bytes) -> str:
    """The detail of Placement's error document, else the first 200 characters."""
    try:
        return str(json.loads(raw)["errors"][0]["detail"])[:200]
    except (ValueError, KeyError, IndexError, TypeError):
        return raw.decode(errors="replace")[:200]


class Api:
    """A small client of the server under test, with Placement's noauth2 admin token."""

    def __init__(self) -> None:
        host, _, port = os.environ[SERVER_ENV].rpartition(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)

    def call(self, method: str, route: str, version: str, body: Any = None,
             ok: tuple[int, ...] = (200, 201, 204), **params: str) -> Any:
        """Send one request to ``route`` (a template filled from ``params``); the JSON body
        of the answer, or raise ``FixtureSetupError`` when its status is not in ``ok``."""
        path = route.format(**params)
        headers = {"x-auth-token": "admin", "accept": "application/json",
                   "openstack-api-version": f"placement {version}"}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        self.conn.request(method, path, payload, headers)
        response = self.conn.getresponse()
        raw = response.read()
        if response.status not in ok:
            raise FixtureSetupError(f"data fixture needs {method} {route}, which answered "
                                    f"{response.status}: {error_detail(raw)}")
        return json.loads(raw) if raw else None

    def generation(self, rp: str) -> int:
        found = self.call("GET", "/resource_providers/{uuid}", "1.14", uuid=rp)
        return int(found["generation"])

    def close(self) -> None:
        self.conn.close()


class Builder:
    """Placement's ``db/test_base.py`` helpers (``create_provider``, ``add_inventory``,
    ``set_traits``, ``set_allocation``) over HTTP."""

    def __init__(self, api: Api) -> None:
        self.api = api

    def create_provider(self, name: str, *aggs: str, parent: str | None = None,
                        uuid: str | None = None) -> str:
        rp = uuid or new_uuid()
        body: dict[str, Any] = {"name": name, "uuid": rp}
        if parent:
            body["parent_provider_uuid"] = parent
        self.api.call("POST", "/resource_providers", "1.14", body)
        if aggs:
            self.set_aggregates(rp, *aggs)
        return rp

    def set_aggregates(self, rp: str, *aggs: str) -> None:
        # The list format (before 1.19): like Placement's set_aggregates() called by its
        # fixtures, it leaves the provider's generation alone.
        self.api.call("PUT", "/resource_providers/{uuid}/aggregates", "1.1", list(aggs),
                      uuid=rp)

    def ensure_rc(self, name: str) -> None:
        if name.startswith("CUSTOM_"):
            self.api.call("PUT", "/resource_classes/{name}", "1.7", name=name)

    def add_inventory(self, rp: str, rc: str, total: int, **fields: Any) -> None:
        self.ensure_rc(rc)
        fields.setdefault("max_unit", total)
        body = {"resource_class": rc, "total": total,
                "resource_provider_generation": self.api.generation(rp), **fields}
        self.api.call("POST", "/resource_providers/{uuid}/inventories", "1.14", body,
                      uuid=rp)

    def set_traits(self, rp: str, *traits: str) -> None:
        for name in traits:
            if name.startswith("CUSTOM_"):
                self.api.call("PUT", "/traits/{name}", "1.6", name=name)
        body = {"traits": list(traits),
                "resource_provider_generation": self.api.generation(rp)}
        self.api.call("PUT", "/resource_providers/{uuid}/traits", "1.6", body, uuid=rp)

    def set_allocation(self, rp: str, consumer: str, used: dict[str, int],
                       user: str, project: str) -> None:
        body = {"allocations": {rp: {"resources": used}}, "project_id": project,
                "user_id": user, "consumer_generation": None}
        self.api.call("PUT", "/allocations/{consumer}", "1.28", body, consumer=consumer)


class APIFixture(fixture.GabbiFixture):
    """Placement's APIFixture: the environment variables its gabbits read."""

    def start_fixture(self) -> None:
        for name in ("RP_UUID", "RP_NAME", "RP_UUID1", "RP_NAME1", "RP_UUID2", "RP_NAME2",
                     "PROJECT_ID", "ADMIN_PROJECT_ID", "SERVICE_PROJECT_ID", "USER_ID",
                     "PROJECT_ID_ALT", "USER_ID_ALT", "INSTANCE_UUID", "MIGRATION_UUID",
                     "CONSUMER_UUID", "PARENT_PROVIDER_UUID", "ALT_PARENT_PROVIDER_UUID"):
            os.environ[name] = new_uuid()
        os.environ["CUSTOM_RES_CLASS"] = "CUSTOM_IRON_NFV"
        os.environ["CUSTOM_RES_CLASS1"] = "CUSTOM_IRON_NFV1"
        os.environ["CUSTOM_RES_CLASS2"] = "CUSTOM_IRON_NFV2"
        self.api = Api()
        self.tb = Builder(self.api)

    def stop_fixture(self) -> None:
        self.api.close()


# Placement's policy and CORS fixtures configure middleware the server does not have.
class OpenPolicyFixture(APIFixture):
    """Placement's: every rule but admin_api opened to any caller."""


class SecureRBACPolicyFixture(APIFixture):
    """Placement's: the secure-RBAC defaults enforced."""


class LegacyRBACPolicyFixture(APIFixture):
    """Placement's: the deprecated (legacy) rules enforced."""


class CORSFixture(APIFixture):
    """Placement's: CORS allowed for http://valid.example.com."""


class AllocationFixture(APIFixture):
    """One provider (VCPU 10, DISK_GB 2048) and three consumers of two users."""

    def start_fixture(self) -> None:
        super().start_fixture()
        os.environ["ALT_USER_ID"] = new_uuid()
        project, user = os.environ["PROJECT_ID"], os.environ["USER_ID"]
        alt_user = os.environ["ALT_USER_ID"]
        rp = self.tb.create_provider(os.environ["RP_NAME"], uuid=os.environ["RP_UUID"])
        self.tb.add_inventory(rp, "DISK_GB", 2048, step_size=10, min_unit=10,
                              max_unit=1000)
        self.tb.add_inventory(rp, "VCPU", 10, max_unit=10)
        os.environ["CONSUMER_0"] = consumer1 = new_uuid()
        self.tb.set_allocation(rp, consumer1, {"DISK_GB": 1000}, user, project)
        os.environ["CONSUMER_ID"] = consumer2 = new_uuid()
        self.tb.set_allocation(rp, consumer2, {"VCPU": 6}, user, project)
        os.environ["ALT_CONSUMER_ID"] = alt_consumer = new_uuid()
        self.tb.set_allocation(rp, alt_consumer, {"DISK_GB": 20, "VCPU": 1}, alt_user,
                               project)
        os.environ["ALT_RP_UUID"] = new_uuid()
        os.environ["ALT_RP_NAME"] = new_uuid()


class SharedStorageFixture(APIFixture):
    """Two compute nodes with NUMA and PF children, two sharing storage providers, one
    aggregate."""

    def start_fixture(self) -> None:
        super().start_fixture()
        tb = self.tb
        agg = new_uuid()
        cn1, cn2 = tb.create_provider("cn1", agg), tb.create_provider("cn2", agg)
        ss, ss2 = tb.create_provider("ss", agg), tb.create_provider("ss2", agg)
        numa = {name: tb.create_provider(name, parent=parent) for name, parent in
                (("numa1_1", cn1), ("numa1_2", cn1), ("numa2_1", cn2), ("numa2_2", cn2))}
        pf = {f"pf{n[4:]}": tb.create_provider(f"pf{n[4:]}", parent=u)
              for n, u in numa.items()}
        os.environ.update({"AGG_UUID": agg, "CN1_UUID": cn1, "CN2_UUID": cn2,
                           "SS_UUID": ss, "SS2_UUID": ss2})
        os.environ.update({f"{n.upper()}_UUID": u for n, u in {**numa, **pf}.items()})
        for cn in (cn1, cn2):
            tb.add_inventory(cn, "VCPU", 24, allocation_ratio=16.0)
            tb.add_inventory(cn, "MEMORY_MB", 128 * 1024, allocation_ratio=1.5)
        tb.set_traits(cn1, "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2")
        tb.add_inventory(cn2, "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
        for shared in (ss, ss2):
            tb.add_inventory(shared, "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
            tb.set_traits(shared, MISC_SHARES)
        for device in pf.values():
            tb.add_inventory(device, "SRIOV_NET_VF", 8, allocation_ratio=1.0)


class NUMAAggregateFixture(APIFixture):
    """Two compute nodes without inventory, their NUMA children with VCPU, two sharing
    storage providers in three aggregates."""

    def start_fixture(self) -> None:
        super().start_fixture()
        tb = self.tb
        agg_a, agg_b, agg_c = new_uuid(), new_uuid(), new_uuid()
        cn1 = tb.create_provider("cn1", agg_a)
        cn2 = tb.create_provider("cn2", agg_a, agg_b)
        ss1, ss2 = tb.create_provider("ss1", agg_a), tb.create_provider("ss2", agg_c)
        numa1_1 = tb.create_provider("numa1_1", agg_c, parent=cn1)
        numa1_2 = tb.create_provider("numa1_2", parent=cn1)
        numa2_1 = tb.create_provider("numa2_1", parent=cn2)
        numa2_2 = tb.create_provider("numa2_2", parent=cn2)
        os.environ.update({
            "AGGA_UUID": agg_a, "AGGB_UUID": agg_b, "AGGC_UUID": agg_c, "CN1_UUID": cn1,
            "CN2_UUID": cn2, "SS1_UUID": ss1, "SS2_UUID": ss2, "NUMA1_1_UUID": numa1_1,
            "NUMA1_2_UUID": numa1_2, "NUMA2_1_UUID": numa2_1, "NUMA2_2_UUID": numa2_2})
        for numa in (numa1_1, numa1_2, numa2_1, numa2_2):
            tb.add_inventory(numa, "VCPU", 24, allocation_ratio=16.0)
        for ss in (ss1, ss2):
            tb.add_inventory(ss, "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
            tb.set_traits(ss, MISC_SHARES)


class NUMANetworkFixture(APIFixture):
    """Placement's NUMANetworkFixture: cn1 with NUMA nodes, devices and network agents,
    cn2 with NICs and PFs, a sharing storage provider (its docstring draws the tree)."""

    cn1: str | None = None
    cn2: str | None = None

    def start_fixture(self) -> None:
        super().start_fixture()
        self.make_entities()

    def make_entities(self) -> None:  # noqa: PLR0915 (one tree, drawn as Placement does)
        tb = self.tb
        agg_a = os.environ["AGGA_UUID"] = new_uuid()
        ss1 = os.environ["SS1_UUID"] = tb.create_provider("ss1", agg_a)
        tb.set_traits(ss1, MISC_SHARES)
        tb.add_inventory(ss1, "DISK_GB", 2000)

        cn1 = self.cn1 = self.cn1 or tb.create_provider("cn1", agg_a)
        tb.set_aggregates(cn1, agg_a)
        tb.set_traits(cn1, "COMPUTE_VOLUME_MULTI_ATTACH")
        os.environ["CN1_UUID"] = cn1
        numas = []
        for i in (0, 1):
            numa = tb.create_provider(f"numa{i}", parent=cn1)
            tb.set_traits(numa, "HW_NUMA_ROOT", *(["CUSTOM_FOO"] if i == 1 else []))
            tb.add_inventory(numa, "VCPU", 4)
            numas.append(numa)
            os.environ[f"NUMA{i}_UUID"] = numa
        tb.add_inventory(numas[0], "MEMORY_MB", 2048, min_unit=512, step_size=256)
        tb.add_inventory(numas[1], "MEMORY_MB", 2048, min_unit=256, max_unit=1024)
        user, project = "numafx-user", "numafx-project"
        tb.set_allocation(numas[0], new_uuid(), {"VCPU": 2}, user, project)

        fpga = os.environ["FPGA0_UUID"] = tb.create_provider("fpga0", parent=numas[0])
        tb.add_inventory(fpga, "FPGA", 1)
        pgpu = os.environ["PGPU0_UUID"] = tb.create_provider("pgpu0", parent=numas[0])
        tb.add_inventory(pgpu, "VGPU", 8)
        for i in (0, 1):
            fpga = tb.create_provider(f"fpga1_{i}", parent=numas[1])
            tb.add_inventory(fpga, "FPGA", 1)
            os.environ[f"FPGA1_{i}_UUID"] = fpga

        agent = tb.create_provider("sriov_agent", parent=cn1)
        tb.set_traits(agent, "CUSTOM_VNIC_TYPE_DIRECT")
        os.environ["SRIOV_AGENT_UUID"] = agent
        for i in (1, 2):
            dev = tb.create_provider(f"esn{i}", parent=agent)
            tb.set_traits(dev, f"CUSTOM_PHYSNET{i}")
            tb.add_inventory(dev, "NET_BW_EGR_KILOBIT_PER_SEC", 10000 * i)
            os.environ[f"ESN{i}_UUID"] = dev
        agent = tb.create_provider("ovs_agent", parent=cn1)
        tb.set_traits(agent, "CUSTOM_VNIC_TYPE_NORMAL")
        os.environ["OVS_AGENT_UUID"] = agent
        dev = tb.create_provider("br_int", parent=agent)
        tb.set_traits(dev, "CUSTOM_PHYSNET0")
        tb.add_inventory(dev, "NET_BW_EGR_KILOBIT_PER_SEC", 1000)
        os.environ["BR_INT_UUID"] = dev

        cn2 = self.cn2 = self.cn2 or tb.create_provider("cn2")
        tb.set_aggregates(cn2, agg_a)
        tb.add_inventory(cn2, "VCPU", 8)
        tb.set_allocation(cn2, new_uuid(), {"VCPU": 3}, user, project)
        tb.add_inventory(cn2, "MEMORY_MB", 2048, min_unit=1024, step_size=128)
        tb.add_inventory(cn2, "DISK_GB", 1000)
        tb.set_traits(cn2, "CUSTOM_FOO")
        os.environ["CN2_UUID"] = cn2
        nics = []
        for i in (1, 2, 3):
            nic = tb.create_provider(f"nic{i}", parent=cn2)
            tb.set_traits(nic, "CUSTOM_HW_NIC_ROOT")
            nics.append(nic)
            os.environ[f"NIC{i}_UUID"] = nic
        # (suffix, nic, physnet, VFs): two PFs on nic1, four on nic2, one on nic3.
        pfs = [(f"1_{i}", nics[0], i, 4) for i in (1, 2)]
        pfs += [(f"2_{i + 1}", nics[1], (i % 2) + 1, 2) for i in range(4)]
        pfs += [("3_1", nics[2], 1, 8)]
        for suffix, nic, physnet, vfs in pfs:
            pf = tb.create_provider(f"pf{suffix}", parent=nic)
            tb.set_traits(pf, f"CUSTOM_PHYSNET{physnet}")
            tb.add_inventory(pf, "CUSTOM_VF", vfs)
            os.environ[f"PF{suffix}_UUID"] = pf


class DeepNUMANetworkFixture(NUMANetworkFixture):
    """NUMANetworkFixture with cn1 and cn2 under parents p1, p2 and grandparent gp1."""

    def make_entities(self) -> None:
        tb = self.tb
        grandparent = tb.create_provider("gp1")
        parent1 = tb.create_provider("p1", parent=grandparent)
        parent2 = tb.create_provider("p2", parent=grandparent)
        self.cn1 = tb.create_provider("cn1", parent=parent1)
        self.cn2 = tb.create_provider("cn2", parent=parent2)
        super().make_entities()


class NonSharedStorageFixture(APIFixture):
    """Three compute nodes with VCPU, MEMORY_MB and DISK_GB, no aggregates."""

    def start_fixture(self) -> None:
        super().start_fixture()
        for name in ("AGGA_UUID", "AGGB_UUID", "AGGC_UUID"):
            os.environ[name] = new_uuid()
        computes = [self.tb.create_provider(f"cn{i}") for i in (1, 2, 3)]
        os.environ.update({f"CN{i}_UUID": cn for i, cn in enumerate(computes, 1)})
        for cn in computes:
            self.tb.add_inventory(cn, "VCPU", 24)
            self.tb.add_inventory(cn, "MEMORY_MB", 128 * 1024)
            self.tb.add_inventory(cn, "DISK_GB", 2000)


class GranularFixture(APIFixture):
    """Three compute nodes and three sharing providers in aggregates A, B and C
    (Placement's docstring draws them)."""

    def start_fixture(self) -> None:
        super().start_fixture()
        tb = self.tb
        tb.ensure_rc("CUSTOM_NET_MBPS")
        agg = {name: new_uuid() for name in ("AGGA", "AGGB", "AGGC")}
        os.environ.update(agg)
        a, b, c = agg["AGGA"], agg["AGGB"], agg["AGGC"]

        left = os.environ["CN_LEFT"] = tb.create_provider("cn_left", a)
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500), ("VGPU", 8),
                          ("SRIOV_NET_VF", 8), ("CUSTOM_NET_MBPS", 4000)):
            tb.add_inventory(left, rc, total)
        tb.set_traits(left, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_GPU_API_DXVA",
                      "HW_NIC_DCB_PFC", "CUSTOM_FOO")

        middle = os.environ["CN_MIDDLE"] = tb.create_provider("cn_middle", a, b)
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("SRIOV_NET_VF", 8),
                          ("CUSTOM_NET_MBPS", 4000)):
            tb.add_inventory(middle, rc, total)
        tb.set_traits(middle, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE",
                      "HW_NIC_ACCEL_TLS")

        right = os.environ["CN_RIGHT"] = tb.create_provider("cn_right", b, c)
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500)):
            tb.add_inventory(right, rc, total)
        tb.add_inventory(right, "VGPU", 8, max_unit=2)
        tb.set_traits(right, "HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD")

        disk1 = os.environ["SHR_DISK_1"] = tb.create_provider("shr_disk_1", a)
        tb.add_inventory(disk1, "DISK_GB", 1000)
        tb.set_traits(disk1, MISC_SHARES, "CUSTOM_DISK_SSD")
        disk2 = os.environ["SHR_DISK_2"] = tb.create_provider("shr_disk_2", a, b)
        tb.add_inventory(disk2, "DISK_GB", 1000)
        tb.set_traits(disk2, MISC_SHARES)
        net = os.environ["SHR_NET"] = tb.create_provider("shr_net", c)
        tb.add_inventory(net, "SRIOV_NET_VF", 16)
        tb.add_inventory(net, "CUSTOM_NET_MBPS", 40000)
        tb.set_traits(net, MISC_SHARES)


class NeutronQoSMultiSegmentFixture(APIFixture):
    """Four compute trees as Neutron's QoS minimum bandwidth and packet rate make them on
    multi-segment networks (Placement's fixture draws one)."""

    def start_fixture(self) -> None:
        super().start_fixture()
        for n, physnet in enumerate(("CUSTOM_PHYSNET_OTHER", "CUSTOM_PHYSNET_MSN_S1",
                                     "CUSTOM_PHYSNET_MSN_S2")):
            self.make_compute(n, bridges=[("br-ex", "br_ex", physnet, 5000)],
                              pfs=[("enp129s0f0", "pf0", physnet, 10000)])
        # compute3 reaches both segments with little bandwidth; Placement's fixture stores
        # compute2's SR-IOV agent under compute3's name, which is kept.
        self.make_compute(3, bridges=[("br-ex", "br_ex", "CUSTOM_PHYSNET_MSN_S1", 1000),
                                      ("br-ex2", "br_ex2", "CUSTOM_PHYSNET_MSN_S2", 1000)],
                          pfs=[("enp129s0f0", "pf0", "CUSTOM_PHYSNET_MSN_S1", 1000),
                               ("enp129s0f1", "pf1", "CUSTOM_PHYSNET_MSN_S2", 1000)],
                          sriov_env="compute2:sriov_agent")

    def make_compute(self, n: int, bridges: list[tuple[str, str, str, int]],
                     pfs: list[tuple[str, str, str, int]], sriov_env: str | None = None
                     ) -> None:
        tb, name = self.tb, f"compute{n}"
        vnics = ("CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL",
                 "CUSTOM_VNIC_TYPE_MACVTAP")
        compute = os.environ[name] = tb.create_provider(name)
        for rc, total in (("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500)):
            tb.add_inventory(compute, rc, total)
        ovs = tb.create_provider(f"{name}:Open vSwitch agent", parent=compute)
        os.environ[f"{name}:ovs_agent"] = ovs
        tb.add_inventory(ovs, "NET_PACKET_RATE_KILOPACKET_PER_SEC", 1000)
        tb.set_traits(ovs, "CUSTOM_VNIC_TYPE_NORMAL")
        for bridge, key, physnet, bandwidth in bridges:
            br = tb.create_provider(f"{name}:Open vSwitch agent:{bridge}", parent=ovs)
            os.environ[f"{name}:{key}"] = br
            tb.add_inventory(br, "NET_BW_EGR_KILOBIT_PER_SEC", bandwidth)
            tb.add_inventory(br, "NET_BW_IGR_KILOBIT_PER_SEC", bandwidth)
            tb.set_traits(br, "CUSTOM_VNIC_TYPE_NORMAL", physnet)
        sriov = tb.create_provider(f"{name}:NIC Switch agent", parent=compute)
        os.environ[f"{name}:sriov_agent"] = (
            os.environ[sriov_env] if sriov_env else sriov)
        tb.set_traits(sriov, *vnics)
        for device, key, physnet, bandwidth in pfs:
            pf = tb.create_provider(f"{name}:NIC Switch agent:{device}", parent=sriov)
            os.environ[f"{name}:{key}"] = pf
            tb.add_inventory(pf, "NET_BW_EGR_KILOBIT_PER_SEC", bandwidth)
            tb.add_inventory(pf, "NET_BW_IGR_KILOBIT_PER_SEC", bandwidth)
            tb.set_traits(pf, *vnics, physnet)
