"""A small cloud built over HTTP for one test: fresh UUIDs every time."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import uuid4

from tests.http.server import Client

LATEST = "1.39"


@dataclass(frozen=True)
class World:
    """``host`` (VCPU 8, MEMORY_MB 4096) with child ``numa``; ``vm`` holding VCPU 2 and
    MEMORY_MB 512 on the host at generation 1; ``tree``, a root with child ``leaf`` and no
    allocations; ``absent``, a UUID nothing has."""

    host: str
    numa: str
    vm: str
    tree: str
    leaf: str
    absent: str

    def fields(self) -> dict[str, str]:
        """Names for ``str.format`` in request templates."""
        return {"host": self.host, "numa": self.numa, "vm": self.vm, "tree": self.tree,
                "leaf": self.leaf, "absent": self.absent, "new": str(uuid4())}


def provider(client: Client, name: str, parent: str | None = None) -> str:
    """Create a provider (1.20 answers its body); its UUID."""
    uuid = str(uuid4())
    answer = client.call("POST", "/resource_providers",
                         {"name": name, "uuid": uuid, "parent_provider_uuid": parent}, "1.20")
    assert answer.status == 200, answer
    return uuid


def inventory(client: Client, rp: str, **totals: int) -> int:
    """Set a provider's inventories (totals by class); the new generation."""
    generation = client.call("GET", f"/resource_providers/{rp}").body["generation"]
    answer = client.call("PUT", f"/resource_providers/{rp}/inventories", {
        "resource_provider_generation": generation,
        "inventories": {rc: {"total": n} for rc, n in totals.items()}})
    assert answer.status == 200, answer
    return int(answer.body["resource_provider_generation"])


def claim(client: Client, consumer: str, rp: str, generation: int | None = None,
          project: str = "p", user: str = "u", consumer_type: str = "INSTANCE",
          **resources: int) -> int:
    """PUT allocations at the latest version; the status."""
    return client.call("PUT", f"/allocations/{consumer}", {
        "allocations": {rp: {"resources": resources}}, "project_id": project,
        "user_id": user, "consumer_generation": generation,
        "consumer_type": consumer_type}, LATEST).status


def build(client: Client) -> World:
    """The world described on :class:`World`."""
    tag = uuid4().hex[:8]
    host = provider(client, f"host-{tag}")
    numa = provider(client, f"numa-{tag}", host)
    inventory(client, host, VCPU=8, MEMORY_MB=4096)
    vm = str(uuid4())
    assert claim(client, vm, host, VCPU=2, MEMORY_MB=512) == 204
    tree = provider(client, f"tree-{tag}")
    leaf = provider(client, f"leaf-{tag}", tree)
    return World(host, numa, vm, tree, leaf, str(uuid4()))
