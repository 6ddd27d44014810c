"""Hostile input for every public call of the ledger: a valid call, and a way to spoil it.

:data:`CALLS` builds, for every public command and query, the keyword arguments of a valid
call against a small :class:`World`. A test then replaces one position of those arguments
(an argument, a value or a key at any depth of a mapping, an item of a list) with a bad
value drawn from :func:`bad_values`, or leaves it whole, and calls.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hypothesis import strategies as st

from allocation_ledger import Ledger
from tests.builders import a_host, new_id

#: A position in a call's arguments: keys and list indexes from the top; a final
#: ``KEY`` marker means "the key itself" rather than its value.
Path = tuple[Any, ...]
KEY = object()

CONTROL = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0)]))


def bad_texts() -> st.SearchStrategy[str]:
    """Strings the ledger must refuse somewhere: control characters (NUL first among them),
    lone surrogates, trailing newlines, near-miss class names and UUIDs, very long ones."""
    return st.one_of(
        st.sampled_from(["", " ", "a\x00b", "\x00", "CUSTOM_X\n", "VCPU\n", "vcpu", "CUSTOM_",
                         "\ud800", "INSTANCE\n", "\u202e", "1" * 40,
                         "6f1c1bd4-8d5e-4f1b-9d7e-3d1f6a4e2b1",
                         "6F1C1BD4-8D5E-4F1B-9D7E-3D1F6A4E2B10\n",
                         "None", "null", "'; DROP TABLE events; --", "\ufffd"]),
        st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(CONTROL),
                max_size=40),
        st.sampled_from([256, 4097, 100_001]).map(lambda n: "x" * n),  # past every limit
    )


def bad_values() -> st.SearchStrategy[Any]:
    """Values of every wrong type and shape, nested a little."""
    scalars = st.one_of(
        st.none(), st.booleans(), bad_texts(), st.binary(max_size=20),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from([0, -1, 2**31, 2**63 - 1, 2**63, 2**64, -(2**63) - 1]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0, 0.5]),
        st.sampled_from([datetime(2026, 1, 1), object(), uuid.uuid4(), Ellipsis, type]),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.tuples(inner),
            st.frozensets(st.integers() | st.text(max_size=5), max_size=3),
            st.dictionaries(st.one_of(bad_texts(), st.integers(), st.none()), inner,
                            max_size=3)),
        max_leaves=6,
    )


#: Built once: hypothesis describes a strategy each time a new one is drawn from.
BAD = bad_values()


@dataclass(frozen=True)
class World:
    """A host with a child holding two GPUs, an instance on them, one mid-move."""

    host: str
    gpu: str
    other: str
    vm: str
    moving: str
    migration: str
    extra: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, ledger: Ledger) -> World:
        """Register and claim the world in ``ledger``."""
        host = a_host(ledger, vcpu=64, memory_mb=65536)
        gpu = a_host(ledger, vcpu=None, memory_mb=None, parent=host)
        ledger.set_devices(gpu, "VGPU", ["gpu-0", "gpu-1", "gpu-2", "gpu-3"], 0)
        other = a_host(ledger, vcpu=64, memory_mb=65536)
        vm, moving, migration = new_id(), new_id(), new_id()
        ledger.claim(vm, {host: {"VCPU": 1}, gpu: {"VGPU": 1}}, None, project_id="p",
                     user_id="u")
        ledger.claim(moving, {host: {"VCPU": 1}}, None, project_id="p", user_id="u")
        ledger.swap(moving, migration, 1)
        return cls(host, gpu, other, vm, moving, migration)


REQUEST = {"actor": "fuzz", "request_id": "req-1", "reason": "hostile input"}

#: name -> (method of the ledger, or of ledger.reads; valid keyword arguments for a world)
CALLS: dict[str, Callable[[World], dict[str, Any]]] = {
    "claim": lambda w: {
        "consumer_uuid": new_id(), "allocations": {w.host: {"VCPU": 1, "MEMORY_MB": 64}},
        "expected_generation": None, "project_id": "p", "user_id": "u",
        "consumer_type": "INSTANCE", "devices": {}, "request": REQUEST},
    "write_allocations": lambda w: {
        "writes": [{"consumer_uuid": new_id(), "allocations": {w.other: {"VCPU": 1}},
                    "expected_generation": None, "project_id": "p", "user_id": "u",
                    "devices": {}}],
        "request": REQUEST},
    "release": lambda w: {"consumer_uuid": w.vm, "expected_generation": 1,
                          "request": REQUEST},
    "force_release": lambda w: {"consumer_uuid": new_id(), "request": REQUEST},
    "consumer": lambda w: {"consumer_uuid": w.vm},
    "provider": lambda w: {"provider_uuid": w.host},
    "tree": lambda w: {"root_uuid": w.host},
    "usages_in_tree": lambda w: {"root_uuid": w.host},
    "migration": lambda w: {"migration_uuid": w.migration},
    "migrations_in_flight": lambda w: {"older_than_seconds": 0.0, "now": None},
    "register_provider": lambda w: {
        "provider_uuid": new_id(), "name": "fuzzed", "parent_uuid": w.host,
        "inventories": {"VCPU": {"total": 8, "reserved": 0, "min_unit": 1, "max_unit": 8,
                                 "step_size": 1, "allocation_ratio": 2.0}},
        "request": REQUEST},
    "set_inventories": lambda w: {
        "provider_uuid": w.other, "inventories": {"VCPU": {"total": 64}},
        "expected_generation": 1, "request": REQUEST},
    "set_inventory": lambda w: {
        "provider_uuid": w.other, "resource_class": "DISK_GB", "inventory": {"total": 10},
        "expected_generation": 1, "request": REQUEST},
    "delete_inventory": lambda w: {
        "provider_uuid": w.other, "resource_class": "MEMORY_MB", "expected_generation": 1,
        "request": REQUEST},
    "set_devices": lambda w: {
        "provider_uuid": w.gpu, "resource_class": "VGPU",
        "device_ids": ["gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4"],
        "expected_generation": 3, "request": REQUEST},
    "delete_provider": lambda w: {"provider_uuid": w.other, "expected_generation": 1,
                                  "request": REQUEST},
    "swap": lambda w: {"instance_uuid": w.vm, "migration_uuid": new_id(),
                       "expected_generation": 1, "kind": "resize",
                       "destination": {w.other: {"VCPU": 1}}, "request": REQUEST},
    "confirm": lambda w: {"migration_uuid": w.migration, "expected_generation": 1,
                          "request": REQUEST},
    "revert": lambda w: {"migration_uuid": w.migration, "expected_generation": 1,
                         "instance_generation": None, "request": REQUEST},
    "force_live_migrate": lambda w: {
        "instance_uuid": w.vm, "migration_uuid": new_id(), "destination_root": w.other,
        "expected_generation": 1, "request": REQUEST},
    "evacuate": lambda w: {
        "instance_uuid": w.vm, "migration_uuid": new_id(), "expected_generation": 1,
        "destination": {w.other: {"VCPU": 1}}, "destination_root": None,
        "request": REQUEST},
    "complete_evacuation": lambda w: {"migration_uuid": w.migration,
                                      "instance_generation": 1, "request": REQUEST},
}

#: The read side's queries (``ledger.reads``), PostgreSQL and SQLite alike.
QUERIES: dict[str, Callable[[World], dict[str, Any]]] = {
    "host_usage": lambda w: {"root_uuid": w.host},
    "tree_usage": lambda w: {"root_uuid": None},
    "free_capacity": lambda w: {"resource_class": "VCPU", "at_least": 1},
    "devices_of_host": lambda w: {"root_uuid": w.host},
    "migrations_in_flight": lambda w: {"older_than_seconds": 60.0},
}


def paths(value: Any, prefix: Path = ()) -> list[Path]:
    """Every position in ``value``: each argument, each mapping key and value, each item."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            if prefix:
                found.append((*prefix, key, KEY))
            found.extend(paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(paths(item, (*prefix, index)))
    return found


def spoiled(value: Any, path: Path, bad: Any) -> Any:
    """``value`` with the position ``path`` replaced by ``bad`` (a copy)."""
    if not path:
        return bad
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        if rest == (KEY,):
            item = copy.pop(head)
            try:
                copy[bad] = item
            except TypeError:  # unhashable: a key cannot be that
                copy[repr(bad)] = item
            return copy
        copy[head] = spoiled(value[head], rest, bad)
        return copy
    copy_list = list(value)
    copy_list[head] = spoiled(value[head], rest, bad)
    return copy_list
