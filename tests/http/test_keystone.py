"""``serve --auth keystone``: keystonemiddleware's own ``auth_token``, configured by a
``[keystone_authtoken]`` section as in placement.conf, validating tokens against a small
Keystone stand-in (``keystone_stub.py``); Placement's policy on the roles Keystone says."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest

from tests.http.keystone_stub import keystone
from tests.http.server import Client, running_server

TOKENS = {"tok-nova": ("nova", "svc-project", ["service"]),
          "tok-reader": ("alice", "alice-project", ["reader"])}


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    folder = tmp_path_factory.mktemp("keystone")
    with keystone(TOKENS) as url:
        config = folder / "placement.conf"
        config.write_text(
            "[keystone_authtoken]\n"
            f"www_authenticate_uri = {url}\nauth_url = {url}/v3\nauth_type = password\n"
            "username = placement\npassword = secret\nproject_name = service\n"
            "user_domain_name = Default\nproject_domain_name = Default\n")
        with running_server(f"sqlite:///{folder / 'ledger.db'}",
                            args=["--auth", "keystone", "--auth-config", str(config)]) as p:
            yield p


def test_a_service_token_writes_and_its_user_and_project_are_the_actor(port: int) -> None:
    nova = Client(port, "tok-nova")
    uuid = str(uuid4())
    made = nova.call("POST", "/resource_providers", {"name": uuid, "uuid": uuid}, "1.20")
    assert made.status == 200, made.body
    # the ledger's history is admin_api: the service token may not read it
    assert nova.call("GET", f"/ledger/history/provider/{uuid}").status == 403


def test_a_reader_is_refused_even_when_it_claims_admin_in_its_headers(port: int) -> None:
    reader = Client(port, "tok-reader")
    answer = reader.call("GET", "/resource_providers", None, "1.20",
                         headers={"X-Roles": "admin", "X-User-Id": "admin"})
    assert answer.status == 403
    assert answer.body["errors"][0]["detail"] == (
        "Policy does not allow placement:resource_providers:list to be performed.")


def test_an_unknown_token_is_refused_with_keystones_address(port: int) -> None:
    answer = Client(port, "not-a-token").call("GET", "/resource_providers")
    assert answer.status == 401
    assert answer.headers["www-authenticate"].startswith('Keystone uri="http://127.0.0.1:')
    assert Client(port).call("GET", "/resource_providers").status == 401
    assert Client(port).call("GET", "/").status == 200


def test_the_actor_is_the_tokens_user_and_project(tmp_path: Path) -> None:
    tokens = {**TOKENS, "tok-admin": ("root", "admin-project", ["admin", "reader"])}
    with keystone(tokens) as url:
        config = tmp_path / "paste.ini"
        config.write_text(  # a paste deployment's filter section works too
            "[filter:authtoken]\npaste.filter_factory = keystonemiddleware.auth_token:"
            f"filter_factory\nwww_authenticate_uri = {url}\nauth_url = {url}/v3\n"
            "auth_type = password\nusername = placement\npassword = secret\n"
            "project_name = service\nuser_domain_name = Default\n"
            "project_domain_name = Default\n")
        with running_server(f"sqlite:///{tmp_path / 'ledger.db'}",
                            args=["--auth", "keystone", "--auth-config", str(config)]) as p:
            uuid = str(uuid4())
            made = Client(p, "tok-nova").call("POST", "/resource_providers",
                                              {"name": uuid, "uuid": uuid}, "1.20")
            assert made.status == 200, made.body
            history = Client(p, "tok-admin").call("GET", f"/ledger/history/provider/{uuid}")
            assert [(e["actor"], e["project"]) for e in history.body["history"]] == [
                ("nova", "svc-project")]
