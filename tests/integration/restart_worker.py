"""One process of the restart tests: open the ledger a URL names, act, print JSON, exit.

Everything the process knew in memory (aggregate cache, connections) dies with it, as a
compute service's does when it restarts. It imports only the ledger, so the tests run it as
a plain script with ``sys.executable``::

    restart_worker.py URL start same-host|cross-host   -> {"pid", "ids", "state"}
    restart_worker.py URL revert|confirm IDS_JSON      -> {"pid", "found", "after"}

``start`` leaves a resize pending: the migration holds the old devices and the instance
holds new ones (on the same host, or on another one) while a neighbour holds one device
where the instance landed. ``revert`` and ``confirm`` first report the state they found,
then resolve the migration. States are keyed by role, so two processes can be compared.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from typing import Any

from allocation_ledger import Ledger, open_ledger

PMEM = "CUSTOM_PMEM_NAMESPACE_4GB"
NAMESPACES = ["ns-0", "ns-1", "ns-2", "ns-3", "ns-4"]
PCI = "PCI_DEVICE"
SOURCE_ADDRESSES = ["0000:81:00.1", "0000:81:00.2"]
TARGET_ADDRESSES = ["0000:3b:00.0", "0000:3b:00.1", "0000:3b:00.2"]
PROJECT, USER = "project-a", "user-a"

Ids = dict[str, dict[str, str]]


def _host(ledger: Ledger, rc: str, devices: list[str]) -> str:
    host = str(uuid.uuid4())
    ledger.register_provider(host, f"host-{host[:8]}", inventories={"VCPU": {"total": 16}})
    ledger.set_devices(host, rc, devices, ledger.provider(host).generation)
    return host


def start(ledger: Ledger, placement: str) -> Ids:
    """Leave a resize pending; the ids of every provider and consumer involved, by role."""
    if placement == "same-host":
        rc, source = PMEM, _host(ledger, PMEM, NAMESPACES)
        target, providers = source, {"host": source}
    else:
        rc, source = PCI, _host(ledger, PCI, SOURCE_ADDRESSES)
        target = _host(ledger, PCI, TARGET_ADDRESSES)
        providers = {"source": source, "target": target}
    neighbour, instance, migration = (str(uuid.uuid4()) for _ in range(3))
    ledger.claim(neighbour, {target: {"VCPU": 1, rc: 1}}, None, project_id=PROJECT,
                 user_id=USER)
    spawned = ledger.claim(instance, {source: {"VCPU": 2, rc: 2}}, None, project_id=PROJECT,
                           user_id=USER)
    assert spawned.generation is not None
    ledger.swap(instance, migration, spawned.generation, kind="resize")
    # the destination claim: new devices, while the migration keeps the old ones
    ledger.claim(instance, {target: {"VCPU": 4, rc: 2}}, None, project_id=PROJECT,
                 user_id=USER)
    consumers = {"neighbour": neighbour, "instance": instance, "migration": migration}
    return {"providers": providers, "consumers": consumers}


def state(ledger: Ledger, ids: Ids) -> dict[str, Any]:
    """Everything a restart must not lose, as plain JSON-able data keyed by role."""
    providers = {role: ledger.provider(p) for role, p in ids["providers"].items()}
    consumers = {role: ledger.consumer(c) for role, c in ids["consumers"].items()}
    move = ledger.migration(ids["consumers"]["migration"])
    return {
        "last_event": ledger.store.recorder.max_notification_id(),
        "providers": {
            role: {"generation": v.generation, "usages": v.usages, "devices": v.devices}
            for role, v in providers.items()
        },
        "consumers": {
            role: {"generation": c.generation, "allocations": c.allocations,
                   "devices": c.devices, "migration_uuid": c.migration_uuid}
            for role, c in consumers.items()
        },
        "migration": {
            "status": move.status, "kind": move.kind, "generation": move.generation,
            "source_root": move.source_root, "destination_root": move.destination_root,
            "old_allocations": move.old_allocations, "old_devices": move.old_devices,
            "new_allocations": move.new_allocations, "new_devices": move.new_devices,
            "started_at": move.started_at.isoformat(),
        },
    }


def resolve(ledger: Ledger, ids: Ids, action: str) -> None:
    """Revert or confirm the pending resize, with the generations this process reads."""
    migration = ids["consumers"]["migration"]
    move = ledger.migration(migration)
    if action == "revert":
        instance = ledger.consumer(ids["consumers"]["instance"])
        ledger.revert(migration, move.generation, instance.generation)
    else:
        assert move.generation is not None
        ledger.confirm(migration, move.generation)


def main(argv: list[str]) -> dict[str, Any]:
    """Run one command; the JSON-able result."""
    url, command, arg = argv
    with open_ledger(url) as ledger:
        if command == "start":
            ids = start(ledger, arg)
            return {"pid": os.getpid(), "ids": ids, "state": state(ledger, ids)}
        if command in ("revert", "confirm"):
            ids = json.loads(arg)
            found = state(ledger, ids)
            resolve(ledger, ids, command)
            return {"pid": os.getpid(), "found": found, "after": state(ledger, ids)}
    raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), sort_keys=True))
