"""The commands :mod:`benchmarks.random_ledger` draws from, one function each.

Each returns ``False`` when it found nothing to act on (no command sent), else ``None``;
a refusal raises the ledger's error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from allocation_ledger import Ledger

if TYPE_CHECKING:
    from benchmarks.random_world import World

PROJECT, USER = "project-r", "user-r"
Action = Callable[[Ledger, "World"], "bool | None"]


def add_host(ledger: Ledger, w: World) -> None:
    """A host; most get a NUMA child, every other one a GPU child with VGPU devices. Now and
    then a deleted host's UUID comes back (a compute service restarted with its stable id)."""
    host = w.gone.pop() if w.gone and w.rng.random() < 0.5 else w.new_id()
    ledger.register_provider(host, f"host-{host[:8]}", inventories={
        "VCPU": {"total": w.rng.choice([8, 16]), "allocation_ratio": 2.0},
        "MEMORY_MB": {"total": 16384, "reserved": 512, "step_size": 256},
        "DISK_GB": {"total": 500, "max_unit": 200},
    }, request=w.who)
    w.hosts.append(host)
    if w.rng.random() < 0.6:
        numa = w.new_id()
        ledger.register_provider(numa, f"numa-{numa[:8]}", parent_uuid=host,
                                 inventories={"PCPU": {"total": 4}}, request=w.who)
        w.numas[host] = numa
    if len(w.hosts) % 2:
        gpu = w.new_id()
        view = ledger.register_provider(gpu, f"gpu-{gpu[:8]}", parent_uuid=host, request=w.who)
        ledger.set_devices(gpu, "VGPU", [f"{gpu[:4]}-vgpu{i}" for i in range(3)],
                           view.generation, request=w.who)
        w.gpus[host] = gpu


def flavor(w: World, host: str) -> dict[str, dict[str, int]]:
    """A random allocation on ``host``, sometimes nested (NUMA PCPUs, GPU VGPUs)."""
    wanted = {host: {"VCPU": w.rng.choice([1, 2, 4]), "MEMORY_MB": 256 * w.rng.choice([2, 4]),
                     "DISK_GB": w.rng.choice([10, 40])}}
    if host in w.numas and w.rng.random() < 0.3:
        wanted[w.numas[host]] = {"PCPU": w.rng.choice([1, 2])}
    if host in w.gpus and w.rng.random() < 0.4:
        wanted[w.gpus[host]] = {"VGPU": w.rng.choice([1, 2])}
    return wanted


def _holder(ledger: Ledger, w: World) -> tuple[str, int] | None:
    """A random instance that holds something, with its generation."""
    if not w.instances:
        return None
    instance = w.rng.choice(w.instances)
    generation = ledger.consumer(instance).generation
    return None if generation is None else (instance, generation)


def claim(ledger: Ledger, w: World) -> None:
    """Spawn an instance on a random host."""
    instance = w.new_id()
    ledger.claim(instance, flavor(w, w.rng.choice(w.hosts)), None, project_id=PROJECT,
                 user_id=USER, request=w.who)
    w.instances.append(instance)


def reclaim(ledger: Ledger, w: World) -> bool | None:
    """Replace an instance's allocation (a destination claim if it is mid-move)."""
    if not w.instances:
        return False
    instance = w.rng.choice(w.instances)
    ledger.claim(instance, flavor(w, w.rng.choice(w.hosts)), ledger.consumer(instance).generation,
                 project_id=PROJECT, user_id=USER, request=w.who)
    return None


def multi_write(ledger: Ledger, w: World) -> None:
    """A new instance and a replaced or released one, in one atomic write."""
    writes: list[dict[str, Any]] = [{"consumer_uuid": w.new_id(), "expected_generation": None,
                                     "allocations": flavor(w, w.rng.choice(w.hosts))}]
    held = _holder(ledger, w)
    if held is not None:
        allocations = {} if w.rng.random() < 0.5 else flavor(w, w.rng.choice(w.hosts))
        writes.append({"consumer_uuid": held[0], "expected_generation": held[1],
                       "allocations": allocations})
    ledger.write_allocations([{**x, "project_id": PROJECT, "user_id": USER} for x in writes],
                             request=w.who)
    w.instances.append(writes[0]["consumer_uuid"])


def release(ledger: Ledger, w: World) -> bool | None:
    """Release an instance, forced now and then (its deletion: a move it is in is aborted;
    a plain release mid-move gives up only the destination, and the instance stays)."""
    if not w.instances:
        return False
    instance = w.rng.choice(w.instances)
    if w.rng.random() < 0.25:
        ledger.force_release(instance, request=w.who)
    else:
        ledger.release(instance, ledger.consumer(instance).generation, request=w.who)
    if ledger.consumer(instance).migration_uuid is None:
        w.instances.remove(instance)
    return None


def undo_destination(ledger: Ledger, w: World) -> bool | None:
    """Nova's clean-ups by plain write mid-move: a failed destination given up (an empty
    write or a release of the instance; the move stays open), or an evacuation rolled back
    to its source or finished by writing the destination share alone."""
    if not w.moving:
        return False
    state = ledger.migration(w.rng.choice(w.moving))
    generation = ledger.consumer(state.instance_uuid).generation
    if state.status != "in-progress" or generation is None:
        return False
    instance = state.instance_uuid
    if state.kind == "evacuation":
        keep = state.old_allocations if w.rng.random() < 0.6 else state.new_allocations
        ledger.claim(instance, keep, generation, project_id=PROJECT, user_id=USER,
                     request=w.who)
    elif w.rng.random() < 0.5:
        ledger.release(instance, generation, request=w.who)
    else:
        ledger.write_allocations([{"consumer_uuid": instance, "allocations": {},
                                   "expected_generation": generation,
                                   "project_id": PROJECT, "user_id": USER}], request=w.who)
    return None


