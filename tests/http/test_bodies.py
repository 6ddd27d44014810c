"""What the bodies hold at each microversion, and the generation rules over HTTP."""

from __future__ import annotations

from uuid import uuid4

import pytest

from tests.http.server import Client
from tests.http.world import LATEST, build, claim, inventory, provider

CONSUMER_KEYS = {
    "1.11": set(),
    "1.12": {"project_id", "user_id"},
    "1.27": {"project_id", "user_id"},
    "1.28": {"project_id", "user_id", "consumer_generation"},
    "1.37": {"project_id", "user_id", "consumer_generation"},
    "1.38": {"project_id", "user_id", "consumer_generation", "consumer_type"},
}


@pytest.mark.parametrize(("version", "keys"), CONSUMER_KEYS.items())
def test_consumer_allocations_show_more_from_1_12_1_28_1_38(
        client: Client, version: str, keys: set[str]) -> None:
    world = build(client)
    body = client.call("GET", f"/allocations/{world.vm}", version=version).body
    assert set(body) - {"allocations"} == keys
    host_generation = client.call("GET", f"/resource_providers/{world.host}").body["generation"]
    assert body["allocations"] == {world.host: {
        "generation": host_generation, "resources": {"VCPU": 2, "MEMORY_MB": 512}}}
    assert body.get("consumer_generation", 1) == 1
    assert body.get("consumer_type", "INSTANCE") == "INSTANCE"


def test_a_consumer_with_nothing_shows_only_empty_allocations(client: Client) -> None:
    assert client.call("GET", f"/allocations/{uuid4()}", version=LATEST).body == {
        "allocations": {}}


def test_generations_count_on_after_a_consumer_is_emptied(client: Client) -> None:
    """DESIGN: an emptied consumer keeps its stream; it is written again as new (null) and
    its generation keeps counting (Placement would start again at 1)."""
    world = build(client)
    vm = str(uuid4())
    assert claim(client, vm, world.host, None, VCPU=1) == 204
    assert claim(client, vm, world.host, 1, VCPU=2) == 204
    assert client.call("GET", f"/allocations/{vm}", version=LATEST).body[
        "consumer_generation"] == 2
    emptied = client.call("PUT", f"/allocations/{vm}", {
        "allocations": {}, "project_id": "p", "user_id": "u", "consumer_generation": 2,
        "consumer_type": "INSTANCE"}, LATEST)
    assert emptied.status == 204
    assert client.call("GET", f"/allocations/{vm}", version=LATEST).body == {"allocations": {}}
    assert claim(client, vm, world.host, 3, VCPU=1) == 409
    assert claim(client, vm, world.host, None, VCPU=1) == 204
    assert client.call("GET", f"/allocations/{vm}", version=LATEST).body[
        "consumer_generation"] == 4


