"""Every command kind of the service API as a small scene: set up, call with a command id,
and call "another command" (the same kind with another payload) with the same id."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from allocation_ledger import Ledger
from tests.builders import PROJECT, USER, a_host, an_instance, new_id

Ctx = dict[str, Any]
CPU2 = {"VCPU": 2}


def _claimed(ledger: Ledger) -> Ctx:
    host, other = a_host(ledger), a_host(ledger)
    vm = an_instance(ledger, {host: CPU2})
    return {"host": host, "other": other, "vm": vm.consumer_uuid, "mig": new_id()}


def _swapped(ledger: Ledger) -> Ctx:
    ctx = _claimed(ledger)
    ledger.swap(ctx["vm"], ctx["mig"], 1)
    ledger.claim(ctx["vm"], {ctx["other"]: CPU2}, None, project_id=PROJECT, user_id=USER)
    ctx["mig_gen"] = ledger.migration(ctx["mig"]).generation
    ctx["vm_gen"] = ledger.consumer(ctx["vm"]).generation
    return ctx


def _evacuated(ledger: Ledger) -> Ctx:
    ctx = _claimed(ledger)
    ledger.evacuate(ctx["vm"], ctx["mig"], 1, destination_root=ctx["other"])
    ctx["vm_gen"] = ledger.consumer(ctx["vm"]).generation
    return ctx


def _new_host(ledger: Ledger) -> Ctx:
    return {"host": a_host(ledger), "other": a_host(ledger), "new": new_id()}


def _claim(ledger: Ledger, c: Ctx, cid: str, n: int) -> Any:
    return ledger.claim(c["new"], {c["host"]: {"VCPU": 2 + n}}, None, project_id=PROJECT,
                        user_id=USER, command_id=cid)


def _write(ledger: Ledger, c: Ctx, cid: str, n: int) -> Any:
    return ledger.write_allocations([
        {"consumer_uuid": c["new"], "allocations": {c["host"]: {"VCPU": 1 + n}},
         "expected_generation": None, "project_id": PROJECT, "user_id": USER},
        {"consumer_uuid": c["host"], "allocations": {c["other"]: {"VCPU": 1}},
         "expected_generation": None, "project_id": PROJECT, "user_id": USER},
    ], command_id=cid)


@dataclass(frozen=True)
class Kind:
    """One command kind: ``setup`` a scene, then ``call(ledger, ctx, command_id, n)`` (``n``
    0 is the command, 1 another command of the same kind)."""

    name: str
    setup: Callable[[Ledger], Ctx]
    call: Callable[[Ledger, Ctx, str, int], Any]


KINDS = [
    Kind("register_provider", lambda lg: {"new": new_id()},
         lambda lg, c, cid, n: lg.register_provider(
             c["new"], f"host-{n}-{c['new']}", inventories={"VCPU": {"total": 8}},
             command_id=cid)),
    Kind("set_inventories", _new_host, lambda lg, c, cid, n: lg.set_inventories(
        c["host"], {"VCPU": {"total": 16 + n}}, 1, command_id=cid)),
    Kind("set_inventory", _new_host, lambda lg, c, cid, n: lg.set_inventory(
        c["host"], "DISK_GB", {"total": 100 + n}, 1, command_id=cid)),
    Kind("delete_inventory", _new_host, lambda lg, c, cid, n: lg.delete_inventory(
        c["host"], ["MEMORY_MB", "VCPU"][n], 1, command_id=cid)),
    Kind("set_devices", _new_host, lambda lg, c, cid, n: lg.set_devices(
        c["host"], "VGPU", ["mdev-a", "mdev-b"][: 2 - n], 1, command_id=cid)),
    Kind("delete_provider", _new_host, lambda lg, c, cid, n: lg.delete_provider(
        c[["host", "other"][n]], 1, command_id=cid)),
    Kind("claim", _new_host, _claim),
    Kind("write_allocations", _new_host, _write),
    Kind("release", _claimed, lambda lg, c, cid, n: lg.release(
        c["vm"], 1 + n, command_id=cid)),
    Kind("force_release", _claimed, lambda lg, c, cid, n: lg.force_release(
        [c["vm"], c["mig"]][n], command_id=cid)),
    Kind("swap", _claimed, lambda lg, c, cid, n: lg.swap(
        c["vm"], c["mig"], 1, kind=["resize", "migration"][n], command_id=cid)),
    Kind("confirm", _swapped, lambda lg, c, cid, n: lg.confirm(
        c["mig"], c["mig_gen"] + n, command_id=cid)),
    Kind("revert", _swapped, lambda lg, c, cid, n: lg.revert(
        c["mig"], c["mig_gen"], c["vm_gen"] + n, command_id=cid)),
    Kind("force_live_migrate", _claimed, lambda lg, c, cid, n: lg.force_live_migrate(
        c["vm"], c["mig"], [c["other"], c["host"]][n], 1, command_id=cid)),
    Kind("evacuate", _claimed, lambda lg, c, cid, n: lg.evacuate(
        c["vm"], c["mig"], 1, destination_root=[c["other"], c["host"]][n], command_id=cid)),
    Kind("complete_evacuation", _evacuated, lambda lg, c, cid, n: lg.complete_evacuation(
        c["mig"], c["vm_gen"] + n, command_id=cid)),
]
