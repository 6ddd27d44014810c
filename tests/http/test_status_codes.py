"""Placement's statuses and error codes, as a table, against a real server on SQLite and
PostgreSQL. Each row: request (method, path, version, body; ``{host}`` etc. filled from a
fresh :class:`~tests.http.world.World`), then the status and error code expected."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.http.server import Client
from tests.http.world import build

UNDEFINED = "placement.undefined_code"
CONCURRENT = "placement.concurrent_update"
P = "/resource_providers"


def alloc(resources: dict[str, int], rp: str = "{host}", **extra: Any) -> dict[str, Any]:
    """A 1.12+ PUT allocations body."""
    return {"allocations": {rp: {"resources": resources}}, "project_id": "p",
            "user_id": "u", **extra}


LIST_FORMAT = {"allocations": [{"resource_provider": {"uuid": "{host}"},
                                "resources": {"VCPU": 1}}], "project_id": "p", "user_id": "u"}

CASES: list[tuple[str, str, str, str | None, Any, int, str | None]] = [
    # name, method, path, version, body, status, code
    ("version document", "GET", "/", None, None, 200, None),
    ("version too low", "GET", "/", "0.5", None, 406, UNDEFINED),
    ("version too high", "GET", "/", "1.40", None, 406, UNDEFINED),
    ("version malformed", "GET", "/", "pony.horse", None, 400, UNDEFINED),
    ("unknown route", "GET", "/nothing", None, None, 404, UNDEFINED),
    ("method not allowed", "PATCH", P, None, None, 405, UNDEFINED),
    ("provider not found", "GET", P + "/{absent}", None, None, 404,
     "placement.resource_provider.not_found"),
    ("malformed provider uuid", "GET", P + "/not-a-uuid", None, None, 404,
     "placement.resource_provider.not_found"),
    ("duplicate provider name", "POST", P, "1.20", "DUPLICATE", 409,
     "placement.duplicate_name"),
    ("duplicate provider uuid", "POST", P, "1.20", {"name": "x-{new}", "uuid": "{host}"}, 409,
     "placement.duplicate_name"),
    ("parent missing", "POST", P, "1.14",
     {"name": "x-{new}", "parent_provider_uuid": "{absent}"}, 400, UNDEFINED),
    ("parent before 1.14", "POST", P, "1.13",
     {"name": "x-{new}", "parent_provider_uuid": "{host}"}, 400, UNDEFINED),
    ("create before 1.20", "POST", P, "1.19", {"name": "x-{new}"}, 201, None),
    ("create from 1.20", "POST", P, "1.20", {"name": "x-{new}"}, 200, None),
    ("rename", "PUT", P + "/{leaf}", None, {"name": "renamed-{new}"}, 200, None),
    ("rename to a taken name", "PUT", P + "/{leaf}", None, "DUPLICATE", 409,
     "placement.duplicate_name"),
    ("re-parent", "PUT", P + "/{leaf}", "1.14",
     {"name": "x-{new}", "parent_provider_uuid": "{host}"}, 400, UNDEFINED),
    ("rename an absent provider", "PUT", P + "/{absent}", None, {"name": "x-{new}"}, 404,
     "placement.resource_provider.not_found"),
    ("delete provider with allocations", "DELETE", P + "/{host}", None, None, 409,
     "placement.resource_provider.inuse"),
    ("delete provider with children", "DELETE", P + "/{tree}", None, None, 409,
     "placement.resource_provider.cannot_delete_parent"),
    ("delete leaf", "DELETE", P + "/{leaf}", None, None, 204, None),
    ("delete absent provider", "DELETE", P + "/{absent}", None, None, 404,
     "placement.resource_provider.not_found"),
    ("inventories stale generation", "PUT", P + "/{host}/inventories", None,
     {"resource_provider_generation": 1, "inventories": {"VCPU": {"total": 8}}}, 409,
     CONCURRENT),
    ("inventories drop a class in use", "PUT", P + "/{host}/inventories", None,
     {"resource_provider_generation": "GEN", "inventories": {"VCPU": {"total": 8}}}, 409,
     "placement.inventory.inuse"),
    ("inventory below usage allowed", "PUT", P + "/{host}/inventories", None,
     {"resource_provider_generation": "GEN",
      "inventories": {"VCPU": {"total": 1}, "MEMORY_MB": {"total": 4096}}}, 200, None),
    ("inventory invalid total", "PUT", P + "/{host}/inventories/VCPU", None,
     {"resource_provider_generation": "GEN", "total": 0}, 400, UNDEFINED),
    ("inventory reserved = total before 1.26", "PUT", P + "/{host}/inventories/VCPU", "1.25",
     {"resource_provider_generation": "GEN", "total": 8, "reserved": 8}, 400, UNDEFINED),
    ("inventory reserved = total from 1.26", "PUT", P + "/{host}/inventories/VCPU", "1.26",
     {"resource_provider_generation": "GEN", "total": 8, "reserved": 8}, 200, None),
    ("inventory reserved > total", "PUT", P + "/{host}/inventories/VCPU", "1.26",
     {"resource_provider_generation": "GEN", "total": 8, "reserved": 9}, 400, UNDEFINED),
    ("update a class the provider lacks", "PUT", P + "/{host}/inventories/DISK_GB", None,
     {"resource_provider_generation": "GEN", "total": 8}, 400, UNDEFINED),
    ("add an existing class", "POST", P + "/{host}/inventories", None,
     {"resource_provider_generation": "GEN", "resource_class": "VCPU", "total": 8}, 409,
     CONCURRENT),
    ("add a class", "POST", P + "/{host}/inventories", None,
     {"resource_provider_generation": "GEN", "resource_class": "DISK_GB", "total": 8}, 201,
     None),
    ("delete a class in use (Placement's code)", "DELETE", P + "/{host}/inventories/VCPU",
     None, None, 409, CONCURRENT),
    ("delete an absent class", "DELETE", P + "/{host}/inventories/DISK_GB", None, None, 404,
     UNDEFINED),
    ("delete all inventories before 1.5", "DELETE", P + "/{tree}/inventories", "1.4", None,
     405, UNDEFINED),
    ("delete all inventories in use", "DELETE", P + "/{host}/inventories", "1.5", None, 409,
     "placement.inventory.inuse"),
    ("show an absent class", "GET", P + "/{host}/inventories/DISK_GB", None, None, 404,
     UNDEFINED),
    ("claim over capacity", "PUT", "/allocations/{new}", "1.12", alloc({"VCPU": 7}), 409,
     UNDEFINED),
    ("claim the rest", "PUT", "/allocations/{new}", "1.12", alloc({"VCPU": 6}), 204, None),
    ("claim a class the provider lacks", "PUT", "/allocations/{new}", "1.12",
     alloc({"DISK_GB": 1}), 409, UNDEFINED),
    ("claim on an absent provider", "PUT", "/allocations/{new}", "1.12",
     alloc({"VCPU": 1}, "{absent}"), 400, UNDEFINED),
    ("claim an unknown class", "PUT", "/allocations/{new}", "1.12", alloc({"NOPE": 1}), 400,
     UNDEFINED),
    ("claim zero", "PUT", "/allocations/{new}", "1.12", alloc({"VCPU": 0}), 400, UNDEFINED),
    ("list format before 1.12", "PUT", "/allocations/{new}", "1.11", LIST_FORMAT, 204, None),
    ("list format from 1.12", "PUT", "/allocations/{new}", "1.12", LIST_FORMAT, 400,
     UNDEFINED),
    ("dict format before 1.12", "PUT", "/allocations/{new}", "1.11", alloc({"VCPU": 1}), 400,
     UNDEFINED),
    ("no project before 1.8", "PUT", "/allocations/{new}", "1.7",
     {"allocations": LIST_FORMAT["allocations"]}, 204, None),
    ("project required from 1.8", "PUT", "/allocations/{new}", "1.8",
     {"allocations": LIST_FORMAT["allocations"]}, 400, UNDEFINED),
    ("generation required from 1.28", "PUT", "/allocations/{new}", "1.28",
     alloc({"VCPU": 1}), 400, UNDEFINED),
    ("new consumer with a generation", "PUT", "/allocations/{new}", "1.28",
     alloc({"VCPU": 1}, consumer_generation=3), 409, CONCURRENT),
    ("existing consumer as new", "PUT", "/allocations/{vm}", "1.28",
     alloc({"VCPU": 1}, consumer_generation=None), 409, CONCURRENT),
    ("existing consumer, stale generation", "PUT", "/allocations/{vm}", "1.28",
     alloc({"VCPU": 1}, consumer_generation=2), 409, CONCURRENT),
    ("existing consumer, its generation", "PUT", "/allocations/{vm}", "1.28",
     alloc({"VCPU": 1}, consumer_generation=1), 204, None),
    ("no generation check before 1.28", "PUT", "/allocations/{vm}", "1.27",
     alloc({"VCPU": 1}), 204, None),
    ("empty allocations before 1.28", "PUT", "/allocations/{vm}", "1.27",
     {"allocations": {}, "project_id": "p", "user_id": "u"}, 400, UNDEFINED),
    ("empty allocations release from 1.28", "PUT", "/allocations/{vm}", "1.28",
     {"allocations": {}, "project_id": "p", "user_id": "u", "consumer_generation": 1}, 204,
     None),
    ("consumer type required from 1.38", "PUT", "/allocations/{new}", "1.38",
     alloc({"VCPU": 1}, consumer_generation=None), 400, UNDEFINED),
    ("consumer type from 1.38", "PUT", "/allocations/{new}", "1.38",
     alloc({"VCPU": 1}, consumer_generation=None, consumer_type="BAREMETAL"), 204, None),
    ("migration consumers only through moves", "PUT", "/allocations/{new}", "1.38",
     alloc({"VCPU": 1}, consumer_generation=None, consumer_type="MIGRATION"), 400, UNDEFINED),
    ("malformed consumer", "PUT", "/allocations/nope", "1.12", alloc({"VCPU": 1}), 400,
     UNDEFINED),
    ("malformed JSON", "PUT", "/allocations/{new}", "1.12", b"{", 400, UNDEFINED),
    ("delete absent allocations", "DELETE", "/allocations/{absent}", None, None, 404,
     UNDEFINED),
    ("delete allocations", "DELETE", "/allocations/{vm}", None, None, 204, None),
    ("POST /allocations before 1.13", "POST", "/allocations", "1.12", {}, 404, UNDEFINED),
    ("POST /allocations over capacity", "POST", "/allocations", "1.13",
     {"{new}": alloc({"VCPU": 7})}, 409, UNDEFINED),
    ("usages before 1.9", "GET", "/usages?project_id=p", "1.8", None, 404, UNDEFINED),
    ("usages need a project", "GET", "/usages", "1.9", None, 400, UNDEFINED),
    ("usages by consumer type before 1.38", "GET", "/usages?project_id=p&consumer_type=X",
     "1.37", None, 400, UNDEFINED),
    ("resource classes before 1.2", "GET", "/resource_classes", "1.1", None, 404, UNDEFINED),
    ("custom class never created", "GET", "/resource_classes/CUSTOM_NEVER_MADE", "1.2", None,
     404, UNDEFINED),
    ("bad class name", "GET", "/resource_classes/GOLD", "1.2", None, 404, UNDEFINED),
    ("create non-custom class", "PUT", "/resource_classes/GOLD", "1.7", None, 400, UNDEFINED),
    ("delete standard class", "DELETE", "/resource_classes/VCPU", "1.2", None, 400, UNDEFINED),
    ("provider filter by aggregate", "GET", P + "?member_of={host}", "1.3", None, 200, None),
    ("provider filter by bad aggregate", "GET", P + "?member_of=x", "1.3", None, 400,
     UNDEFINED),
    ("provider filter unknown", "GET", P + "?colour=red", None, None, 400, UNDEFINED),
]


def _fill(value: Any, fields: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**fields)
    if isinstance(value, dict):
        return {_fill(k, fields): _fill(v, fields) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, fields) for v in value]
    return value


@pytest.mark.parametrize(("method", "path", "version", "body", "status", "code"),
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_status_and_code(client: Client, method: str, path: str, version: str | None,
                         body: Any, status: int, code: str | None) -> None:
    world = build(client)
    fields = world.fields()
    generation = client.call("GET", f"/resource_providers/{world.host}").body["generation"]
    if body == "DUPLICATE":
        body = {"name": client.call("GET", f"{P}/{world.host}").body["name"]}
    elif isinstance(body, dict):
        body = json.loads(json.dumps(_fill(body, fields)).replace('"GEN"', str(generation)))
    answer = client.call(method, _fill(path, fields), body, version)
    assert (answer.status, answer.code) == (status, code), answer.body
    if code is not None:
        error = answer.body["errors"][0]
        assert error["status"] == status
        assert error["request_id"] == answer.headers["x-openstack-request-id"]
        assert error["title"] and error["detail"]
    expected_version = version if version not in (None, "0.5", "1.40", "pony.horse") else "1.0"
    assert answer.headers["openstack-api-version"] == f"placement {expected_version}"
    assert answer.headers["vary"] == "openstack-api-version"
