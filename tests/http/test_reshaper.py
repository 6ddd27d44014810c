"""``POST /reshaper`` against a real server (SQLite, PostgreSQL), transcribing Placement
16's ``gabbits/reshaper.yaml``: its ``AllocationFixture`` rebuilt by HTTP calls (a provider
with DISK_GB and VCPU, three consumers on it), then its refusals, each leaving the provider
and the consumers as they were, and its two successful reshapes (VCPU to a new child and
back, consumers created and emptied) with the generations Placement answers."""

from __future__ import annotations

import uuid
from typing import Any

from tests.http.server import Answer, Client

P = "/resource_providers"
PROJECT, USER, ALT_USER = "project", "user", "alt-user"
DISK = {"total": 2048, "step_size": 10, "min_unit": 10, "max_unit": 1200}


def new() -> str:
    return str(uuid.uuid4())


class World:
    """Placement's ``AllocationFixture``: RP with DISK_GB 2048 and VCPU 10; CONSUMER_0 holds
    DISK_GB 1000, CONSUMER_ID VCPU 6, ALT_CONSUMER_ID DISK_GB 20 and VCPU 1."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.rp, self.alt_rp = new(), new()
        self.consumer_0, self.consumer_id, self.alt_consumer = new(), new(), new()
        self.instance = new()
        assert self.call("POST", P, {"uuid": self.rp, "name": f"rp-{self.rp}"}, "1.20"
                         ).status == 200
        for rc, inv in (("DISK_GB", {**DISK, "max_unit": 1000}),
                        ("VCPU", {"total": 10, "max_unit": 10})):
            assert self.call("POST", f"{P}/{self.rp}/inventories",
                             {"resource_class": rc, **inv}).status == 201
        for consumer, user, resources in ((self.consumer_0, USER, {"DISK_GB": 1000}),
                                          (self.consumer_id, USER, {"VCPU": 6}),
                                          (self.alt_consumer, ALT_USER,
                                           {"DISK_GB": 20, "VCPU": 1})):
            body = {"allocations": {self.rp: {"resources": resources}}, "project_id": PROJECT,
                    "user_id": user, "consumer_generation": None}
            assert self.call("PUT", f"/allocations/{consumer}", body, "1.28").status == 204

    def call(self, method: str, path: str, body: Any = None, version: str = "1.30") -> Answer:
        return self.client.call(method, path, body, version=version)

    def generation(self, rp: str) -> int:
        return int(self.call("GET", f"{P}/{rp}").body["generation"])

    def usages(self, rp: str) -> Any:
        return self.call("GET", f"{P}/{rp}/usages").body

    def state(self) -> Any:
        """Everything a refusal must leave as it was."""
        providers = [(a.status, a.body if a.status == 200 else None) for a in (
            self.call("GET", f"{P}/{rp}/inventories") for rp in (self.rp, self.alt_rp))]
        consumers = [self.call("GET", f"/allocations/{c}", version="1.28").body
                     for c in (self.consumer_0, self.consumer_id, self.alt_consumer,
                               self.instance)]
        return providers, consumers

    def reshape(self, inventories: Any, allocations: Any, version: str = "1.30") -> Answer:
        return self.call("POST", "/reshaper", {"inventories": inventories,
                                               "allocations": allocations}, version)

    def moved(self, gen_0: int, gen_id: int, gen_alt: int) -> dict[str, Any]:
        """The successful reshape's allocations: VCPU to the child, DISK_GB stays."""
        return {
            self.consumer_0: self.consumer(gen_0, {self.rp: {"DISK_GB": 1000}}),
            self.consumer_id: self.consumer(gen_id, {self.alt_rp: {"VCPU": 8}}),
            self.alt_consumer: self.consumer(gen_alt, {self.rp: {"DISK_GB": 20},
                                                       self.alt_rp: {"VCPU": 1}}, ALT_USER),
        }

    @staticmethod
    def consumer(generation: int | None, allocations: dict[str, dict[str, int]],
                 user: str = USER) -> dict[str, Any]:
        return {"allocations": {rp: {"resources": r} for rp, r in allocations.items()},
                "project_id": PROJECT, "user_id": user, "consumer_generation": generation}


def detail(answer: Answer) -> str:
    return str(answer.body["errors"][0]["detail"])


