"""``PUT /resource_providers/{uuid}`` with a new ``parent_provider_uuid`` against a real
server (SQLite, PostgreSQL): a root takes a parent from 1.14, a child moves or becomes a root
from 1.37 (400 before), loops and unknown parents are 400 with Placement's words; the
listing (read side) shows the new tree."""

from __future__ import annotations

import uuid

from tests.http.server import Client

P = "/resource_providers"


def a_provider(client: Client, parent: str | None = None) -> str:
    rp = str(uuid.uuid4())
    body = {"name": f"rp-{rp}", "uuid": rp, "parent_provider_uuid": parent}
    assert client.call("POST", P, body, version="1.20").status == 200
    return rp


def put_parent(client: Client, rp: str, parent: str | None, version: str) -> object:
    return client.call("PUT", f"{P}/{rp}", {"name": f"rp-{rp}",
                                            "parent_provider_uuid": parent}, version=version)


def detail(answer: object) -> str:
    return str(answer.body["errors"][0]["detail"])  # type: ignore[attr-defined]


def test_reparenting_as_placement(client: Client) -> None:
    root, other = a_provider(client), a_provider(client)
    child = a_provider(client, parent=root)
    grandchild = a_provider(client, parent=child)
    loose = a_provider(client)

    taken = put_parent(client, loose, root, "1.14")  # a root may take a parent
    assert taken.status == 200  # type: ignore[attr-defined]
    assert taken.body["root_provider_uuid"] == root  # type: ignore[attr-defined]

    early = put_parent(client, child, other, "1.36")
    assert early.status == 400  # type: ignore[attr-defined]
    assert "re-parenting a provider is not currently allowed" in detail(early)
    unparent = put_parent(client, child, None, "1.36")
    assert "un-parenting a provider is not currently allowed" in detail(unparent)

    moved = put_parent(client, child, other, "1.37")
    assert moved.status == 200, moved.body  # type: ignore[attr-defined]
    assert (moved.body["parent_provider_uuid"], moved.body["root_provider_uuid"]) == (  # type: ignore[attr-defined]
        other, other)
    tree = client.call("GET", f"{P}?in_tree={other}", version="1.37").body
    assert {r["uuid"]: r["root_provider_uuid"] for r in tree["resource_providers"]} == {
        other: other, child: other, grandchild: other}

    loop = put_parent(client, child, grandchild, "1.37")
    assert loop.status == 400  # type: ignore[attr-defined]
    assert "creating loop in the provider tree is not allowed" in detail(loop)
    missing = put_parent(client, child, str(uuid.uuid4()), "1.37")
    assert missing.status == 400  # type: ignore[attr-defined]
    assert "parent provider UUID does not exist" in detail(missing)

    rooted = put_parent(client, child, None, "1.37")
    assert rooted.body["root_provider_uuid"] == child  # type: ignore[attr-defined]
    shown = client.call("GET", f"{P}/{grandchild}", version="1.37").body
    assert (shown["parent_provider_uuid"], shown["root_provider_uuid"]) == (child, child)
    assert client.call("DELETE", f"{P}/{other}", version="1.37").status == 204  # no children
