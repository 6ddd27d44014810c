"""Nova's own moves over Placement's API become the ledger's moves: the requests its
``SchedulerReportClient`` sends for a resize (``move_allocations`` to the migration, the
destination claim, then emptying the migration to confirm, or the reverse
``move_allocations`` to revert) open and close a migration with its context and history;
a look-alike write that is not a move stays a plain write."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from uuid import uuid4

from tests.http.nova import (
    allocations_of,
    claim_destination,
    delete_allocation_for_instance,
    move_allocations,
)
from tests.http.server import Client, running_server
from tests.http.world import LATEST, World, build, inventory, provider

FLAVOR = {"VCPU": 2, "MEMORY_MB": 512}  # what build()'s vm holds on its host


def _destination(client: Client) -> str:
    dest = provider(client, f"dest-{uuid4()}")
    inventory(client, dest, VCPU=8, MEMORY_MB=4096)
    return dest


def _migration(client: Client, migration: str) -> dict[str, Any]:
    answer = client.call("GET", f"/ledger/migrations/{migration}")
    assert answer.status == 200, answer
    body: dict[str, Any] = answer.body
    return body


def _history(client: Client, migration: str) -> list[dict[str, Any]]:
    answer = client.call("GET", f"/ledger/history/migration/{migration}")
    assert answer.status == 200, answer
    history: list[dict[str, Any]] = answer.body["history"]
    return history


def _usages(client: Client, rp: str) -> dict[str, int]:
    usages: dict[str, int] = client.call(
        "GET", f"/resource_providers/{rp}/usages").body["usages"]
    return usages


def _events(client: Client) -> int:
    return int(client.call("GET", "/ledger/audit").body["events"])


def _resized(client: Client, world: World) -> tuple[str, str]:
    """Nova's resize up to the destination claim: the swap (``move_allocations`` of the
    instance to a new migration) and the scheduler's claim; (migration, destination)."""
    dest, migration = _destination(client), str(uuid4())
    swapped = move_allocations(client, world.vm, migration)
    assert swapped is not None and swapped.status == 204, swapped
    assert claim_destination(client, world.vm, dest, FLAVOR, "p", "u").status == 204
    return migration, dest


def test_nova_resize_confirmed_is_a_migration_with_its_context(client: Client) -> None:
    world = build(client)
    dest, migration = _destination(client), str(uuid4())
    swapped = move_allocations(client, world.vm, migration)
    assert swapped is not None and swapped.status == 204, swapped
    started = _migration(client, migration)
    assert (started["status"], started["kind"], started["instance_uuid"]) == (
        "in-progress", "migration", world.vm)
    assert started["source_root"] == world.host
    assert started["allocations"] == started["old_allocations"] == {world.host: FLAVOR}
    # What Nova reads back is what Placement would answer.
    assert allocations_of(client, world.vm) == {"allocations": {}}
    held = allocations_of(client, migration)
    assert held["consumer_generation"] == 1
    assert (held["project_id"], held["user_id"]) == ("p", "u")
    assert held["allocations"][world.host]["resources"] == FLAVOR
    assert claim_destination(client, world.vm, dest, FLAVOR, "p", "u").status == 204
    claimed = _migration(client, migration)
    assert (claimed["destination_root"], claimed["new_allocations"]) == (
        dest, {dest: FLAVOR})
    confirmed = delete_allocation_for_instance(client, migration)
    assert confirmed is not None and confirmed.status == 204, confirmed
    assert _migration(client, migration)["status"] == "confirmed"
    assert _usages(client, world.host) == {"VCPU": 0, "MEMORY_MB": 0}
    assert _usages(client, dest) == FLAVOR
    history = _history(client, migration)
    assert [e["event"] for e in history] == [
        "Migration.Started", "Consumer.AllocationsHandedOver", "Consumer.AllocationsClaimed",
        "Migration.DestinationClaimed", "Migration.Confirmed"]
    assert "recognised as the swap" in history[0]["reason"]
    assert "recognised as the confirm" in history[-1]["reason"]


