"""Allocation candidates, the ledger's beside Placement 16's, on random clouds and requests.

Each cloud (nested trees of compute nodes, NUMA nodes and PFs; sharing providers; traits;
aggregates; partial usage; reserved, min/max/step and ratios) is built in a real Placement
(its own migrations and WSGI application, ``candidates_placement.py`` in
``.venv-placement``) and as ledger snapshots; every random request is answered by both and
the answers compared whole (status; candidates and summaries, order aside).

Two kinds of request are Placement's documented defects (``domain/candidates.py``): one
resource class asked by two or more groups with ``group_policy`` not ``none`` (Placement
piles amounts up across candidates), and the unnumbered group satisfied by sharing providers
alone beside granular groups (Placement keeps that for one anchor tree only). Those are
not compared with Placement; the ledger's answer is checked against the rules instead
(every candidate within capacity, every group's mapping present).
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from allocation_ledger.domain.candidates import search
from allocation_ledger.domain.candidates_request import SHARING_TRAIT, ProviderSnapshot
from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.domain.values import Inventory, is_valid_resource_class
from allocation_ledger.http.allocation_candidates import shape
from allocation_ledger.http.candidates_query import parse
from allocation_ledger.http.errors import HTTPError
from tests.placement.test_import import placement_python

DRIVER = Path(__file__).with_name("candidates_placement.py")
TRAITS = ("CUSTOM_A", "CUSTOM_B", "CUSTOM_C", "HW_NUMA_ROOT")
CREATED = ["CUSTOM_A", "CUSTOM_B", "CUSTOM_C"]  # CUSTOM_NOPE is asked for, never created


def _uuid(rng: random.Random) -> str:
    return str(UUID(int=rng.getrandbits(128), version=4))


def _inventory(rng: random.Random, rc: str) -> tuple[dict[str, Any], int]:
    """Random inventory fields and a valid usage for them."""
    total = rng.choice((4, 8, 16, 64)) * (256 if rc == "MEMORY_MB" else 1)
    inv = {"total": total, "reserved": rng.choice((0, 0, 1)),
           "min_unit": rng.choice((1, 1, 2)), "step_size": rng.choice((1, 1, 2)),
           "allocation_ratio": rng.choice((1.0, 1.0, 1.5, 0.5))}
    inv["max_unit"] = rng.choice((total, total, max(inv["min_unit"], total // 2)))
    capacity = int((total - inv["reserved"]) * inv["allocation_ratio"])
    used = 0
    if rng.random() < 0.5:
        step, low = inv["step_size"], inv["min_unit"]
        choices = [n for n in range(low, min(inv["max_unit"], capacity) + 1) if n % step == 0]
        used = rng.choice(choices) if choices else 0
    return inv, used


def random_cloud(rng: random.Random) -> list[dict[str, Any]]:
    aggs = [_uuid(rng) for _ in range(3)]
    providers: list[dict[str, Any]] = []

    def add(name: str, parent: dict[str, Any] | None, classes: list[str], *,
            traits: tuple[str, ...] = (), in_aggs: bool = False) -> dict[str, Any]:
        p: dict[str, Any] = {"uuid": _uuid(rng), "name": name,
                             "parent": parent["uuid"] if parent else None,
                             "inventories": {}, "usages": {},
                             "traits": sorted({*traits, *rng.sample(TRAITS[:3],
                                                                  rng.randint(0, 2))}),
                             "aggregates": sorted(rng.sample(aggs, rng.randint(1, 2)))
                             if in_aggs else []}
        for rc in classes:
            p["inventories"][rc], used = _inventory(rng, rc)
            if used:
                p["usages"][rc] = used
        providers.append(p)
        return p

    all_flat = rng.random() < 0.25  # Placement takes other paths in a cloud without trees
    for h in range(rng.randint(2, 4)):
        flat = all_flat or rng.random() < 0.4
        root = add(f"cn{h}", None,
                   ["VCPU", "MEMORY_MB", "DISK_GB"] if flat
                   else rng.sample(["DISK_GB", "SRIOV_NET_VF"], rng.randint(0, 1)),
                   in_aggs=rng.random() < 0.8)
        if flat:
            continue
        for n in range(rng.randint(1, 2)):
            numa = add(f"cn{h}-numa{n}", root, ["VCPU", "MEMORY_MB"],
                       traits=("HW_NUMA_ROOT",), in_aggs=rng.random() < 0.15)
            if rng.random() < 0.5:
                add(f"cn{h}-numa{n}-pf", numa, ["SRIOV_NET_VF"])
    for s in range(rng.randint(0, 1 if all_flat else 2)):
        add(f"shared{s}", None, rng.sample(["DISK_GB", "SRIOV_NET_VF"], rng.randint(1, 2)),
            traits=(SHARING_TRAIT,), in_aggs=True)
    return providers


def _amounts(rng: random.Random, classes: list[str]) -> str:
    return ",".join(f"{rc}:{rng.choice((1, 1, 2, 3, 4)) * (256 if rc == 'MEMORY_MB' else 1)}"
                    for rc in classes)


def random_query(rng: random.Random, providers: list[dict[str, Any]]) -> tuple[str, str]:
    """A random request: (microversion, query string)."""
    version = rng.choice(("1.39", "1.39", "1.39", "1.29", "1.28"))
    latest = version == "1.39"
    aggs = sorted({a for p in providers for a in p["aggregates"]})
    classes = ["VCPU", "MEMORY_MB", "DISK_GB", "SRIOV_NET_VF"]
    params = [("resources", _amounts(rng, rng.sample(classes, rng.randint(1, 3))))]
    if rng.random() < 0.3:
        trait = rng.choice((*TRAITS, "CUSTOM_NOPE") if rng.random() < 0.1 else TRAITS)
        params.append(("required", trait if rng.random() < 0.5 else f"!{trait}"))
    if rng.random() < 0.2 and aggs:
        agg = rng.choice(aggs)
        params.append(("member_of", f"!{agg}" if latest and rng.random() < 0.3 else agg))
    if latest and rng.random() < 0.15:
        params.append(("in_tree", rng.choice(providers)["uuid"]))
    granular = rng.choice((0, 0, 1, 1, 2))
    for n in range(1, granular + 1):
        params.append((f"resources{n}", _amounts(rng, rng.sample(classes, rng.randint(1, 2)))))
        if rng.random() < 0.3:
            params.append((f"required{n}", rng.choice(TRAITS)))
    if granular:
        params.append(("group_policy", rng.choice(("none", "isolate"))))
    if latest and granular == 2 and rng.random() < 0.3:
        params.append(("same_subtree", "1,2"))
    if latest and rng.random() < 0.15:
        params.append(("root_required", rng.choice(("CUSTOM_A", "!CUSTOM_A", "!CUSTOM_B"))))
    return version, "&".join(f"{k}={v}" for k, v in params)


def ledger_answer(providers: list[dict[str, Any]], version: str, query: str
                  ) -> dict[str, Any]:
    by_uuid = {p["uuid"]: p for p in providers}
    snapshots = []
    for p in providers:
        root = p
        while root["parent"]:
            root = by_uuid[root["parent"]]
        snapshots.append(ProviderSnapshot(
            p["uuid"], p["name"], p["parent"], root["uuid"], 0,
            {rc: Inventory(**fields) for rc, fields in p["inventories"].items()},
            dict(p["usages"]), frozenset(p["traits"]), frozenset(p["aggregates"])))
    major, minor = (int(x) for x in version.split("."))
    items = [tuple(kv.split("=", 1)) for kv in query.split("&")]
    try:
        request = parse((major, minor), items)  # type: ignore[arg-type]
    except HTTPError as err:
        return {"status": err.status, "body": None}
    try:
        found = search(snapshots, request, class_exists=is_valid_resource_class,
                       trait_exists=lambda t: not t.startswith("CUSTOM_") or t in CREATED)
    except InvalidRequest:
        return {"status": 400, "body": None}
    return {"status": 200, "body": shape((major, minor), request, found),
            "request": request, "found": found, "snapshots": snapshots}


def normalized(body: dict[str, Any]) -> dict[str, Any]:
    """An answer with its order taken out."""
    def areq(a: dict[str, Any]) -> str:
        a = dict(a)
        if "mappings" in a:
            a["mappings"] = {k: sorted(v) for k, v in a["mappings"].items()}
        if isinstance(a["allocations"], list):
            a["allocations"] = sorted(a["allocations"], key=json.dumps)
        return json.dumps(a, sort_keys=True)

    summaries = {u: {**s, **({"traits": sorted(s["traits"])} if "traits" in s else {})}
                 for u, s in body["provider_summaries"].items()}
    return {"allocation_requests": sorted(areq(a) for a in body["allocation_requests"]),
            "provider_summaries": summaries}


def known_defect(answer: dict[str, Any]) -> str | None:
    """Why Placement's answer to this request is not the right one to compare with."""
    request, snapshots = answer["request"], answer["snapshots"]
    seen: set[str] = set()
    for group in request.groups:
        if request.group_policy != "none" and seen & set(group.resources):
            return "one class in several groups, group_policy not none"
        seen |= set(group.resources)
    sharing = {s.uuid for s in snapshots if SHARING_TRAIT in s.traits}
    if len(request.groups) > 1 and any(
            set(a.mappings.get("", ("-",))) <= sharing
            for a in answer["found"].allocation_requests):
        return "the unnumbered group satisfied by sharing providers alone"
    return None


