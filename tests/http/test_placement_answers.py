"""Placement's answers where the ledger's used to differ (issue 27): lost updates, error
texts, resource classes, headers and the server's limits, against a real server."""

from __future__ import annotations

import http.client
from uuid import uuid4

from tests.http.server import Client
from tests.http.world import LATEST, build, claim


def _empty(generation: int | None) -> dict[str, object]:
    return {"allocations": {}, "project_id": "p", "user_id": "u",
            "consumer_generation": generation, "consumer_type": "INSTANCE"}


def test_emptying_a_holding_consumer_with_a_null_generation_is_a_conflict(
        client: Client) -> None:
    """Placement: ``consumer generation conflict - expected 1 but got None`` (409); the
    consumer keeps what it holds."""
    world = build(client)
    answer = client.call("PUT", f"/allocations/{world.vm}", _empty(None), LATEST)
    assert answer.status == 409, answer
    assert answer.code == "placement.concurrent_update"
    assert "consumer generation conflict" in answer.body["errors"][0]["detail"]
    held = client.call("GET", f"/allocations/{world.vm}", version=LATEST).body
    assert held["allocations"][world.host]["resources"] == {"VCPU": 2, "MEMORY_MB": 512}


def test_emptying_an_absent_consumer_with_a_null_generation_changes_nothing(
        client: Client) -> None:
    answer = client.call("PUT", f"/allocations/{uuid4()}", _empty(None), LATEST)
    assert answer.status == 204, answer


def test_post_allocations_with_a_stale_emptying_entry_writes_nothing(client: Client) -> None:
    """The whole request fails (409): the other consumer is not written either."""
    world = build(client)
    other = str(uuid4())
    body = {
        world.vm: _empty(None),
        other: {"allocations": {world.host: {"resources": {"VCPU": 1}}}, "project_id": "p",
                "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"},
    }
    answer = client.call("POST", "/allocations", body, LATEST)
    assert answer.status == 409, answer
    assert "consumer generation conflict" in answer.body["errors"][0]["detail"]
    assert client.call("GET", f"/allocations/{other}", version=LATEST).body == {
        "allocations": {}}
    assert client.call("GET", f"/allocations/{world.vm}", version=LATEST).body[
        "allocations"][world.host]["resources"] == {"VCPU": 2, "MEMORY_MB": 512}


def test_post_allocations_with_an_absent_emptying_entry_writes_the_others(
        client: Client) -> None:
    world = build(client)
    other = str(uuid4())
    assert claim(client, other, world.host, None, VCPU=1) == 204
    body = {str(uuid4()): _empty(None), other: _empty(1)}
    answer = client.call("POST", "/allocations", body, LATEST)
    assert answer.status == 204, answer
    assert client.call("GET", f"/allocations/{other}", version=LATEST).body == {
        "allocations": {}}