def test_nova_resize_reverted_gives_the_source_back(client: Client) -> None:
    world = build(client)
    migration, dest = _resized(client, world)
    reverted = move_allocations(client, migration, world.vm)
    assert reverted is not None and reverted.status == 204, reverted
    shown = _migration(client, migration)
    assert (shown["status"], shown["allocations"]) == ("reverted", {})
    assert allocations_of(client, migration) == {"allocations": {}}
    assert allocations_of(client, world.vm)["allocations"][world.host]["resources"] == FLAVOR
    assert _usages(client, dest) == {"VCPU": 0, "MEMORY_MB": 0}
    assert _usages(client, world.host) == FLAVOR
    history = _history(client, migration)
    assert {e["event"] for e in history[-2:]} == {
        "Consumer.AllocationsReturned", "Migration.Reverted"}
    assert all("recognised as the revert" in e["reason"] for e in history[-2:])
    # Nova's revert again: the migration holds nothing, the instance its source, so Nova
    # sends nothing ("already moved").
    assert move_allocations(client, migration, world.vm) is None


def test_a_move_that_found_no_host_is_reverted(client: Client) -> None:
    """Conductor's ``revert_allocation_for_migration`` before any destination claim: the
    instance holds nothing, so Nova sends ``consumer_generation: null`` for it."""
    world = build(client)
    migration = str(uuid4())
    swapped = move_allocations(client, world.vm, migration)
    assert swapped is not None and swapped.status == 204
    reverted = move_allocations(client, migration, world.vm)
    assert reverted is not None and reverted.status == 204, reverted
    assert _migration(client, migration)["status"] == "reverted"
    assert _usages(client, world.host) == FLAVOR


def test_a_forced_delete_of_the_migration_confirms(client: Client) -> None:
    world = build(client)
    migration, dest = _resized(client, world)
    deleted = delete_allocation_for_instance(client, migration, force=True)
    assert deleted is not None and deleted.status == 204, deleted
    assert _migration(client, migration)["status"] == "confirmed"
    assert _usages(client, world.host) == {"VCPU": 0, "MEMORY_MB": 0}
    assert _usages(client, dest) == FLAVOR


def test_emptying_a_migration_with_no_destination_releases_it(client: Client) -> None:
    world = build(client)
    migration = str(uuid4())
    swapped = move_allocations(client, world.vm, migration)
    assert swapped is not None and swapped.status == 204
    emptied = delete_allocation_for_instance(client, migration)
    assert emptied is not None and emptied.status == 204, emptied
    assert _migration(client, migration)["status"] == "aborted"
    assert _usages(client, world.host) == {"VCPU": 0, "MEMORY_MB": 0}


def test_a_move_in_flight_is_seen_by_the_audit(client: Client) -> None:
    world = build(client)
    migration, _ = _resized(client, world)
    report = client.call("GET", "/ledger/audit?stale_after=0").body
    stale = [f for f in report["findings"] if f["kind"] == "stale-migration"]
    assert any(migration in str(f) for f in stale), report["findings"]


def test_a_stale_instance_generation_is_a_consumer_conflict(client: Client) -> None:
    world = build(client)
    migration = str(uuid4())
    body = {
        world.vm: {"allocations": {}, "project_id": "p", "user_id": "u",
                   "consumer_generation": 7},
        migration: {"allocations": {world.host: {"resources": FLAVOR}}, "project_id": "p",
                    "user_id": "u", "consumer_generation": None},
    }
    refused = client.call("POST", "/allocations", body, "1.28")
    assert refused.status == 409, refused
    assert refused.code == "placement.concurrent_update"
    assert "consumer generation conflict" in refused.body["errors"][0]["detail"]
    assert allocations_of(client, world.vm)["consumer_generation"] == 1
    assert client.call("GET", f"/ledger/migrations/{migration}").status == 404


