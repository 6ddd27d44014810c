"""Answers that Placement's own API tests read, made Placement's: error texts, schema
refusals, ``cache-control`` on writes, errors for a client that does not take JSON, and
CORS (a server of its own, started with Placement's ``[cors]`` options)."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest

from tests.http.server import Client, running_server
from tests.http.world import LATEST, build, claim, inventory, provider


def _detail(answer: object) -> str:
    return str(answer.body["errors"][0]["detail"])  # type: ignore[attr-defined]


def test_a_malformed_uuid_filter_is_an_invalid_query_string(client: Client) -> None:
    answer = client.call("GET", "/resource_providers?uuid=spameggs")
    assert answer.status == 400, answer
    assert _detail(answer).startswith("Invalid query string parameters: 'spameggs' is not a "
                                      "'uuid'")


def test_a_malformed_provider_uuid_in_a_body_fails_the_format(client: Client) -> None:
    answer = client.call("POST", "/resource_providers",
                         {"name": f"bad-{uuid4()}", "uuid": "this is not a uuid"})
    assert answer.status == 400, answer
    assert "Failed validating 'format'" in _detail(answer)


def test_a_provider_that_is_its_own_parent_is_refused_in_placements_words(
        client: Client) -> None:
    uuid = str(uuid4())
    answer = client.call("POST", "/resource_providers",
                         {"name": "child", "uuid": uuid, "parent_provider_uuid": uuid}, "1.14")
    assert answer.status == 400, answer
    assert f'Unable to create resource provider "child", {uuid}:' in _detail(answer)
    assert "parent provider UUID cannot be same as UUID" in _detail(answer)
    assert client.call("GET", f"/resource_providers/{uuid}").status == 404


def test_deleting_an_unknown_provider_says_for_delete(client: Client) -> None:
    uuid = str(uuid4())
    answer = client.call("DELETE", f"/resource_providers/{uuid}")
    assert answer.status == 404, answer
    assert _detail(answer) == f"No resource provider with uuid {uuid} found for delete"


def test_deleting_every_inventory_in_use_names_every_class_in_use(client: Client) -> None:
    host = provider(client, f"host-{uuid4()}")
    inventory(client, host, VCPU=8, MEMORY_MB=4096, DISK_GB=100)
    assert claim(client, str(uuid4()), host, VCPU=1, DISK_GB=10) == 204
    answer = client.call("DELETE", f"/resource_providers/{host}/inventories", version="1.5")
    assert answer.status == 409, answer
    assert _detail(answer) == (f"Inventory for 'VCPU, DISK_GB' on resource provider "
                               f"'{host}' in use.")
    assert answer.code == "placement.inventory.inuse"


@pytest.mark.parametrize("key", ["nice_house_friend", "vcpu"])
def test_allocation_keys_are_checked_by_placements_patterns(client: Client, key: str) -> None:
    """A provider key that is no UUID, a class that cannot be one: the schema's refusal."""
    world = build(client)
    allocations = ({key: {"resources": {"VCPU": 1}}} if key != "vcpu"
                   else {world.host: {"resources": {"vcpu": 1}}})
    answer = client.call("PUT", f"/allocations/{uuid4()}", {
        "allocations": allocations, "project_id": "p", "user_id": "u"}, "1.12")
    assert answer.status == 400, answer
    assert _detail(answer).startswith("JSON does not validate")
    assert "does not match any of the regexes" in _detail(answer)


@pytest.mark.parametrize(("version", "mappings", "words"), [
    ("1.33", {"": ["x"]}, "Additional properties are not allowed"),
    (LATEST, {"alpha": "beta"}, "JSON does not validate: 'beta' is not of type 'array'"),
    (LATEST, {}, "JSON does not validate: {} does not have enough properties"),
], ids=["before-1.34", "bad-form", "empty"])
def test_mappings_are_refused_before_1_34_or_malformed(
        client: Client, version: str, mappings: dict[str, object], words: str) -> None:
    world = build(client)
    consumer = str(uuid4())
    body = {"allocations": {world.host: {"resources": {"VCPU": 1}}}, "mappings": mappings,
            "project_id": "p", "user_id": "u", "consumer_generation": None}
    if version == LATEST:
        body["consumer_type"] = "INSTANCE"
    answer = client.call("PUT", f"/allocations/{consumer}", body, version)
    assert answer.status == 400, answer
    assert words in _detail(answer)
    assert client.call("GET", f"/allocations/{consumer}").body == {"allocations": {}}


