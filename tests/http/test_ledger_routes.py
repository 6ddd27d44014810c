"""The ledger's own endpoints: moves as commands, a migration's context, devices, history,
state at a position and the audit, over HTTP."""

from __future__ import annotations

from uuid import uuid4

from tests.http.server import Client
from tests.http.world import LATEST, build, claim, inventory, provider


def test_resize_swap_claim_confirm(client: Client) -> None:
    world = build(client)
    dest = provider(client, f"dest-{uuid4()}")
    inventory(client, dest, VCPU=8, MEMORY_MB=4096)
    migration = str(uuid4())
    started = client.call("POST", f"/ledger/migrations/{migration}/swap", {
        "instance_uuid": world.vm, "expected_generation": 1, "kind": "migration"})
    assert started.status == 200, started.body
    assert (started.body["status"], started.body["allocations"]) == (
        "in-progress", {world.host: {"VCPU": 2, "MEMORY_MB": 512}})
    assert claim(client, world.vm, dest, None, VCPU=2, MEMORY_MB=512) == 204
    shown = client.call("GET", f"/allocations/{migration}", version=LATEST).body
    assert shown["consumer_type"] == "MIGRATION"
    context = client.call("GET", f"/ledger/migrations/{migration}").body
    assert context["destination_root"] == dest
    assert context["generation"] == started.body["generation"]  # a context event: not counted
    confirmed = client.call("POST", f"/ledger/migrations/{migration}/confirm",
                            {"expected_generation": context["generation"]})
    assert confirmed.body["status"] == "confirmed", confirmed.body
    assert client.call("GET", f"/allocations/{migration}").body == {"allocations": {}}
    again = client.call("POST", f"/ledger/migrations/{migration}/revert",
                        {"expected_generation": None, "instance_generation": None})
    assert again.status == 409
    assert "confirmed" in again.body["errors"][0]["detail"]
    usages = client.call("GET", f"/resource_providers/{world.host}/usages").body["usages"]
    assert usages == {"VCPU": 0, "MEMORY_MB": 0}


def test_forced_move_of_a_nested_allocation_is_refused(client: Client) -> None:
    world = build(client)
    inventory(client, world.numa, VCPU=4)
    vm = str(uuid4())
    assert client.call("PUT", f"/allocations/{vm}", {
        "allocations": {world.host: {"resources": {"VCPU": 1}},
                        world.numa: {"resources": {"VCPU": 1}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None,
        "consumer_type": "INSTANCE"}, LATEST).status == 204
    refused = client.call("POST", f"/ledger/migrations/{uuid4()}/force-live-migrate", {
        "instance_uuid": vm, "destination_root": world.tree, "expected_generation": 1})
    assert refused.status == 409
    assert "forced move" in refused.body["errors"][0]["detail"]


def test_devices_history_state_at_and_audit(client: Client) -> None:
    world = build(client)
    gpu = provider(client, f"gpu-{uuid4()}", world.host)
    generation = client.call("GET", f"/resource_providers/{gpu}").body["generation"]
    devices = client.call("PUT", f"/ledger/providers/{gpu}/devices/VGPU",
                          {"device_ids": ["mdev-b", "mdev-a"], "generation": generation})
    assert devices.body["devices"] == {"VGPU": {"mdev-a": None, "mdev-b": None}}
    vm = str(uuid4())
    assert claim(client, vm, gpu, None, VGPU=1) == 204
    tree = client.call("GET", f"/ledger/providers/{world.host}").body
    assert tree[gpu]["devices"] == {"VGPU": {"mdev-a": vm, "mdev-b": None}}
    history = client.call("GET", f"/ledger/history/consumer/{vm}").body["history"]
    position = history[0]["position"]
    assert [e["event"] for e in history] == ["Consumer.Created"]
    before = client.call("GET", f"/ledger/state-at/provider/{gpu}?position={position - 1}")
    assert before.body["state"]["devices"] == {"VGPU": {"mdev-a": None, "mdev-b": None}}
    report = client.call("GET", "/ledger/audit").body
    assert (report["ok"], report["errors"]) == (True, 0)
    assert client.call("GET", "/ledger/history/nothing/x").status == 404