def test_a_stale_generation_of_either_consumer_of_a_revert_or_confirm_is_a_conflict(
        client: Client) -> None:
    world = build(client)
    migration, dest = _resized(client, world)
    generation = allocations_of(client, world.vm)["consumer_generation"]
    for migration_generation, instance_generation in ((1, generation + 1), (2, generation)):
        refused = client.call("POST", "/allocations", {
            migration: {"allocations": {}, "project_id": "p", "user_id": "u",
                        "consumer_generation": migration_generation},
            world.vm: {"allocations": {world.host: {"resources": FLAVOR}},
                       "project_id": "p", "user_id": "u",
                       "consumer_generation": instance_generation}}, "1.28")
        assert refused.status == 409, refused
        assert "consumer generation conflict" in refused.body["errors"][0]["detail"]
    refused = client.call("PUT", f"/allocations/{migration}", {
        "allocations": {}, "project_id": "p", "user_id": "u", "consumer_generation": 2},
        "1.28")
    assert refused.status == 409, refused
    assert "consumer generation conflict" in refused.body["errors"][0]["detail"]
    assert _migration(client, migration)["status"] == "in-progress"
    assert _usages(client, world.host) == _usages(client, dest) == FLAVOR


def test_a_retried_swap_and_confirm_get_the_first_answer(client: Client) -> None:
    world = build(client)
    dest, migration = _destination(client), str(uuid4())
    key = f"nova-{uuid4()}"
    body = {
        world.vm: {"allocations": {}, "project_id": "p", "user_id": "u",
                   "consumer_generation": 1},
        migration: {"allocations": {world.host: {"resources": FLAVOR}}, "project_id": "p",
                    "user_id": "u", "consumer_generation": None},
    }
    first = client.call("POST", "/allocations", body, "1.28", headers={"Idempotency-Key": key})
    assert first.status == 204, first
    appended = _events(client)
    again = client.call("POST", "/allocations", body, "1.28", headers={"Idempotency-Key": key})
    assert again.status == 204, again
    assert _events(client) == appended
    assert client.call("GET", f"/ledger/commands/{key}").body["applied"] is True
    assert claim_destination(client, world.vm, dest, FLAVOR, "p", "u").status == 204
    confirm_key = f"nova-{uuid4()}"
    confirmed = delete_allocation_for_instance(client, migration,
                                               headers={"Idempotency-Key": confirm_key})
    assert confirmed is not None and confirmed.status == 204
    appended = _events(client)
    retried = client.call("PUT", f"/allocations/{migration}", {
        "allocations": {}, "project_id": "p", "user_id": "u", "consumer_generation": 1},
        "1.28", headers={"Idempotency-Key": confirm_key})
    assert retried.status == 204, retried
    assert _events(client) == appended
    assert _migration(client, migration)["status"] == "confirmed"


def test_a_retried_revert_gets_the_first_answer(client: Client) -> None:
    world = build(client)
    migration, dest = _resized(client, world)
    generation = allocations_of(client, world.vm)["consumer_generation"]
    body = {
        migration: {"allocations": {}, "project_id": "p", "user_id": "u",
                    "consumer_generation": 1},
        world.vm: {"allocations": {world.host: {"resources": FLAVOR}}, "project_id": "p",
                   "user_id": "u", "consumer_generation": generation},
    }
    key = f"nova-{uuid4()}"
    first = client.call("POST", "/allocations", body, "1.28", headers={"Idempotency-Key": key})
    assert first.status == 204, first
    appended = _events(client)
    again = client.call("POST", "/allocations", body, "1.28", headers={"Idempotency-Key": key})
    assert again.status == 204, again
    assert _events(client) == appended
    assert _migration(client, migration)["status"] == "reverted"
    assert _usages(client, dest) == {"VCPU": 0, "MEMORY_MB": 0}


def test_a_swap_sent_with_consumer_type_migration_at_1_38(client: Client) -> None:
    world = build(client)
    migration = str(uuid4())
    moved = client.call("POST", "/allocations", {
        world.vm: {"allocations": {}, "project_id": "p", "user_id": "u",
                   "consumer_generation": 1, "consumer_type": "INSTANCE"},
        migration: {"allocations": {world.host: {"resources": FLAVOR}}, "project_id": "p",
                    "user_id": "u", "consumer_generation": None,
                    "consumer_type": "MIGRATION"}}, LATEST)
    assert moved.status == 204, moved
    assert _migration(client, migration)["status"] == "in-progress"