def test_error_texts_are_placements_where_clients_read_them(client: Client) -> None:
    """Nova matches ``consumer generation conflict``; the gabbits ``would exceed the
    capacity`` and ``that does not exist``; the ledger's numbers follow."""
    world = build(client)
    stale = client.call("PUT", f"/allocations/{world.vm}", {
        "allocations": {world.host: {"resources": {"VCPU": 1}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": 7, "consumer_type": "INSTANCE"}, LATEST)
    assert stale.status == 409 and stale.code == "placement.concurrent_update"
    assert stale.body["errors"][0]["detail"].startswith(
        "consumer generation conflict - expected 1 but got 7")
    new = client.call("PUT", f"/allocations/{uuid4()}", {
        "allocations": {world.host: {"resources": {"VCPU": 1}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": 5, "consumer_type": "INSTANCE"}, LATEST)
    assert new.body["errors"][0]["detail"].startswith(
        "consumer generation conflict - expected null but got 5")
    too_much = client.call("PUT", f"/allocations/{uuid4()}", {
        "allocations": {world.host: {"resources": {"VCPU": 7}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}, LATEST)
    assert too_much.status == 409, too_much
    assert too_much.body["errors"][0]["detail"] == (
        "Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource "
        f"provider '{world.host}'. The requested amount would exceed the capacity. "
        "(7 requested, 2 used of capacity 8, 6 free)")
    absent = client.call("PUT", f"/allocations/{uuid4()}", {
        "allocations": {world.absent: {"resources": {"VCPU": 1}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}, LATEST)
    assert absent.status == 400
    assert (f"Allocation for resource provider '{world.absent}' that does not exist."
            in absent.body["errors"][0]["detail"])
    in_use = client.call("DELETE", f"/resource_providers/{world.host}")
    assert in_use.body["errors"][0]["detail"].startswith(
        f"Unable to delete resource provider {world.host}: Resource provider has "
        "allocations.")
    bad = client.call("PUT", f"/allocations/{uuid4()}", {"allocations": 3}, LATEST)
    assert bad.status == 400 and bad.body["errors"][0]["detail"].startswith(
        "JSON does not validate")


def _class_name() -> str:
    return f"CUSTOM_{uuid4().hex.upper()}"


def test_a_custom_class_exists_once_created_and_until_deleted(client: Client) -> None:
    name = _class_name()
    assert client.call("GET", f"/resource_classes/{name}", version="1.2").status == 404
    created = client.call("POST", "/resource_classes", {"name": name}, "1.2")
    assert created.status == 201 and created.headers["location"].endswith(
        f"/resource_classes/{name}")
    again = client.call("POST", "/resource_classes", {"name": name}, "1.2")
    assert again.status == 409, again
    assert "Conflicting resource class already exists" in again.body["errors"][0]["detail"]
    assert client.call("GET", f"/resource_classes/{name}", version="1.2").status == 200
    listed = client.call("GET", "/resource_classes", version="1.2").body["resource_classes"]
    assert name in [c["name"] for c in listed]
    assert client.call("DELETE", f"/resource_classes/{name}", version="1.2").status == 204
    assert client.call("GET", f"/resource_classes/{name}", version="1.2").status == 404
    assert client.call("DELETE", f"/resource_classes/{name}", version="1.2").status == 404
    # created again on the same stream
    assert client.call("PUT", f"/resource_classes/{name}", version="1.7").status == 201
    assert client.call("PUT", f"/resource_classes/{name}", version="1.7").status == 204


def test_an_inventory_needs_its_custom_class_and_holds_it(client: Client) -> None:
    world = build(client)
    name = _class_name()
    generation = client.call("GET", f"/resource_providers/{world.leaf}").body["generation"]
    inventories = {"resource_provider_generation": generation,
                   "inventories": {name: {"total": 4}}}
    unknown = client.call("PUT", f"/resource_providers/{world.leaf}/inventories", inventories)
    assert unknown.status == 400, unknown
    assert f"No such resource class {name}" in unknown.body["errors"][0]["detail"]
    one = client.call("POST", f"/resource_providers/{world.leaf}/inventories",
                      {"resource_class": name, "total": 4})
    assert one.status == 400, one
    assert client.call("PUT", f"/resource_classes/{name}", version="1.7").status == 201
    assert client.call("PUT", f"/resource_providers/{world.leaf}/inventories",
                       inventories).status == 200
    in_use = client.call("DELETE", f"/resource_classes/{name}", version="1.2")
    assert in_use.status == 409, in_use
    assert "Class is in use in inventory" in in_use.body["errors"][0]["detail"]


def test_a_custom_class_is_renamed_before_1_7(client: Client) -> None:
    old, new = _class_name(), _class_name()
    assert client.call("POST", "/resource_classes", {"name": old}, "1.2").status == 201
    renamed = client.call("PUT", f"/resource_classes/{old}", {"name": new}, "1.6")
    assert renamed.status == 200, renamed
    assert renamed.body["name"] == new
    assert client.call("GET", f"/resource_classes/{old}", version="1.6").status == 404
    assert client.call("GET", f"/resource_classes/{new}", version="1.6").status == 200
    standard = client.call("PUT", "/resource_classes/VCPU", {"name": new}, "1.6")
    assert standard.status == 400
    taken = client.call("PUT", f"/resource_classes/{_class_name()}", {"name": new}, "1.6")
    assert taken.status == 404


def test_a_consumer_written_before_1_38_is_of_unknown_type(client: Client) -> None:
    world = build(client)
    project, vm = str(uuid4()), str(uuid4())
    written = client.call("PUT", f"/allocations/{vm}", {
        "allocations": {world.host: {"resources": {"VCPU": 1}}}, "project_id": project,
        "user_id": "u", "consumer_generation": None}, "1.37")
    assert written.status == 204, written
    assert client.call("GET", f"/allocations/{vm}", version=LATEST).body[
        "consumer_type"] == "unknown"
    assert claim(client, str(uuid4()), world.host, None, project, VCPU=2) == 204
    q = f"/usages?project_id={project}"
    assert client.call("GET", q, version=LATEST).body == {"usages": {
        "unknown": {"VCPU": 1, "consumer_count": 1},
        "INSTANCE": {"VCPU": 2, "consumer_count": 1}}}
    assert client.call("GET", f"{q}&consumer_type=all", version=LATEST).body == {
        "usages": {"all": {"VCPU": 3, "consumer_count": 2}}}
    assert client.call("GET", f"{q}&consumer_type=unknown", version=LATEST).body == {
        "usages": {"unknown": {"VCPU": 1, "consumer_count": 1}}}
    lower = client.call("PUT", f"/allocations/{uuid4()}", {
        "allocations": {world.host: {"resources": {"VCPU": 1}}}, "project_id": project,
        "user_id": "u", "consumer_generation": None, "consumer_type": "unknown"}, LATEST)
    assert lower.status == 400, lower


def test_malformed_uuids_in_paths_answer_as_placement(client: Client) -> None:
    provider = client.call("GET", "/resource_providers/not-a-uuid")
    assert provider.status == 404 and provider.code == "placement.resource_provider.not_found"
    assert client.call("GET", "/resource_providers/not-a-uuid/inventories").status == 404
    assert client.call("GET", "/allocations/not-a-uuid").body == {"allocations": {}}
    assert client.call("DELETE", "/allocations/not-a-uuid").status == 404


def test_ids_and_names_are_bounded_as_placement_bounds_them(client: Client) -> None:
    world = build(client)
    long_id = "p" * 256
    for key in ("project_id", "user_id"):
        body = {"allocations": {world.host: {"resources": {"VCPU": 1}}}, "project_id": "p",
                "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE",
                key: long_id}
        answer = client.call("PUT", f"/allocations/{uuid4()}", body, LATEST)
        assert answer.status == 400 and "maxLength" in answer.body["errors"][0]["detail"]
        usages = client.call("GET", f"/usages?project_id=p&{key}={long_id}", version="1.9")
        assert usages.status == 400, usages
    assert client.call("GET", "/usages?project_id=", version="1.9").status == 400
    named = client.call("POST", "/resource_providers", {"name": "n" * 201}, "1.20")
    assert named.status == 400 and "maxLength" in named.body["errors"][0]["detail"]
    assert client.call("POST", "/resource_providers", {"name": "n" * 190 + uuid4().hex[:10]},
                       "1.20").status == 200


def test_reads_say_no_cache_and_last_modified_from_1_15(client: Client) -> None:
    world = build(client)
    for path in ("/", f"/resource_providers/{world.host}", "/resource_classes",
                 f"/allocations/{world.vm}", f"/resource_providers/{world.host}/usages"):
        new = client.call("GET", path, version="1.15")
        assert new.headers["cache-control"] == "no-cache", path
        assert new.headers["last-modified"].endswith(" GMT"), path
        old = client.call("GET", path, version="1.14")
        assert "cache-control" not in old.headers and "last-modified" not in old.headers


def test_content_negotiation_as_placement(client: Client) -> None:
    # the refusal is in a media type the client takes, as webob answers Placement's
    # (test_placement_fidelity.py): plain text here
    conn = http.client.HTTPConnection("127.0.0.1", client.port, timeout=60)
    conn.request("GET", "/resource_providers", headers={"Accept": "text/plain"})
    refused = conn.getresponse()
    assert refused.status == 406
    assert refused.getheader("content-type", "").startswith("text/plain")
    assert b"Only application/json is provided" in refused.read()
    conn.close()
    for accept in ("application/json", "*/*", "text/html, application/*;q=0.5"):
        assert client.call("GET", "/resource_providers",
                           headers={"Accept": accept}).status == 200, accept
    conn = http.client.HTTPConnection("127.0.0.1", client.port, timeout=60)
    conn.request("GET", "/resource_providers", headers={"Accept": "application/json;q=0"})
    assert conn.getresponse().status == 406
    conn.close()
    not_json = client.call("POST", "/resource_providers", b'{"name": "x"}',
                           headers={"Content-Type": "text/plain"})
    assert not_json.status == 415, not_json
    assert ("The media type text/plain is not supported, use application/json"
            in not_json.body["errors"][0]["detail"])


def test_405_allows_every_method_of_the_path(client: Client) -> None:
    answer = client.call("PATCH", f"/resource_providers/{uuid4()}")
    assert answer.status == 405
    assert answer.headers["allow"] == "GET, PUT, DELETE"
    assert client.call("PATCH", "/resource_providers").headers["allow"] == "GET, POST"


def test_locations_are_absolute_as_placement_answers_them(client: Client) -> None:
    """Placement sets a path; webob sends it absolute (its inventory gabbits match
    ``$SCHEME://$NETLOC/...``)."""
    uuid = str(uuid4())
    created = client.call("POST", "/resource_providers", {"name": f"n-{uuid}", "uuid": uuid},
                          "1.19")
    assert created.headers["location"] == (
        f"http://127.0.0.1:{client.port}/resource_providers/{uuid}")


def test_allocating_a_class_that_does_not_exist_is_400_as_placement(client: Client) -> None:
    world = build(client)
    name = _class_name()
    body = {"allocations": {world.host: {"resources": {name: 1}}}, "project_id": "p",
            "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}
    unknown = client.call("PUT", f"/allocations/{uuid4()}", body, LATEST)
    assert unknown.status == 400, unknown
    assert f"No such resource class {name}" in unknown.body["errors"][0]["detail"]
    assert client.call("PUT", f"/resource_classes/{name}", version="1.7").status == 201
    not_there = client.call("PUT", f"/allocations/{uuid4()}", body, LATEST)
    assert not_there.status == 409, not_there
    assert f"Inventory for '{name}' on resource provider '{world.host}' invalid" in (
        not_there.body["errors"][0]["detail"])


def test_schema_refusals_name_the_keyword_as_jsonschema_does(client: Client) -> None:
    world = build(client)
    generation = client.call("GET", f"/resource_providers/{world.leaf}").body["generation"]
    zero = client.call("POST", f"/resource_providers/{world.leaf}/inventories", {
        "resource_class": "DISK_GB", "total": 0,
        "resource_provider_generation": generation})
    assert zero.status == 400
    assert ("JSON does not validate: 0 is less than the minimum of 1" in
            zero.body["errors"][0]["detail"])
    assert ("Failed validating 'minimum' in schema['properties']['total']" in
            zero.body["errors"][0]["detail"])
    missing = client.call("PUT", f"/allocations/{uuid4()}", {
        "allocations": {world.host: {"resources": {"VCPU": 1}}}}, "1.8")
    assert "Failed validating 'required' in schema" in missing.body["errors"][0]["detail"]
    reserved = client.call("POST", f"/resource_providers/{world.leaf}/inventories", {
        "resource_class": "DISK_GB", "total": 8, "reserved": 8})
    assert reserved.status == 400 and (
        f"Unable to create inventory for resource provider {world.leaf}" in
        reserved.body["errors"][0]["detail"])
    assert "greater than or equal to total" in reserved.body["errors"][0]["detail"]


def test_post_allocations_empties_a_consumer_before_1_28(client: Client) -> None:
    world = build(client)
    answer = client.call("POST", "/allocations", {world.vm: {
        "allocations": {}, "project_id": "p", "user_id": "u"}}, "1.13")
    assert answer.status == 204, answer
    assert client.call("GET", f"/allocations/{world.vm}").body == {"allocations": {}}


def test_an_unknown_path_and_a_body_without_type_answer_as_placement(client: Client) -> None:
    unknown = client.call("GET", f"/resource_providers/{uuid4()}/cows")
    assert unknown.status == 404
    assert unknown.body["errors"][0]["detail"] == "The resource could not be found."
    untyped = client.call("POST", "/resource_providers", b"I want a resource provider",
                          headers={"Content-Type": ""})
    assert untyped.status == 400, untyped
    assert untyped.body["errors"][0]["detail"] == "content-type header required"
    no_body = client.call("PUT", f"/resource_providers/{uuid4()}")
    assert no_body.status == 415, no_body
    assert client.call("DELETE", "/").headers["allow"] == "GET"


def test_an_inventory_location_is_absolute_as_placement_answers_it(client: Client) -> None:
    world = build(client)
    generation = client.call("GET", f"/resource_providers/{world.leaf}").body["generation"]
    created = client.call("POST", f"/resource_providers/{world.leaf}/inventories", {
        "resource_class": "DISK_GB", "total": 10, "resource_provider_generation": generation})
    assert created.status == 201, created
    assert created.headers["location"] == (
        f"http://127.0.0.1:{client.port}/resource_providers/{world.leaf}/inventories/DISK_GB")