def swap(ledger: Ledger, w: World) -> bool | None:
    """Start a resize, cold or live migration; claim the destination then, or in the swap."""
    held = _holder(ledger, w)
    if held is None:
        return False
    instance, generation = held
    migration, kind = w.new_id(), w.rng.choice(["resize", "migration", "live-migration"])
    combined = w.rng.random() < 0.3
    destination = flavor(w, w.rng.choice(w.hosts))
    ledger.swap(instance, migration, generation, kind=kind,
                destination=destination if combined else None, request=w.who)
    w.moving.append(migration)
    if not combined and w.rng.random() < 0.8:
        w.next_request()
        ledger.claim(instance, destination, None, project_id=PROJECT, user_id=USER,
                     request=w.who)
    return None


def resolve(ledger: Ledger, w: World) -> bool | None:
    """Confirm, revert or complete a move in flight."""
    if not w.moving:
        return False
    migration = w.rng.choice(w.moving)
    state = ledger.migration(migration)
    w.moving.remove(migration)
    if state.status != "in-progress":
        return False
    instance_gen = ledger.consumer(state.instance_uuid).generation
    if state.kind == "evacuation" and w.rng.random() < 0.7:
        ledger.complete_evacuation(migration, instance_gen or 0, request=w.who)
    elif state.kind != "evacuation" and state.destination_root and w.rng.random() < 0.6:
        ledger.confirm(migration, state.generation or 0, request=w.who)
    else:
        ledger.revert(migration, state.generation, instance_gen, request=w.who)
    return None


def force_move(ledger: Ledger, w: World) -> bool | None:
    """A forced live migration to a named host (refused for nested allocations)."""
    held = _holder(ledger, w)
    if held is None:
        return False
    migration = w.new_id()
    ledger.force_live_migrate(held[0], migration, w.rng.choice(w.hosts), held[1],
                              request=w.who)
    w.moving.append(migration)
    return None


def evacuate(ledger: Ledger, w: World) -> bool | None:
    """Evacuate an instance: scheduled (a destination) or forced (a host)."""
    held = _holder(ledger, w)
    if held is None:
        return False
    migration, host = w.new_id(), w.rng.choice(w.hosts)
    if w.rng.random() < 0.5:
        ledger.evacuate(held[0], migration, held[1], destination=flavor(w, host), request=w.who)
    else:
        ledger.evacuate(held[0], migration, held[1], destination_root=host, request=w.who)
    w.moving.append(migration)
    return None


def change_inventory(ledger: Ledger, w: World) -> None:
    """Change a host's overcommit or disk (lowering may leave it over capacity), or add
    and remove a custom class."""
    host = w.rng.choice(w.hosts)
    view = ledger.provider(host)
    choice = w.rng.random()
    if choice < 0.4:
        ledger.set_inventory(host, "VCPU", {"total": view.inventories["VCPU"].total,
                                            "allocation_ratio": w.rng.choice([0.5, 1.0, 2.0])},
                             view.generation, request=w.who)
    elif choice < 0.7:
        ledger.set_inventory(host, "DISK_GB", {"total": w.rng.choice([60, 200, 500]),
                                               "reserved": w.rng.choice([0, 20])},
                             view.generation, request=w.who)
    elif "CUSTOM_SCRATCH" in view.inventories:
        ledger.delete_inventory(host, "CUSTOM_SCRATCH", view.generation, request=w.who)
    else:
        ledger.set_inventories(host, {**{rc: i.to_dict() for rc, i in view.inventories.items()},
                                      "CUSTOM_SCRATCH": {"total": 8}},
                               view.generation, request=w.who)


def change_devices(ledger: Ledger, w: World) -> bool | None:
    """Add a VGPU to a GPU, or remove one (refused when it is held)."""
    if not w.gpus:
        return False
    gpu = w.gpus[w.rng.choice(sorted(w.gpus))]
    view = ledger.provider(gpu)
    devices = sorted(view.devices.get("VGPU", {}))
    if len(devices) > 1 and w.rng.random() < 0.5:
        devices.remove(w.rng.choice(devices))
    else:
        devices.append(f"{gpu[:4]}-vgpu{w.new_id()[:6]}")
    ledger.set_devices(gpu, "VGPU", devices, view.generation, request=w.who)
    return None


def churn_host(ledger: Ledger, w: World) -> None:
    """Register a host, or delete an idle one with its children."""
    idle = [h for h in w.hosts
            if not any(sum(u.values()) for u in ledger.usages_in_tree(h).values())]
    if len(w.hosts) < 5 or not idle or w.rng.random() < 0.4:
        add_host(ledger, w)
        return
    host = w.rng.choice(idle)
    for children in (w.gpus, w.numas):
        if host in children:
            child = children.pop(host)
            ledger.delete_provider(child, ledger.provider(child).generation, request=w.who)
            w.next_request()
    ledger.delete_provider(host, ledger.provider(host).generation, request=w.who)
    w.hosts.remove(host)
    w.gone.append(host)


#: command -> (function, weight)
ACTIONS: dict[str, tuple[Action, int]] = {
    "claim": (claim, 8), "reclaim": (reclaim, 3), "multi_write": (multi_write, 2),
    "release": (release, 5), "swap": (swap, 4), "resolve": (resolve, 4),
    "force_move": (force_move, 2), "evacuate": (evacuate, 2),
    "undo_destination": (undo_destination, 2),
    "change_inventory": (change_inventory, 2), "change_devices": (change_devices, 1),
    "churn_host": (churn_host, 2),
}
