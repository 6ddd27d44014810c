"""``Idempotency-Key`` over HTTP: the header is the ledger's command id, so a retried
request is answered with what the first did and appends nothing, a key sent again with
another request is refused, and ``/ledger/commands/{key}`` says what became of it."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from tests.http.server import Client
from tests.http.world import LATEST, build


def put(client: Client, vm: str, host: str, vcpu: int, key: str) -> int:
    return client.call("PUT", f"/allocations/{vm}", {
        "allocations": {host: {"resources": {"VCPU": vcpu}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"},
        LATEST, headers={"Idempotency-Key": key}).status


def state(client: Client, vm: str, host: str) -> tuple[Any, Any, Any]:
    allocations = client.call("GET", f"/allocations/{vm}", version=LATEST).body
    usages = client.call("GET", f"/resource_providers/{host}/usages").body["usages"]
    return allocations["consumer_generation"], allocations["allocations"], usages["VCPU"]


def test_a_retried_request_is_answered_and_applied_once(client: Client) -> None:
    world = build(client)
    vm, key = str(uuid4()), f"nova-{uuid4()}"
    unknown = client.call("GET", f"/ledger/commands/{key}").body
    assert unknown["applied"] is False
    assert put(client, vm, world.host, 1, key) == 204
    first = state(client, vm, world.host)
    generation, allocations, used = first
    assert (generation, allocations[world.host]["resources"], used) == (1, {"VCPU": 1}, 3)
    # The same request again (a client retrying after a lost reply): not a conflict on the
    # now-stale consumer_generation null, and nothing appended.
    assert put(client, vm, world.host, 1, key) == 204
    assert state(client, vm, world.host) == first
    looked_up = client.call("GET", f"/ledger/commands/{key}").body
    assert looked_up["applied"] is True and looked_up["events"] >= 1
    assert any(s["uuid"] == vm for s in looked_up["streams"]), looked_up


def test_a_key_sent_again_with_another_request_is_refused(client: Client) -> None:
    world = build(client)
    vm, key = str(uuid4()), f"nova-{uuid4()}"
    assert put(client, vm, world.host, 1, key) == 204
    before = state(client, vm, world.host)
    refused = client.call("PUT", f"/allocations/{vm}", {
        "allocations": {world.host: {"resources": {"VCPU": 2}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": 1, "consumer_type": "INSTANCE"},
        LATEST, headers={"Idempotency-Key": key})
    assert refused.status == 409, refused.body
    assert key in refused.body["errors"][0]["detail"]
    assert state(client, vm, world.host) == before


def test_without_a_key_the_same_request_twice_is_a_generation_conflict(client: Client) -> None:
    world = build(client)
    vm = str(uuid4())
    body = {"allocations": {world.host: {"resources": {"VCPU": 1}}}, "project_id": "p",
            "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}
    assert client.call("PUT", f"/allocations/{vm}", body, LATEST).status == 204
    again = client.call("PUT", f"/allocations/{vm}", body, LATEST)
    assert again.status == 409
    assert again.body["errors"][0]["code"] == "placement.concurrent_update"


def _events(client: Client) -> int:
    return int(client.call("GET", "/ledger/audit").body["events"])


def _twice(client: Client, method: str, path: str, body: Any = None,
           version: str | None = None) -> Any:
    """Send a request with a fresh key, then again: the same answer, nothing appended."""
    key = f"retry-{uuid4()}"
    first = client.call(method, path, body, version, headers={"Idempotency-Key": key})
    assert first.status < 300, (method, path, first)
    appended = _events(client)
    again = client.call(method, path, body, version, headers={"Idempotency-Key": key})
    assert (again.status, again.body) == (first.status, first.body), (method, path, again)
    assert again.headers.get("location") == first.headers.get("location")
    assert _events(client) == appended, (method, path)
    return first.body


def test_every_write_endpoint_retried_after_success_gets_the_first_answer(
        client: Client) -> None:
    """Issue 27 item 2: checks made before the command (a name still free, a generation, a
    provider or class still there) are decided on the ledger as it was before the first
    run, so the retry sends the same command and the record answers it."""
    world = build(client)
    rp = str(uuid4())
    path = f"/resource_providers/{rp}"
    created = _twice(client, "POST", "/resource_providers", {"name": f"r-{rp}", "uuid": rp},
                     "1.20")
    assert created["uuid"] == rp
    _twice(client, "PUT", path, {"name": f"renamed-{rp}"})
    _twice(client, "PUT", f"{path}/inventories", {
        "resource_provider_generation": client.call("GET", path).body["generation"],
        "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}}})
    generation = client.call("GET", path).body["generation"]
    _twice(client, "POST", f"{path}/inventories", {
        "resource_class": "DISK_GB", "total": 100, "resource_provider_generation": generation})
    generation = client.call("GET", path).body["generation"]
    _twice(client, "PUT", f"{path}/inventories/VCPU", {
        "resource_provider_generation": generation, "total": 16})
    _twice(client, "DELETE", f"{path}/inventories/DISK_GB")
    vm, other = str(uuid4()), str(uuid4())
    _twice(client, "PUT", f"/allocations/{vm}", {"allocations": [
        {"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}}]}, "1.0")
    _twice(client, "PUT", f"/allocations/{vm}", {
        "allocations": {rp: {"resources": {"VCPU": 2}}}, "project_id": "p", "user_id": "u"},
        "1.12")
    _twice(client, "POST", "/allocations", {
        vm: {"allocations": {}, "project_id": "p", "user_id": "u",
             "consumer_generation": 2, "consumer_type": "INSTANCE"},
        other: {"allocations": {world.host: {"resources": {"VCPU": 1}}}, "project_id": "p",
                "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}},
        LATEST)
    _twice(client, "DELETE", f"/allocations/{other}")
    _twice(client, "DELETE", f"{path}/inventories", version="1.5")
    _twice(client, "DELETE", path)
    name = f"CUSTOM_{uuid4().hex.upper()}"
    _twice(client, "POST", "/resource_classes", {"name": name}, "1.2")
    _twice(client, "DELETE", f"/resource_classes/{name}", version="1.2")
    _twice(client, "PUT", f"/resource_classes/{name}", version="1.7")
