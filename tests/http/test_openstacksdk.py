"""openstacksdk's placement proxy drives the server (``auth_type="none"`` and an endpoint):
a provider tree, inventories with their generations, resource classes, deletes."""

from __future__ import annotations

from uuid import uuid4

import openstack
import pytest


def test_openstacksdk_placement_proxy(server_port: int) -> None:
    conn = openstack.connection.Connection(
        auth_type="none", auth={"endpoint": f"http://127.0.0.1:{server_port}"},
        placement_api_version="1.39")
    placement = conn.placement
    tag = uuid4().hex[:8]
    host = placement.create_resource_provider(name=f"sdk-host-{tag}")
    numa = placement.create_resource_provider(name=f"sdk-numa-{tag}",
                                              parent_provider_id=host.id)
    assert (numa.parent_provider_id, numa.root_provider_id) == (host.id, host.id)
    vcpu = placement.create_resource_provider_inventory(host, resource_class="VCPU", total=8)
    # registered 0, child attached (not counted, as in Placement), inventory 1
    assert (vcpu.total, vcpu.resource_provider_generation) == (8, 1)
    vcpu = placement.update_resource_provider_inventory(
        vcpu, host, total=16, resource_provider_generation=1)
    assert (vcpu.total, vcpu.resource_provider_generation) == (16, 2)
    with pytest.raises(openstack.exceptions.ConflictException):
        placement.update_resource_provider_inventory("VCPU", host, total=4,
                                                     resource_provider_generation=1)
    assert [(i.resource_class, i.total)
            for i in placement.resource_provider_inventories(host)] == [("VCPU", 16)]
    assert placement.get_resource_provider(host.id).generation == 2
    placement.create_resource_class(name=f"CUSTOM_SDK_{tag.upper()}")
    assert "VCPU" in {rc.name for rc in placement.resource_classes()}
    with pytest.raises(openstack.exceptions.ConflictException):
        placement.delete_resource_provider(host)
    placement.delete_resource_provider(numa)
    assert [p.name for p in placement.resource_providers(in_tree=host.id)] == [
        f"sdk-host-{tag}"]


def test_openstacksdk_traits_and_aggregates(server_port: int) -> None:
    conn = openstack.connection.Connection(
        auth_type="none", auth={"endpoint": f"http://127.0.0.1:{server_port}"},
        placement_api_version="1.39")
    placement = conn.placement
    tag = uuid4().hex[:8].upper()
    trait = f"CUSTOM_SDK_{tag}"
    placement.create_trait(trait)
    assert placement.get_trait(trait).id == trait  # 204: the name is the id it asked for
    names = {t.name for t in placement.traits()}
    assert trait in names and "HW_CPU_X86_AVX2" in names
    host = placement.create_resource_provider(name=f"sdk-traits-{tag}")
    agg = str(uuid4())
    placement.set_resource_provider_aggregates(host, agg)
    assert placement.fetch_resource_provider_aggregates(host).aggregates == [agg]
    placement.delete_trait(trait)
    with pytest.raises(openstack.exceptions.NotFoundException):
        placement.get_trait(trait)
