"""Ask Placement 16 for allocation candidates on a cloud given as JSON.

Run with a Python that has ``openstack-placement`` installed (``.venv-placement``), as

    candidates_placement.py < CLOUD_AND_QUERIES.json

The input is ``{"providers": [...], "traits": [custom traits to create], "queries":
[[version, query string], ...]}``, each
provider ``{"uuid", "name", "parent", "inventories": {class: fields}, "usages": {class: n},
"traits": [...], "aggregates": [...]}`` in an order where parents come first. A fresh SQLite
database is made with Placement's migrations and filled through its WSGI application
(custom traits, providers, inventories, traits, aggregates, one consumer per provider for
its usage); then each query is sent as ``GET /allocation_candidates``. Prints, as JSON, one
``{"status", "body"}`` per query, in order.
"""

from __future__ import annotations

import json
import sys
import tempfile
import uuid
from pathlib import Path

from fill_placement import Api, make_app  # type: ignore[import-not-found]
from webob import Request


def build(api: Api, providers: list[dict], traits: list[str]) -> None:  # type: ignore[type-arg]
    custom = {t for p in providers for t in p["traits"] if t.startswith("CUSTOM_")}
    custom |= set(traits)
    for trait in sorted(custom):
        api("PUT", f"/traits/{trait}")
    for rc in sorted({rc for p in providers for rc in p["inventories"]
                      if rc.startswith("CUSTOM_")}):
        api("PUT", f"/resource_classes/{rc}", version="1.7")
    for p in providers:
        body = {"uuid": p["uuid"], "name": p["name"]}
        if p["parent"]:
            body["parent_provider_uuid"] = p["parent"]
        api("POST", "/resource_providers", body)
    for p in providers:
        url = f"/resource_providers/{p['uuid']}"
        if p["inventories"]:
            gen = api("GET", url)["generation"]
            api("PUT", url + "/inventories",
                {"resource_provider_generation": gen, "inventories": p["inventories"]})
        if p["traits"]:
            gen = api("GET", url)["generation"]
            api("PUT", url + "/traits",
                {"resource_provider_generation": gen, "traits": p["traits"]})
        if p["aggregates"]:
            gen = api("GET", url)["generation"]
            api("PUT", url + "/aggregates",
                {"resource_provider_generation": gen, "aggregates": p["aggregates"]},
                version="1.19")
        if p["usages"]:
            api("PUT", f"/allocations/{uuid.uuid4()}",
                {"allocations": {p["uuid"]: {"resources": p["usages"]}},
                 "project_id": "p", "user_id": "u", "consumer_generation": None},
                version="1.28")


def ask(app, version: str, query: str) -> dict:  # type: ignore[no-untyped-def,type-arg]
    req = Request.blank(f"/allocation_candidates?{query}", method="GET", headers={
        "X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {version}"})
    resp = req.get_response(app)
    return {"status": resp.status_int, "body": resp.json if resp.body else None}


def main() -> None:
    given = json.load(sys.stdin)
    with tempfile.TemporaryDirectory() as tmp:
        app = make_app(f"sqlite:///{Path(tmp) / 'placement.db'}")
        build(Api(app), given["providers"], given.get("traits", []))
        print(json.dumps([ask(app, v, q) for v, q in given["queries"]]))


if __name__ == "__main__":
    main()
