"""``GET /allocation_candidates`` against a real server on SQLite and PostgreSQL: the
answer's shape at each microversion Placement changed it, and Placement's 400s.

The module's cloud, written through the API: a compute node ``host`` with disk over two
NUMA nodes with CPU and memory (one CPU in use on numa0), and a flat node ``flat`` with all
three. Every class is a ``CUSTOM_`` one named for this module's run, so providers of other
test modules on the same server never match.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from tests.http.server import Answer, Client, running_server
from tests.stores import store_url


@dataclass(frozen=True)
class World:
    """The cloud's provider UUIDs and this run's class names."""

    host: str
    numa0: str
    numa1: str
    flat: str
    cpu: str
    mem: str
    disk: str


def _provider(client: Client, name: str, parent: str | None = None) -> str:
    uuid = str(uuid4())
    body: dict[str, Any] = {"name": f"{name}-{uuid}", "uuid": uuid}
    if parent:
        body["parent_provider_uuid"] = parent
    assert client.call("POST", "/resource_providers", body, "1.20").status == 200
    return uuid


def _inventories(client: Client, uuid: str, totals: dict[str, int]) -> None:
    generation = client.call("GET", f"/resource_providers/{uuid}").body["generation"]
    body = {"resource_provider_generation": generation,
            "inventories": {rc: {"total": n} for rc, n in totals.items()}}
    answer = client.call("PUT", f"/resource_providers/{uuid}/inventories", body)
    assert answer.status == 200, answer.body


@pytest.fixture(scope="module")
def world(server_port: int) -> Iterator[World]:
    client = Client(server_port)
    tag = uuid4().hex[:8].upper()
    cpu, mem, disk = (f"CUSTOM_{kind}_{tag}" for kind in ("CPU", "MEM", "DISK"))
    for rc in (cpu, mem, disk):  # custom classes are created before an inventory uses them
        assert client.call("PUT", f"/resource_classes/{rc}", version="1.7").status == 201
    host = _provider(client, "host")
    numa0 = _provider(client, "numa0", host)
    numa1 = _provider(client, "numa1", host)
    flat = _provider(client, "flat")
    _inventories(client, host, {disk: 100})
    for numa in (numa0, numa1):
        _inventories(client, numa, {cpu: 4, mem: 2048})
    _inventories(client, flat, {cpu: 8, mem: 4096, disk: 100})
    claim = {"allocations": {numa0: {"resources": {cpu: 1}}}, "project_id": "p",
             "user_id": "u"}
    assert client.call("PUT", f"/allocations/{uuid4()}", claim, "1.12").status == 204
    yield World(host, numa0, numa1, flat, cpu, mem, disk)
    client.close()


def ask(client: Client, query: str, version: str) -> Answer:
    return client.call("GET", f"/allocation_candidates?{query}", version=version)


def test_before_1_10_there_is_no_such_route(client: Client, world: World) -> None:
    assert ask(client, f"resources={world.cpu}:1", "1.9").status == 404


def test_1_10_lists_allocations_and_one_provider_per_tree(client: Client, world: World
                                                          ) -> None:
    answer = ask(client, f"resources={world.cpu}:1,{world.disk}:10", "1.10")
    assert answer.status == 200
    # before 1.29 the nested host cannot give CPU from a child and disk from its root
    assert answer.body["allocation_requests"] == [{"allocations": [
        {"resource_provider": {"uuid": world.flat},
         "resources": {world.cpu: 1, world.disk: 10}}]}]
    assert answer.body["provider_summaries"] == {world.flat: {"resources": {
        world.cpu: {"capacity": 8, "used": 0}, world.disk: {"capacity": 100, "used": 0}}}}
    assert "cache-control" not in answer.headers


def test_1_12_keys_allocations_by_provider(client: Client, world: World) -> None:
    answer = ask(client, f"resources={world.cpu}:1,{world.disk}:10", "1.12")
    assert answer.body["allocation_requests"] == [
        {"allocations": {world.flat: {"resources": {world.cpu: 1, world.disk: 10}}}}]


def test_1_15_answers_are_not_cached(client: Client, world: World) -> None:
    answer = ask(client, f"resources={world.cpu}:1", "1.15")
    assert answer.headers["cache-control"] == "no-cache"
    assert answer.headers["last-modified"].endswith(" GMT")


def test_1_17_summaries_show_traits_and_1_27_every_class(client: Client, world: World
                                                         ) -> None:
    at_31 = ask(client, f"resources={world.disk}:10&in_tree={world.flat}", "1.31")
    summary = at_31.body["provider_summaries"][world.flat]
    assert summary["traits"] == []
    assert set(summary["resources"]) == {world.cpu, world.mem, world.disk}
    at_26 = ask(client, f"resources={world.mem}:10", "1.26")
    assert set(at_26.body["provider_summaries"][world.flat]["resources"]) == {world.mem}
    assert at_26.body["provider_summaries"][world.flat]["traits"] == []
    at_16 = ask(client, f"resources={world.mem}:10", "1.16")
    assert "traits" not in at_16.body["provider_summaries"][world.flat]


def test_1_29_spreads_over_the_tree_and_names_parents_and_roots(client: Client, world: World
                                                                ) -> None:
    answer = ask(client, f"resources={world.cpu}:4,{world.disk}:10&in_tree={world.host}",
                 "1.31")
    # numa0 has 1 of 4 CPUs in use: only numa1 can give 4
    assert answer.body["allocation_requests"] == [{"allocations": {
        world.host: {"resources": {world.disk: 10}},
        world.numa1: {"resources": {world.cpu: 4}}}}]
    summaries = answer.body["provider_summaries"]
    assert set(summaries) == {world.host, world.numa0, world.numa1}
    assert summaries[world.numa0]["resources"][world.cpu] == {"capacity": 4, "used": 1}
    assert summaries[world.numa0]["parent_provider_uuid"] == world.host
    assert summaries[world.numa0]["root_provider_uuid"] == world.host
    assert summaries[world.host]["parent_provider_uuid"] is None


def test_1_34_maps_groups_to_providers(client: Client, world: World) -> None:
    query = (f"resources={world.disk}:10&resources_NUMA={world.cpu}:1,{world.mem}:512"
             f"&in_tree={world.host}")
    answer = ask(client, query, "1.34")
    assert [a["mappings"] for a in answer.body["allocation_requests"]] == [
        {"": [world.host], "_NUMA": [numa]} for numa in sorted((world.numa0, world.numa1))]
    assert "mappings" not in ask(client, query, "1.33").body["allocation_requests"][0]


def test_limit_keeps_the_first_candidates_and_their_trees(client: Client, world: World
                                                          ) -> None:
    everything = ask(client, f"resources={world.cpu}:1", "1.29").body
    assert len(everything["allocation_requests"]) == 3
    limited = ask(client, f"resources={world.cpu}:1&limit=1", "1.29").body
    assert limited["allocation_requests"] == everything["allocation_requests"][:1]
    (chosen,) = limited["allocation_requests"][0]["allocations"]
    root = everything["provider_summaries"][chosen]["root_provider_uuid"]
    assert {s["root_provider_uuid"] for s in limited["provider_summaries"].values()} == {root}


@pytest.mark.parametrize(("query", "version", "detail"), [
    ("resources=", "1.10", "Badly formed resources parameter. Expected resources query "
                           "string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. "
                           "Got: empty string."),
    ("limit=1", "1.16", "'resources' is a required property"),
    ("resources=VCPU:1&limit=1", "1.15", "'limit' was unexpected"),
    ("resources=VCPU:1&limit=0", "1.16", "Failed validating 'pattern'"),
    ("resources=NOPE:1", "1.10", "Invalid resource class in resources parameter: No such "
                                 "resource class NOPE."),
    ("resources=VCPU:0", "1.10", "Requested resource VCPU requires amount >= 1. Got: 0."),
    ("resources1=VCPU:1&resources2=VCPU:1", "1.25",
     'The "group_policy" parameter is required when specifying more than one '
     '"resources{N}" parameter.'),
    ("resources=VCPU:1&group_policy=bogus", "1.25", "'bogus' is not one of "
                                                    "['none', 'isolate']"),
    ("resources01=VCPU:1", "1.25", "'resources01' does not match any of the regexes"),
    ("resources=VCPU:1&in_tree=life-is-beautiful", "1.31",
     "Expected 'in_tree' parameter to be a format of uuid"),
    ("resources=VCPU:1&required=!HW_CPU_X86_SSE", "1.21",
     "Invalid query string parameters: Expected 'required' parameter value of the form: "
     "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !HW_CPU_X86_SSE"),
    ("resources=VCPU:1&required=in:A,B", "1.38", "only supported since microversion 1.39"),
    ("resources=VCPU:1&required=A,!A", "1.22", "Conflicting required and forbidden traits "
                                               "found in the following traits keys: "
                                               "required: (A)"),
    ("resources=VCPU:1&member_of=a,b", "1.24", "Multiple values for 'member_of' must be "
                                               "prefixed with the 'in:' or '!in:' keyword"),
    ("resources=VCPU:1&required_X=FOO&same_subtree=_Y", "1.36",
     "Resourceless suffixed group request should be specified in `same_subtree` query "
     "param: bad group(s) - ['_X']."),
    ("resources=VCPU:1&root_required=A&root_required=B", "1.35",
     "Query parameter 'root_required' may be specified only once."),
    ("required=FOO&required1=BAR", "1.25",
     "Found the following orphaned traits keys: required, required1"),
])
def test_placements_400s(client: Client, world: World, query: str, version: str,
                         detail: str) -> None:
    answer = ask(client, query, version)
    assert answer.status == 400, answer.body
    assert detail in answer.body["errors"][0]["detail"]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_two_servers_on_one_store_agree_right_after_a_write(kind: str, tmp_path: Path) -> None:
    with store_url(kind, tmp_path) as url, running_server(url) as port_a, \
            running_server(url) as port_b:
        a, b = Client(port_a), Client(port_b)
        tag = uuid4().hex[:8].upper()
        cpu = f"CUSTOM_CPU_{tag}"
        query = f"resources={cpu}:2"
        assert ask(b, query, "1.29").body["allocation_requests"] == []
        host = _provider(a, "host")
        assert a.call("PUT", f"/resource_classes/{cpu}", version="1.7").status == 201
        _inventories(a, host, {cpu: 4})
        for first, second in ((a, b), (b, a)):
            assert ask(second, query, "1.29").body == ask(first, query, "1.29").body
        assert len(ask(b, query, "1.29").body["allocation_requests"]) == 1
        claim = {"allocations": {host: {"resources": {cpu: 3}}}, "project_id": "p",
                 "user_id": "u"}
        assert a.call("PUT", f"/allocations/{uuid4()}", claim, "1.12").status == 204
        assert ask(b, query, "1.29").body == {"allocation_requests": [],
                                              "provider_summaries": {}}
        a.close()
        b.close()