def test_reshaper_refusals_as_placement(client: Client) -> None:
    w = World(client)
    gen = w.generation(w.rp)
    assert w.call("GET", "/reshaper").status == 405
    assert w.call("GET", "/reshaper").headers["allow"] == "POST"
    assert w.call("POST", "/reshaper", {"cows": "moo"}, "1.29").status == 404
    very_invalid = w.call("POST", "/reshaper", {"cows": "moo"})
    assert very_invalid.status == 400 and "JSON does not validate" in detail(very_invalid)
    vcpu_1 = {w.rp: {"resource_provider_generation": gen, "inventories": {"VCPU": {"total": 1}}}}
    missing = w.call("POST", "/reshaper", {"inventories": vcpu_1})
    assert missing.status == 400
    before = w.state()

    in_use = w.reshape(vcpu_1, {})  # DISK_GB is still allocated
    assert (in_use.status, in_use.code) == (409, "placement.inventory.inuse")

    no_room = w.reshape(vcpu_1, {w.instance: w.consumer(None, {w.rp: {"VCPU": 1}})})
    assert no_room.status == 409 and "Unable to allocate inventory" in detail(no_room)

    stale = w.reshape({w.rp: {**vcpu_1[w.rp], "resource_provider_generation": gen - 1}}, {})
    assert (stale.status, stale.code) == (409, "placement.concurrent_update")
    assert "resource provider generation conflict" in detail(stale)
    assert f"actual: {gen}, given: {gen - 1}" in detail(stale)

    bad_consumer = w.reshape(vcpu_1, {w.instance: w.consumer(99, {w.rp: {"VCPU": 1}})})
    assert bad_consumer.status == 409 and "consumer generation conflict" in detail(bad_consumer)
    assert w.state() == before

    assert w.call("POST", P, {"uuid": w.alt_rp, "name": f"rp-{w.alt_rp}",
                              "parent_provider_uuid": w.rp}, "1.20").status == 200
    before = w.state()

    def shape(**changes: Any) -> dict[str, Any]:
        return {w.rp: {"resource_provider_generation": gen,
                       "inventories": {"DISK_GB": {**DISK, **changes}}},
                w.alt_rp: {"resource_provider_generation": 0,
                           "inventories": {"VCPU": {"total": 10, "max_unit": 8}}}}

    to_bad_child = {w.rp: shape()[w.rp], "39bafc00-3fff-444d-b87a-2ead3f866e05": shape()[w.alt_rp]}
    answer = w.reshape(to_bad_child, w.moved(1, 1, 1))
    assert (answer.status, answer.code) == (400, "placement.resource_provider.not_found")

    answer = w.reshape(shape(bad_field="moo"), w.moved(1, 1, 1))
    assert answer.status == 400 and "JSON does not validate" in detail(answer)
    assert "'bad_field' was unexpected" in detail(answer)
    poorly = w.moved(1, 1, 1)
    poorly[w.consumer_0]["bad_field"] = "moo"
    answer = w.reshape(shape(), poorly)
    assert answer.status == 400 and "'bad_field' was unexpected" in detail(answer)

    steel = shape()
    steel[w.rp]["inventories"] = {"DISK_OF_STEEL": steel[w.rp]["inventories"]["DISK_GB"]}
    answer = w.reshape(steel, w.moved(1, 1, 1))
    assert answer.status == 400 and "No such resource class DISK_OF_STEEL" in detail(answer)

    answer = w.reshape(shape(reserved=4096), w.moved(1, 1, 1))  # above its total
    assert answer.status == 400 and "Bad inventory DISK_GB" in detail(answer)

    answer = w.reshape(shape(max_unit=600), w.moved(1, 1, 1))  # CONSUMER_0's 1000 too big
    assert answer.status == 409 and "Unable to allocate inventory" in detail(answer)
    assert w.state() == before