def test_a_plain_write_of_consumer_type_migration_is_still_refused(client: Client) -> None:
    world = build(client)
    refused = client.call("PUT", f"/allocations/{uuid4()}", {
        "allocations": {world.host: {"resources": {"VCPU": 1}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None, "consumer_type": "MIGRATION"}, LATEST)
    assert refused.status == 400, refused
    assert "migration consumers change only through the move commands" in \
        refused.body["errors"][0]["detail"]


def test_look_alike_writes_stay_plain_writes(client: Client) -> None:
    """The instance emptied and a new consumer given allocations, but not exactly what the
    instance held (less of it, or another project's): Placement's plain write, no move."""
    world = build(client)
    less, other_project = str(uuid4()), str(uuid4())
    written = client.call("POST", "/allocations", {
        world.vm: {"allocations": {}, "project_id": "p", "user_id": "u",
                   "consumer_generation": 1},
        less: {"allocations": {world.host: {"resources": {"VCPU": 2}}}, "project_id": "p",
               "user_id": "u", "consumer_generation": None}}, "1.28")
    assert written.status == 204, written
    assert client.call("GET", f"/ledger/migrations/{less}").status == 404
    shown = client.call("GET", f"/allocations/{less}", version=LATEST).body
    assert shown["consumer_type"] != "MIGRATION"
    assert client.call("GET", f"/allocations/{world.vm}").body == {"allocations": {}}
    # the whole allocation, but another project's consumer
    vm = str(uuid4())
    assert client.call("PUT", f"/allocations/{vm}", {
        "allocations": {world.host: {"resources": FLAVOR}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None}, "1.28").status == 204
    written = client.call("POST", "/allocations", {
        vm: {"allocations": {}, "project_id": "p", "user_id": "u", "consumer_generation": 1},
        other_project: {"allocations": {world.host: {"resources": FLAVOR}},
                        "project_id": "q", "user_id": "u", "consumer_generation": None}},
        "1.28")
    assert written.status == 204, written
    assert client.call("GET", f"/ledger/migrations/{other_project}").status == 404


def test_a_nova_move_is_listed_and_repaired_by_the_cli(tmp_path: Path) -> None:
    """The command line over the server's store sees the move Nova started (``list
    migrations``) and repairs it when Nova leaks it (``repair --stale-after 0``)."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with running_server(url) as port:
        client = Client(port)
        world = build(client)
        migration, _ = _resized(client, world)
        listed = _cli(url, "--json", "list", "migrations", "--stale-after", "0")
        rows = [r for r in json.loads(listed) if r["uuid"] == migration]
        assert [(r["instance_uuid"], r["kind"]) for r in rows] == [(world.vm, "migration")]
        _cli(url, "repair", "--stale-after", "0", "--action", "revert",
             "--reason", "leaked by nova")
        assert _migration(client, migration)["status"] == "reverted"
        assert allocations_of(client, world.vm)["allocations"][world.host]["resources"] \
            == FLAVOR
        client.close()


def _cli(url: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", "from allocation_ledger.cli import main; main()", "--url", url,
         "--no-progress", *args],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def test_emptying_a_migration_in_flight_with_a_null_generation_is_a_conflict(
        client: Client) -> None:
    """Placement answers a write with ``consumer_generation: null`` for a consumer that
    exists with 409 ``placement.concurrent_update`` (it expected a new consumer); emptying a
    migration in flight that way is no different, and changes nothing."""
    world = build(client)
    migration, dest = _resized(client, world)
    before = _events(client)
    for method, path, body in (
            ("PUT", f"/allocations/{migration}", {
                "allocations": {}, "project_id": "p", "user_id": "u",
                "consumer_generation": None}),
            ("POST", "/allocations", {migration: {
                "allocations": {}, "project_id": "p", "user_id": "u",
                "consumer_generation": None}})):
        refused = client.call(method, path, body, "1.28")
        assert refused.status == 409, refused.body
        assert refused.code == "placement.concurrent_update"
        assert "consumer generation conflict" in refused.body["errors"][0]["detail"]
    assert _events(client) == before
    assert _migration(client, migration)["status"] == "in-progress"
    assert _usages(client, world.host) == _usages(client, dest) == FLAVOR