def check_rules(answer: dict[str, Any]) -> None:
    """The ledger's own answer obeys capacity and maps every group."""
    by_uuid = {s.uuid: s for s in answer["snapshots"]}
    suffixes = {g.suffix for g in answer["request"].groups}
    for a in answer["found"].allocation_requests:
        assert set(a.mappings) == suffixes
        for rp, resources in a.allocations.items():
            s = by_uuid[rp]
            for rc, n in resources.items():
                inv = s.inventories[rc]
                assert n <= inv.max_unit and s.used(rc) + n <= inv.capacity, (rp, rc, n)


def run(seed: int, clouds: int, queries: int) -> dict[str, int]:
    python = placement_python()
    counts = {"compared": 0, "defect": 0, "candidates": 0, "answered": 0}
    rng = random.Random(seed)
    for _ in range(clouds):
        providers = random_cloud(rng)
        asked = [random_query(rng, providers) for _ in range(queries)]
        given = {"providers": providers, "traits": CREATED, "queries": asked}
        out = subprocess.run([python, str(DRIVER)], input=json.dumps(given),
                             capture_output=True, text=True, check=True, cwd=DRIVER.parent)
        theirs = json.loads(out.stdout)
        for (version, query), placement in zip(asked, theirs, strict=True):
            ours = ledger_answer(providers, version, query)
            where = f"seed {seed}, {version} ?{query}\ncloud: {json.dumps(providers)}"
            assert ours["status"] == placement["status"], where
            if ours["status"] != 200:
                continue
            if known_defect(ours):
                counts["defect"] += 1
                check_rules(ours)
                continue
            assert normalized(ours["body"]) == normalized(placement["body"]), where
            counts["compared"] += 1
            counts["candidates"] += len(ours["body"]["allocation_requests"])
            counts["answered"] += bool(ours["body"]["allocation_requests"])
    return counts


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_candidates_equal_placements(seed: int) -> None:
    counts = run(seed, clouds=2, queries=40)
    assert counts["compared"] > 40 and counts["answered"] > 10, counts


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 110))
def test_candidates_equal_placements_many(seed: int) -> None:
    counts = run(seed, clouds=5, queries=80)
    assert counts["compared"] > 250 and counts["answered"] > 30, counts