def test_reshaper_moves_vcpu_to_a_child_and_back(client: Client) -> None:
    w = World(client)
    assert w.call("POST", P, {"uuid": w.alt_rp, "name": f"rp-{w.alt_rp}",
                              "parent_provider_uuid": w.rp}, "1.20").status == 200
    gen, alt_gen = w.generation(w.rp), w.generation(w.alt_rp)
    moved_body = {
        "inventories": {w.rp: {"resource_provider_generation": gen,
                               "inventories": {"DISK_GB": DISK}},
                        w.alt_rp: {"resource_provider_generation": alt_gen,
                                   "inventories": {"VCPU": {"total": 10, "max_unit": 8}}}},
        "allocations": w.moved(1, 1, 1)}
    key = new()
    moved = client.call("POST", "/reshaper", moved_body, version="1.30",
                        headers={"Idempotency-Key": key})
    assert moved.status == 204, moved.body
    retried = client.call("POST", "/reshaper", moved_body, version="1.30",
                          headers={"Idempotency-Key": key})
    assert retried.status == 204, retried.body  # answered from the record: nothing again
    parent, child = w.usages(w.rp), w.usages(w.alt_rp)
    assert parent == {"usages": {"DISK_GB": 1020}, "resource_provider_generation": gen + 3}
    assert child == {"usages": {"VCPU": 9}, "resource_provider_generation": alt_gen + 3}
    listed = w.call("GET", f"{P}/{w.alt_rp}/allocations", version="1.28").body  # read side
    assert {c: a["resources"] for c, a in listed["allocations"].items()} == {
        w.consumer_id: {"VCPU": 8}, w.alt_consumer: {"VCPU": 1}}

    new_vcpu, new_mixed = "7bd2e864-0415-445c-8fc2-328520ef7642", new()
    both = {"DISK_GB": DISK, "VCPU": {"total": 10, "max_unit": 8}}
    back = w.reshape(
        {w.rp: {"resource_provider_generation": gen + 3, "inventories": both},
         w.alt_rp: {"resource_provider_generation": alt_gen + 3, "inventories": {}}},
        {w.consumer_0: w.consumer(2, {w.rp: {"DISK_GB": 1000}}),
         new_vcpu: w.consumer(None, {w.rp: {"VCPU": 8}}),
         new_mixed: w.consumer(None, {w.rp: {"DISK_GB": 20, "VCPU": 1}}, ALT_USER),
         w.consumer_id: w.consumer(2, {}),
         w.alt_consumer: w.consumer(2, {w.rp: {"DISK_GB": 20}}, ALT_USER)})
    assert back.status == 204, back.body
    assert w.usages(w.rp) == {"usages": {"VCPU": 9, "DISK_GB": 1040},
                              "resource_provider_generation": gen + 6}
    assert w.usages(w.alt_rp) == {"usages": {}, "resource_provider_generation": alt_gen + 5}

    with_mappings = {
        w.rp: {"resource_provider_generation": gen + 6, "inventories": both},
        w.alt_rp: {"resource_provider_generation": alt_gen + 5, "inventories": {}}}
    consumers = {
        w.consumer_0: {**w.consumer(3, {w.rp: {"DISK_GB": 1000}}), "mappings": {"": [w.rp]}},
        new_vcpu: w.consumer(1, {w.rp: {"VCPU": 8}}),
        new_mixed: w.consumer(1, {w.rp: {"DISK_GB": 20, "VCPU": 1}}, ALT_USER),
        w.consumer_id: w.consumer(None, {}),  # emptied above: holds nothing, left out
        w.alt_consumer: w.consumer(3, {w.rp: {"DISK_GB": 20}}, ALT_USER)}
    early = w.reshape(with_mappings, consumers, "1.33")
    assert early.status == 400 and "Additional properties are not allowed" in detail(early)
    assert w.reshape(with_mappings, consumers, "1.34").status == 204

    typed = {c: {**body, "consumer_type": "INSTANCE"} for c, body in consumers.items()
             if c != w.consumer_id}
    for body in typed.values():
        body["consumer_generation"] += 1
        body.pop("mappings", None)
    # nothing moved: the ledger advances a provider on an allocation write only where its
    # usage changes (Placement on every provider the write names), so read it
    again = {w.rp: {**with_mappings[w.rp], "resource_provider_generation": w.generation(w.rp)},
             w.alt_rp: {**with_mappings[w.alt_rp],
                        "resource_provider_generation": w.generation(w.alt_rp)}}
    untyped = w.reshape(again, {c: {k: v for k, v in b.items() if k != "consumer_type"}
                                for c, b in typed.items()}, "1.38")
    assert untyped.status == 400 and "consumer_type" in detail(untyped)
    assert w.reshape(again, typed, "1.38").status == 204
    shown = w.call("GET", f"/allocations/{new_vcpu}", version="1.38").body
    assert (shown["consumer_type"], shown["consumer_generation"]) == ("INSTANCE", 3)