def test_a_write_that_answers_with_the_resource_says_no_cache_from_1_15(
        client: Client) -> None:
    host = provider(client, f"host-{uuid4()}")
    answer = client.call("PUT", f"/resource_providers/{host}",
                         {"name": f"renamed-{uuid4()}"}, "1.15")
    assert answer.status == 200, answer
    assert answer.headers["cache-control"] == "no-cache"
    assert "last-modified" in answer.headers
    before = client.call("PUT", f"/resource_providers/{host}",
                         {"name": f"renamed-{uuid4()}"}, "1.14")
    assert "cache-control" not in before.headers


def _raw(port: int, path: str, headers: dict[str, str], method: str = "GET"
         ) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                response.read())
    finally:
        conn.close()


@pytest.mark.parametrize(("accept", "media_type"), [
    ("text/html", "text/html"), ("text/plain", "text/plain"),
    ("*/*", "application/json"), ("application/json", "application/json"),
], ids=["html", "plain", "any", "json"])
def test_an_error_is_answered_in_a_media_type_the_client_takes(
        server_port: int, accept: str, media_type: str) -> None:
    status, headers, body = _raw(server_port, f"/{uuid4()}", {"accept": accept})
    assert status == 404
    assert headers["content-type"].startswith(media_type)
    assert b"The resource could not be found" in body


def test_a_bad_version_for_an_html_client_is_an_html_406(server_port: int) -> None:
    status, headers, body = _raw(server_port, "/", {
        "accept": "text/html", "openstack-api-version": "placement 0.5"})
    assert status == 406
    assert headers["content-type"].startswith("text/html")
    assert b"Unacceptable version header: 0.5" in body


@pytest.fixture(scope="module")
def cors_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A server with Placement's gabbit CORS settings."""
    path: Path = tmp_path_factory.mktemp("cors") / "ledger.db"
    with running_server(f"sqlite:///{path}", args=(
            "--cors-allowed-origin", "http://valid.example.com",
            "--cors-allow-header", "openstack-api-version")) as port:
        yield port


def test_a_preflight_from_an_allowed_origin_is_allowed(cors_port: int) -> None:
    status, headers, _ = _raw(cors_port, "/", {
        "origin": "http://valid.example.com", "access-control-request-method": "GET",
        "access-control-request-headers": "openstack-api-version"}, "OPTIONS")
    assert status == 200
    assert headers["access-control-allow-origin"] == "http://valid.example.com"
    assert headers["access-control-allow-headers"] == "openstack-api-version"
    assert headers["access-control-allow-methods"] == "GET"


@pytest.mark.parametrize("extra", [{"origin": "http://invalid.example.com"},
                                   {"origin": "http://valid.example.com",
                                    "access-control-request-headers": "x-not-allowed"}],
                         ids=["origin", "header"])
def test_a_preflight_not_allowed_is_a_200_without_allowing(
        cors_port: int, extra: dict[str, str]) -> None:
    status, headers, _ = _raw(cors_port, "/", {"access-control-request-method": "GET",
                                               **extra}, "OPTIONS")
    assert status == 200
    assert "access-control-allow-origin" not in headers


@pytest.mark.parametrize(("origin", "allowed"), [("http://valid.example.com", True),
                                                 ("http://invalid.example.com", False)],
                         ids=["valid", "invalid"])
def test_a_request_from_an_allowed_origin_names_it(cors_port: int, origin: str,
                                                   allowed: bool) -> None:
    status, headers, _ = _raw(cors_port, "/", {"origin": origin})
    assert status == 200
    assert (headers.get("access-control-allow-origin") == origin) is allowed
    assert ("origin" in headers.get("vary", "").lower()) is allowed


def test_without_cors_options_a_preflight_is_not_served(server_port: int) -> None:
    status, headers, _ = _raw(server_port, "/", {
        "origin": "http://valid.example.com", "access-control-request-method": "GET"},
        "OPTIONS")
    assert status == 405
    assert "access-control-allow-origin" not in headers


def test_candidate_summaries_list_standard_traits_before_custom_ones(
        client: Client) -> None:
    """As Placement's ids order them (its standard traits exist before any custom one)."""
    host = provider(client, f"host-{uuid4()}")
    inventory(client, host, VCPU=8)
    custom = f"CUSTOM_A{uuid4().hex.upper()}"
    assert client.call("PUT", f"/traits/{custom}", version="1.6").status == 201
    generation = client.call("GET", f"/resource_providers/{host}").body["generation"]
    answer = client.call("PUT", f"/resource_providers/{host}/traits", {
        "resource_provider_generation": generation, "traits": [custom, "HW_NUMA_ROOT"]},
        "1.6")
    assert answer.status == 200, answer
    found = client.call("GET", f"/allocation_candidates?resources=VCPU:1&required={custom}",
                        version="1.17")
    assert found.body["provider_summaries"][host]["traits"] == ["HW_NUMA_ROOT", custom]