AGG = "11111111-1111-4111-8111-111111111111"
BAD_QUERIES = [
    ("1.10", "resources="), ("1.10", "resources=VCPU"), ("1.10", "resources=VCPU:x"),
    ("1.10", "resources=VCPU:0"), ("1.16", "limit=1"), ("1.15", "resources=VCPU:1&limit=1"),
    ("1.16", "resources=VCPU:1&limit=0"), ("1.16", "resources=VCPU:1&limit=-1"),
    ("1.25", "resources1=VCPU:1&resources2=VCPU:1"),
    ("1.25", "resources=VCPU:1&group_policy=bogus"), ("1.25", "resources01=VCPU:1"),
    ("1.33", "resources1@=VCPU:1"), ("1.31", "resources=VCPU:1&in_tree=xx"),
    ("1.21", "resources=VCPU:1&required=!A"), ("1.38", "resources=VCPU:1&required=in:A,B"),
    ("1.39", "resources=VCPU:1&required=in:A,!B"), ("1.39", "resources=VCPU:1&required=in:A,,B"),
    ("1.22", "resources=VCPU:1&required=A,!A"), ("1.22", "resources=VCPU:1&required=A,,B"),
    ("1.21", "resources=VCPU:1&required=A,,B"), ("1.24", "resources=VCPU:1&member_of=a,b"),
    ("1.23", f"resources=VCPU:1&member_of=in:{AGG}&member_of={AGG}"),
    ("1.31", f"resources=VCPU:1&member_of=!{AGG}"), ("1.32", "resources=VCPU:1&member_of=nope"),
    ("1.36", "resources=VCPU:1&required_X=FOO&same_subtree=_Y"),
    ("1.36", "resources=VCPU:1&resources_X=VCPU:1&same_subtree=_X,_Z&group_policy=none"),
    ("1.36", "resources=VCPU:1&same_subtree=,_X"), ("1.36", "required_X=FOO&same_subtree=_X"),
    ("1.36", "group_policy=none"), ("1.25", "group_policy=none"),
    ("1.35", "resources=VCPU:1&root_required=A&root_required=B"),
    ("1.35", "resources=VCPU:1&root_required=A,!A"),
    ("1.35", "resources=VCPU:1&root_required=in:A"), ("1.25", "required=FOO&required1=BAR"),
    ("1.25", f"member_of={AGG}&resources1=VCPU:1"),
    ("1.31", f"resources=VCPU:1&in_tree1={AGG}"), ("1.10", "resources=VCPU:1&foo=1"),
    ("1.25", "resources=VCPU:1&foo=1"), ("1.34", "resources=VCPU:1&root_required=A"),
    ("1.35", "resources=VCPU:1&same_subtree=_A"), ("1.10", "resources=NOPE:1"),
    ("1.17", "resources=VCPU:1&required=CUSTOM_NOPE"),
]


def test_bad_queries_are_refused_with_placements_texts() -> None:
    """Each 400 of Placement 16, its status and text (Placement wraps the text in webob's
    sentence; the ledger's first line is found inside it)."""
    given = {"providers": [], "traits": [], "queries": BAD_QUERIES}
    out = subprocess.run([placement_python(), str(DRIVER)], input=json.dumps(given),
                         capture_output=True, text=True, check=True, cwd=DRIVER.parent)
    for (version, query), theirs in zip(BAD_QUERIES, json.loads(out.stdout), strict=True):
        major, minor = (int(x) for x in version.split("."))
        try:
            request = parse((major, minor), [tuple(kv.split("=", 1))  # type: ignore[misc]
                                             for kv in query.split("&")])
            search([], request, class_exists=is_valid_resource_class,
                   trait_exists=lambda t: not t.startswith("CUSTOM_"))
        except HTTPError as err:
            ours = err.detail
        except InvalidRequest as err:
            ours = err.message
        else:
            ours = "(answered)"
        assert theirs["status"] == 400, (version, query)
        assert ours.split("\n")[0] in theirs["body"]["errors"][0]["detail"], (version, query)
