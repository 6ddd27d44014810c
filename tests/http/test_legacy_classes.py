"""A ledger written before custom classes were recorded (an inventory of a CUSTOM_* class
nobody created, as the service API and the importer still write): over HTTP the class
exists, so the old ledger reads and writes as before."""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

from allocation_ledger import open_ledger
from tests.builders import new_id
from tests.http.server import Client, running_server
from tests.http.world import provider


def test_a_class_an_old_inventory_uses_exists(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    old, name = new_id(), f"CUSTOM_{uuid4().hex.upper()}"
    with open_ledger(url) as ledger:
        ledger.register_provider(old, "old-host", inventories={name: {"total": 4}})
    with running_server(url) as port:
        client = Client(port)
        assert client.call("GET", f"/resource_classes/{name}", version="1.2").status == 200
        listed = client.call("GET", "/resource_classes", version="1.2").body
        assert name in [c["name"] for c in listed["resource_classes"]]
        assert client.call("POST", "/resource_classes", {"name": name}, "1.2").status == 409
        assert client.call("PUT", f"/resource_classes/{name}", version="1.7").status == 204
        new = provider(client, f"new-{uuid4()}")
        generation = client.call("GET", f"/resource_providers/{new}").body["generation"]
        assert client.call("PUT", f"/resource_providers/{new}/inventories", {
            "resource_provider_generation": generation,
            "inventories": {name: {"total": 2}}}).status == 200
        assert client.call("DELETE", f"/resource_classes/{name}",
                           version="1.2").status == 409
        client.close()
