"""Placement's answers where the ledger's used to differ (issue 27): lost updates, error
texts, resource classes, headers and the server's limits, against a real server."""

from __future__ import annotations

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