def test_post_allocations_is_all_or_nothing(client: Client) -> None:
    world = build(client)
    fits, too_big = str(uuid4()), str(uuid4())
    body = {c: {"allocations": {world.host: {"resources": {"VCPU": n}}}, "project_id": "p",
                "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}
            for c, n in ((fits, 1), (too_big, 6))}
    refused = client.call("POST", "/allocations", body, LATEST)
    assert refused.status == 409
    for consumer in (fits, too_big):
        assert client.call("GET", f"/allocations/{consumer}").body == {"allocations": {}}
    body[too_big]["allocations"][world.host]["resources"]["VCPU"] = 5
    assert client.call("POST", "/allocations", body, LATEST).status == 204
    usages = client.call("GET", f"/resource_providers/{world.host}/usages").body["usages"]
    assert usages == {"VCPU": 8, "MEMORY_MB": 512}


def test_a_provider_shows_its_consumers_and_usages(client: Client) -> None:
    world = build(client)
    other = str(uuid4())
    assert claim(client, other, world.host, None, VCPU=3) == 204
    at_127 = client.call("GET", f"/resource_providers/{world.host}/allocations", version="1.27")
    at_128 = client.call("GET", f"/resource_providers/{world.host}/allocations", version="1.28")
    generation = client.call("GET", f"/resource_providers/{world.host}").body["generation"]
    assert at_127.body == {"resource_provider_generation": generation, "allocations": {
        world.vm: {"resources": {"VCPU": 2, "MEMORY_MB": 512}},
        other: {"resources": {"VCPU": 3}}}}
    assert at_128.body["allocations"][other] == {"resources": {"VCPU": 3},
                                                 "consumer_generation": 1}
    usages = client.call("GET", f"/resource_providers/{world.host}/usages").body
    assert usages == {"resource_provider_generation": generation,
                      "usages": {"VCPU": 5, "MEMORY_MB": 512}}


def test_project_usages_as_nova_counts_quotas(client: Client) -> None:
    world = build(client)
    project, user = str(uuid4()), str(uuid4())
    assert claim(client, str(uuid4()), world.host, None, project, user, VCPU=1) == 204
    assert claim(client, str(uuid4()), world.host, None, project, user, VCPU=2,
                 MEMORY_MB=256) == 204
    assert claim(client, str(uuid4()), world.host, None, project, "someone", "BAREMETAL",
                 VCPU=1) == 204
    q = f"/usages?project_id={project}"
    assert client.call("GET", q, version="1.9").body == {
        "usages": {"VCPU": 4, "MEMORY_MB": 256}}
    assert client.call("GET", f"{q}&user_id={user}", version="1.9").body == {
        "usages": {"VCPU": 3, "MEMORY_MB": 256}}
    assert client.call("GET", q, version="1.38").body == {"usages": {
        "INSTANCE": {"VCPU": 3, "MEMORY_MB": 256, "consumer_count": 2},
        "BAREMETAL": {"VCPU": 1, "consumer_count": 1}}}
    assert client.call("GET", f"{q}&consumer_type=BAREMETAL", version="1.38").body == {
        "usages": {"BAREMETAL": {"VCPU": 1, "consumer_count": 1}}}


def test_providers_list_filters_and_tree_fields(client: Client) -> None:
    world = build(client)
    in_tree = client.call("GET", f"/resource_providers?in_tree={world.numa}", version="1.14")
    assert sorted(p["uuid"] for p in in_tree.body["resource_providers"]) == sorted(
        [world.host, world.numa])
    numa = next(p for p in in_tree.body["resource_providers"] if p["uuid"] == world.numa)
    assert (numa["parent_provider_uuid"], numa["root_provider_uuid"]) == (world.host,
                                                                          world.host)
    by_uuid = client.call("GET", f"/resource_providers?uuid={world.leaf}", version="1.13")
    assert [set(p) for p in by_uuid.body["resource_providers"]] == [
        {"uuid", "name", "generation", "links"}]
    name = by_uuid.body["resource_providers"][0]["name"]
    by_name = client.call("GET", f"/resource_providers?name={name}").body
    assert [p["uuid"] for p in by_name["resource_providers"]] == [world.leaf]


def test_create_before_1_20_answers_a_location_only(client: Client) -> None:
    uuid = str(uuid4())
    answer = client.call("POST", "/resource_providers", {"name": uuid, "uuid": uuid}, "1.19")
    assert (answer.status, answer.body) == (201, None)
    assert answer.headers["location"].endswith(f"/resource_providers/{uuid}")


def test_inventory_generation_round_trip(client: Client) -> None:
    rp = provider(client, f"rp-{uuid4()}")
    generation = inventory(client, rp, VCPU=4)
    one = client.call("PUT", f"/resource_providers/{rp}/inventories/VCPU",
                      {"resource_provider_generation": generation, "total": 6,
                       "allocation_ratio": 2.0})
    assert one.status == 200
    assert one.body == {"total": 6, "reserved": 0, "min_unit": 1, "max_unit": 2147483647,
                        "step_size": 1, "allocation_ratio": 2.0,
                        "resource_provider_generation": generation + 1}
    stale = client.call("PUT", f"/resource_providers/{rp}/inventories/VCPU",
                        {"resource_provider_generation": generation, "total": 7})
    assert stale.code == "placement.concurrent_update"
    assert client.call("GET", f"/resource_providers/{rp}/inventories/VCPU").body[
        "total"] == 6


def test_request_id_and_actor_are_stored_on_the_events(client: Client) -> None:
    world = build(client)
    given = f"req-{uuid4()}"
    answer = client.call("PUT", f"/allocations/{world.vm}", {
        "allocations": {world.host: {"resources": {"VCPU": 1}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": 1, "consumer_type": "INSTANCE"}, LATEST,
        headers={"X-OpenStack-Request-ID": given})
    assert (answer.status, answer.headers["x-openstack-request-id"]) == (204, given)
    entries = client.call("GET", f"/ledger/history/consumer/{world.vm}").body["history"]
    assert [(e["actor"], e["request_id"]) for e in entries][-1] == ("anonymous", given)
    assert entries[0]["request_id"] != given


def test_a_renamed_provider_is_listed_and_its_history_says_so(client: Client) -> None:
    world = build(client)
    new_name = f"renamed-{uuid4()}"
    answer = client.call("PUT", f"/resource_providers/{world.leaf}", {"name": new_name})
    assert (answer.status, answer.body["name"]) == (200, new_name)
    listed = client.call("GET", f"/resource_providers?name={new_name}").body
    assert [p["uuid"] for p in listed["resource_providers"]] == [world.leaf]
    history = client.call("GET", f"/ledger/history/provider/{world.leaf}").body["history"]
    assert history[-1]["event"] == "Provider.Renamed"
    assert history[-1]["changes"]["name"][1] == new_name
