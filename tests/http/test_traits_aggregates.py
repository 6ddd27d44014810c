"""Traits, aggregates and the provider-list filters over HTTP, against a real server on
SQLite and PostgreSQL, with Placement's statuses, texts and error codes (its gabbits
``traits.yaml``, ``aggregate.yaml``, ``resource-provider*.yaml`` as the reference).
Generations are read from the answers, never assumed."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.http.server import Client

P = "/resource_providers"
LATEST = "1.39"
AVX2 = "HW_CPU_X86_AVX2"
CONCURRENT = "placement.concurrent_update"


def new_id() -> str:
    return str(uuid.uuid4())


#: fixed aggregate UUIDs for parameters (test ids must be the same in every xdist worker)
AGG_A = "6f1c2b9e-0d4a-4c3e-9b8f-2a7e5d1c0b01"
AGG_B = "6f1c2b9e-0d4a-4c3e-9b8f-2a7e5d1c0b02"


def a_provider(client: Client, *, parent: str | None = None,
               inventories: dict[str, Any] | None = None) -> str:
    """A fresh provider (with inventory, if given); its UUID."""
    rp = new_id()
    body: dict[str, Any] = {"name": f"rp-{rp}", "uuid": rp}
    if parent is not None:
        body["parent_provider_uuid"] = parent
    assert client.call("POST", P, body, version="1.20").status == 200
    if inventories:
        gen = generation(client, rp)
        answer = client.call("PUT", f"{P}/{rp}/inventories",
                             {"inventories": inventories, "resource_provider_generation": gen},
                             version=LATEST)
        assert answer.status == 200, answer.body
    return rp


def generation(client: Client, rp: str) -> int:
    return int(client.call("GET", f"{P}/{rp}", version=LATEST).body["generation"])


def detail(answer: Any) -> str:
    return str(answer.body["errors"][0]["detail"])


# -- /traits ------------------------------------------------------------------------------


def test_custom_traits_are_created_shown_listed_and_deleted(client: Client) -> None:
    name = f"CUSTOM_T_{uuid.uuid4().hex.upper()}"
    created = client.call("PUT", f"/traits/{name}", version="1.6")
    # Location is absolute, as Placement's web framework sends it
    assert created.status == 201
    assert created.headers["location"].endswith(f"/traits/{name}")
    assert client.call("PUT", f"/traits/{name}", version="1.6").status == 204
    assert client.call("GET", f"/traits/{name}", version="1.6").status == 204
    assert client.call("GET", f"/traits/{AVX2}", version="1.6").status == 204
    listed = client.call("GET", f"/traits?name=startswith:{name}", version="1.6")
    assert listed.body == {"traits": [name]}
    named = client.call("GET", f"/traits?name=in:{name},{AVX2},CUSTOM_NOPE", version="1.6")
    assert sorted(named.body["traits"]) == sorted([name, AVX2])
    assert client.call("DELETE", f"/traits/{name}", version="1.6").status == 204
    gone = client.call("GET", f"/traits/{name}", version="1.6")
    assert gone.status == 404 and detail(gone) == f"No such trait(s): {name}."
    assert client.call("PUT", f"/traits/{name}", version="1.6").status == 201


@pytest.mark.parametrize(("method", "path", "status", "text"), [
    ("PUT", "/traits/NON_CUSTOM", 400, "The trait is invalid."),
    ("PUT", "/traits/CUSTOM_lower", 400, "The trait is invalid."),
    ("DELETE", f"/traits/{AVX2}", 400, f"Cannot delete standard trait {AVX2}."),
    ("DELETE", "/traits/CUSTOM_NEVER_MADE", 404, "No such trait(s): CUSTOM_NEVER_MADE."),
    ("GET", "/traits/CUSTOM_NEVER_MADE", 404, "No such trait(s)"),
    ("GET", "/traits?name=in_abc", 400, "Badly formatted name parameter"),
    ("GET", "/traits?associated=maybe", 400, 'only accepts "true" or "false"'),
    ("GET", "/traits?other=1", 400, "Invalid query string parameters"),
])
def test_trait_refusals(client: Client, method: str, path: str, status: int,
                        text: str) -> None:
    answer = client.call(method, path, version="1.6")
    assert answer.status == status
    assert text in detail(answer)


@pytest.mark.parametrize("path", ["/traits", f"/traits/{AVX2}", f"{P}/{{rp}}/traits"])
def test_traits_are_not_served_before_1_6(client: Client, path: str) -> None:
    rp = a_provider(client)
    assert client.call("GET", path.format(rp=rp), version="1.5").status == 404


def test_a_trait_in_use_cannot_be_deleted(client: Client) -> None:
    name = f"CUSTOM_USED_{uuid.uuid4().hex.upper()}"
    client.call("PUT", f"/traits/{name}", version="1.6")
    rp = a_provider(client)
    client.call("PUT", f"{P}/{rp}/traits", {"traits": [name],
                                             "resource_provider_generation":
                                                 generation(client, rp)}, version="1.6")
    refused = client.call("DELETE", f"/traits/{name}", version="1.6")
    assert refused.status == 409
    assert f"The trait {name} is in use by a resource provider." in detail(refused)
    associated = client.call("GET", "/traits?associated=true", version="1.6").body["traits"]
    assert name in associated
    unassociated = client.call("GET", "/traits?associated=false", version="1.6").body
    assert name not in unassociated["traits"]


# -- /resource_providers/{uuid}/traits ------------------------------------------------------


def test_provider_traits_replaced_with_the_generation(client: Client) -> None:
    rp = a_provider(client)
    empty = client.call("GET", f"{P}/{rp}/traits", version="1.6")
    gen = empty.body["resource_provider_generation"]
    assert empty.body == {"traits": [], "resource_provider_generation": gen}
    put = client.call("PUT", f"{P}/{rp}/traits",
                      {"traits": [AVX2, "HW_CPU_X86_SSE"], "resource_provider_generation": gen},
                      version="1.6")
    assert put.status == 200
    assert sorted(put.body["traits"]) == sorted([AVX2, "HW_CPU_X86_SSE"])
    assert put.body["resource_provider_generation"] == gen + 1
    stale = client.call("PUT", f"{P}/{rp}/traits",
                        {"traits": [], "resource_provider_generation": gen}, version="1.6")
    assert (stale.status, stale.code) == (409, CONCURRENT)
    assert "Resource provider's generation already changed" in detail(stale)
    got = client.call("GET", f"{P}/{rp}/traits", version="1.6").body
    assert sorted(got["traits"]) == sorted([AVX2, "HW_CPU_X86_SSE"])
    assert client.call("DELETE", f"{P}/{rp}/traits", version="1.6").status == 204
    after = client.call("GET", f"{P}/{rp}/traits", version="1.6").body
    assert after["traits"] == [] and after["resource_provider_generation"] == gen + 2


@pytest.mark.parametrize(("body", "text"), [
    ({"traits": [AVX2]}, "'resource_provider_generation' is a required property"),
    ({"traits": [AVX2], "resource_provider_generation": "invalid_generation"},
     "'invalid_generation' is not of type 'integer'"),
    ({"traits": "invalid_type", "resource_provider_generation": 0},
     "'invalid_type' is not of type 'array'"),
    ({"traits": [AVX2], "resource_provider_generation": 0, "extra": 1},
     "Additional properties are not allowed"),
    ({"traits": [AVX2, AVX2], "resource_provider_generation": 0}, "non-unique"),
])
def test_provider_trait_bodies_refused(client: Client, body: Any, text: str) -> None:
    rp = a_provider(client)
    answer = client.call("PUT", f"{P}/{rp}/traits", body, version="1.6")
    assert answer.status == 400 and text in detail(answer)


def test_a_provider_trait_must_exist(client: Client) -> None:
    rp = a_provider(client)
    gen = generation(client, rp)
    answer = client.call("PUT", f"{P}/{rp}/traits",
                         {"traits": ["NON_EXISTED_TRAIT1", AVX2],
                          "resource_provider_generation": gen}, version="1.6")
    assert answer.status == 400
    assert "No such trait" in detail(answer) and "NON_EXISTED_TRAIT1" in detail(answer)
    assert generation(client, rp) == gen


def test_provider_traits_of_an_absent_provider(client: Client) -> None:
    absent = new_id()
    for method, body in (("GET", None), ("DELETE", None),
                         ("PUT", {"traits": [], "resource_provider_generation": 0})):
        assert client.call(method, f"{P}/{absent}/traits", body, version="1.6").status == 404


# -- /resource_providers/{uuid}/aggregates ------------------------------------------------


def test_aggregates_from_1_19_carry_and_advance_the_generation(client: Client) -> None:
    rp = a_provider(client)
    agg1, agg2 = "f918801a-5e54-4bee-9095-09a9d0c786b8", "a893eb5c-e2a0-4251-ab26-f71d3b0cfc0b"
    empty = client.call("GET", f"{P}/{rp}/aggregates", version="1.19").body
    gen = empty["resource_provider_generation"]
    assert empty == {"aggregates": [], "resource_provider_generation": gen}
    put = client.call("PUT", f"{P}/{rp}/aggregates",
                      {"aggregates": [agg1, agg2], "resource_provider_generation": gen},
                      version="1.19")
    assert put.status == 200
    assert put.body == {"aggregates": [agg1, agg2], "resource_provider_generation": gen + 1}
    stale = client.call("PUT", f"{P}/{rp}/aggregates",
                        {"aggregates": [], "resource_provider_generation": gen},
                        version="1.19")
    assert (stale.status, stale.code) == (409, CONCURRENT)
    got = client.call("GET", f"{P}/{rp}/aggregates", version="1.19").body
    assert sorted(got["aggregates"]) == sorted([agg1, agg2])
    cleared = client.call("PUT", f"{P}/{rp}/aggregates",
                          {"aggregates": [], "resource_provider_generation": gen + 1},
                          version="1.19")
    assert cleared.body == {"aggregates": [], "resource_provider_generation": gen + 2}


def test_aggregates_before_1_19_are_a_plain_list(client: Client) -> None:
    rp = a_provider(client)
    agg = new_id()
    put = client.call("PUT", f"{P}/{rp}/aggregates", [agg], version="1.1")
    assert put.status == 200 and put.body == {"aggregates": [agg]}
    assert client.call("GET", f"{P}/{rp}/aggregates", version="1.18").body == {
        "aggregates": [agg]}


@pytest.mark.parametrize(("version", "body", "text"), [
    ("1.19", ["f918801a-5e54-4bee-9095-09a9d0c786b8"], "JSON does not validate"),
    ("1.18", {"aggregates": [], "resource_provider_generation": 0}, "JSON does not validate"),
    ("1.19", {"aggregates": []}, "JSON does not validate"),
    ("1.19", {"aggregates": ["harry", "sally"], "resource_provider_generation": 0},
     "is not a 'uuid'"),
    ("1.19", {"aggregates": ["f918801a-5e54-4bee-9095-09a9d0c786b8"] * 2,
              "resource_provider_generation": 0}, "has non-unique elements"),
])
def test_aggregate_bodies_refused(client: Client, version: str, body: Any, text: str) -> None:
    rp = a_provider(client)
    answer = client.call("PUT", f"{P}/{rp}/aggregates", body, version=version)
    assert answer.status == 400 and text in detail(answer)


def test_aggregates_are_not_served_at_1_0_nor_for_an_absent_provider(client: Client) -> None:
    rp = a_provider(client)
    assert client.call("GET", f"{P}/{rp}/aggregates", version="1.0").status == 404
    assert client.call("PUT", f"{P}/{rp}/aggregates", [], version="1.0").status == 404
    assert client.call("GET", f"{P}/{new_id()}/aggregates", version="1.1").status == 404
    assert client.call("PUT", f"{P}/{new_id()}/aggregates", [], version="1.1").status == 404


# -- GET /resource_providers filters --------------------------------------------------------


def listed(client: Client, query: str, version: str = LATEST) -> set[str]:
    answer = client.call("GET", f"{P}?{query}", version=version)
    assert answer.status == 200, answer.body
    return {r["uuid"] for r in answer.body["resource_providers"]}


def with_traits(client: Client, rp: str, traits: list[str]) -> None:
    answer = client.call("PUT", f"{P}/{rp}/traits", {
        "traits": traits, "resource_provider_generation": generation(client, rp)},
        version=LATEST)
    assert answer.status == 200, answer.body


def with_aggregates(client: Client, rp: str, aggregates: list[str]) -> None:
    answer = client.call("PUT", f"{P}/{rp}/aggregates", {
        "aggregates": aggregates, "resource_provider_generation": generation(client, rp)},
        version=LATEST)
    assert answer.status == 200, answer.body


def test_required_forbidden_and_any_traits(client: Client) -> None:
    gold = f"CUSTOM_GOLD_{uuid.uuid4().hex.upper()}"
    client.call("PUT", f"/traits/{gold}", version="1.6")
    a, b, c = a_provider(client), a_provider(client), a_provider(client)
    with_traits(client, a, [AVX2, gold])
    with_traits(client, b, [AVX2])
    with_traits(client, c, [gold])
    assert listed(client, f"required={AVX2}", "1.18") >= {a, b}
    assert c not in listed(client, f"required={AVX2}", "1.18")
    assert listed(client, f"required={AVX2},{gold}", "1.18") == {a}
    assert listed(client, f"required={gold},!{AVX2}", "1.22") == {c}
    assert listed(client, f"required=in:{gold},{AVX2}&required={gold}", "1.39") == {a, c}
    # before 1.39 only the last required parameter counts
    assert listed(client, f"required={gold}&required={AVX2}", "1.38") >= {a, b}


@pytest.mark.parametrize(("query", "version", "text"), [
    ("required=CUSTOM_NOPE_NEVER", LATEST, 'Invalid trait(s) in "required" parameter'),
    (f"required=!{AVX2}", "1.21", "Expected 'required' parameter value of the form"),
    (f"required=in:{AVX2}", "1.38", "only supported since microversion 1.39"),
    (f"required=in:{AVX2},!X", LATEST, "does not support forbidden traits"),
    (f"required={AVX2},", LATEST, "Got an empty trait"),
    (f"required={AVX2}", "1.17", "Invalid query string parameters"),
    ("member_of=not-a-uuid", LATEST, "Expected 'member_of' parameter to contain valid UUID"),
    (f"member_of={AGG_A},{AGG_B}", LATEST, "must be prefixed with the 'in:'"),
    (f"member_of={AGG_A}&member_of={AGG_B}", "1.23",
     "Multiple member_of parameters are not supported"),
    (f"member_of=!{AGG_A}", "1.31", "Forbidden member_of parameters are not supported"),
    ("member_of=x", "1.2", "Invalid query string parameters"),
    ("resources=VCPU", LATEST, "Badly formed resources parameter"),
    ("resources=", LATEST, "Badly formed resources parameter"),
    ("resources=VCPU:x", LATEST, "expected positive integer amount"),
    ("resources=VCPU:0", LATEST, "requires amount >= 1"),
    ("resources=NOT_A_CLASS:1", LATEST, "Invalid resource class in resources parameter"),
    ("resources=VCPU:1", "1.3", "Invalid query string parameters"),
    ("in_tree=nope", LATEST, "in_tree"),
])
def test_filter_refusals(client: Client, query: str, version: str, text: str) -> None:
    answer = client.call("GET", f"{P}?{query}", version=version)
    assert answer.status == 400, answer.body
    assert text in detail(answer)


def test_member_of_any_all_and_forbidden(client: Client) -> None:
    agg1, agg2, agg3 = new_id(), new_id(), new_id()
    a, b, c = a_provider(client), a_provider(client), a_provider(client)
    with_aggregates(client, a, [agg1, agg2])
    with_aggregates(client, b, [agg2])
    with_aggregates(client, c, [agg3])
    assert listed(client, f"member_of={agg2}", "1.3") == {a, b}
    assert listed(client, f"member_of=in:{agg1},{agg3}", "1.3") == {a, c}
    assert listed(client, f"member_of={agg1}&member_of={agg2}", "1.24") == {a}
    assert listed(client, f"member_of=in:{agg2},{agg3}&member_of=!{agg1}", "1.32") == {b, c}
    assert listed(client, f"member_of=!in:{agg1},{agg3}&member_of={agg2}", "1.32") == {b}
    assert listed(client, f"member_of={new_id()}", "1.3") == set()


def test_in_tree_and_resources_with_units(client: Client) -> None:
    root = a_provider(client, inventories={"VCPU": {"total": 8}})
    child = a_provider(client, parent=root, inventories={
        "VGPU": {"total": 8, "min_unit": 2, "max_unit": 4, "step_size": 2}})
    other = a_provider(client, inventories={"VCPU": {"total": 2}})
    assert listed(client, f"in_tree={child}", "1.14") == {root, child}
    assert listed(client, f"in_tree={new_id()}", "1.14") == set()
    vgpu = listed(client, f"in_tree={root}&resources=VGPU:4", "1.14")
    assert vgpu == {child}
    assert listed(client, f"in_tree={root}&resources=VGPU:1") == set()  # below min_unit
    assert listed(client, f"in_tree={root}&resources=VGPU:3") == set()  # step_size 2
    assert listed(client, f"in_tree={root}&resources=VGPU:6") == set()  # above max_unit
    assert other in listed(client, "resources=VCPU:2")
    assert other not in listed(client, "resources=VCPU:3")
    claim = client.call("PUT", f"/allocations/{new_id()}", {
        "allocations": {other: {"resources": {"VCPU": 1}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None}, version="1.28")
    assert claim.status == 204, claim.body
    assert other not in listed(client, "resources=VCPU:2")  # capacity left is 1
    assert other in listed(client, "resources=VCPU:1")


def test_filters_combine(client: Client) -> None:
    agg = new_id()
    root = a_provider(client, inventories={"VCPU": {"total": 4}})
    twin = a_provider(client, inventories={"VCPU": {"total": 4}})
    for rp in (root, twin):
        with_aggregates(client, rp, [agg])
    with_traits(client, root, [AVX2])
    query = f"member_of={agg}&required={AVX2}&resources=VCPU:4"
    assert listed(client, query) == {root}
    assert listed(client, f"member_of={agg}&required=!{AVX2}&resources=VCPU:4") == {twin}
    assert listed(client, f"member_of={agg}&resources=VCPU:5") == set()
