"""Placement's policy over Placement's noauth2 (``serve --auth noauth2``): each persona of
the secure-RBAC defaults allowed or refused per endpoint, the legacy defaults' admin, an
operator's policy file overriding a rule, and the token's user and project stored as the
events' actor."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest

from tests.http.server import Answer, Client, running_server

PROJECT, OTHER = "a0000000-0000-4000-8000-00000000000a", "b0000000-0000-4000-8000-00000000000b"
PERSONAS = {
    "admin": {"x-roles": "admin,member,reader", "x-project-id": PROJECT},
    "service": {"x-roles": "service", "x-project-id": "svc"},
    "member": {"x-roles": "member,reader", "x-project-id": PROJECT},
    "reader": {"x-roles": "reader", "x-project-id": PROJECT},
    "system-admin": {"x-roles": "admin,member,reader", "openstack-system-scope": "all"},
    "system-reader": {"x-roles": "reader", "openstack-system-scope": "all"},
}
RP = "/resource_providers/c0000000-0000-4000-8000-00000000000c"
# method, path, body, the personas the secure defaults allow
ENDPOINTS = [
    ("GET", "/resource_providers", None, {"admin", "service"}),
    ("POST", "/resource_providers", "provider", {"admin", "service"}),
    ("GET", RP + "/inventories", None, {"admin", "service"}),
    ("GET", "/resource_classes", None, {"admin", "service"}),
    ("GET", "/traits", None, {"admin", "service"}),
    ("GET", RP + "/aggregates", None, {"admin", "service"}),
    ("GET", "/allocations/d0000000-0000-4000-8000-00000000000d", None, {"admin", "service"}),
    ("GET", f"/usages?project_id={PROJECT}", None, {"admin", "service", "member", "reader"}),
    ("GET", f"/usages?project_id={OTHER}", None, {"admin", "service"}),
    ("GET", "/allocation_candidates?resources=VCPU:1", None, {"admin", "service"}),
    ("POST", "/reshaper", "reshape", {"service"}),
    ("GET", "/ledger/audit", None, {"admin"}),
]


def _body(kind: str | None) -> object:
    if kind == "provider":
        uuid = str(uuid4())
        return {"name": uuid, "uuid": uuid}
    if kind == "reshape":
        return {"inventories": {}, "allocations": {}}
    return None


def call(port: int, persona: str, method: str, path: str, body: object = None,
         user: str = "user") -> Answer:
    return Client(port, user).call(method, path, body, "latest", headers=PERSONAS[persona])


@pytest.fixture(scope="module")
def secure_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    folder = tmp_path_factory.mktemp("secure")
    with running_server(f"sqlite:///{folder / 'ledger.db'}",
                        args=["--auth", "noauth2", "--policy-defaults", "secure"]) as port:
        yield port


@pytest.mark.parametrize("persona", sorted(PERSONAS))
@pytest.mark.parametrize(("method", "path", "body", "allowed"), ENDPOINTS,
                         ids=[f"{m} {p.replace(PROJECT, 'own').replace(OTHER, 'other')}"
                              for m, p, _, _ in ENDPOINTS])
def test_each_persona_is_allowed_or_refused_as_placement_secure_defaults_say(
        secure_port: int, persona: str, method: str, path: str, body: str | None,
        allowed: set[str]) -> None:
    answer = call(secure_port, persona, method, path, _body(body))
    if persona in allowed:
        assert answer.status != 403, answer.body
    else:
        assert answer.status == 403, answer.body
        error = answer.body["errors"][0]
        assert error["detail"].startswith("Policy does not allow placement:") or \
            error["detail"] == "Policy does not allow admin_api to be performed."
        assert error["detail"].endswith(" to be performed.")


def test_a_refused_write_changes_nothing(secure_port: int) -> None:
    uuid = str(uuid4())
    refused = call(secure_port, "member", "POST", "/resource_providers",
                   {"name": uuid, "uuid": uuid})
    assert refused.status == 403
    assert refused.body["errors"][0]["detail"] == (
        "Policy does not allow placement:resource_providers:create to be performed.")
    assert call(secure_port, "admin", "GET", f"/resource_providers/{uuid}").status == 404


def test_without_a_token_only_the_root_answers(secure_port: int) -> None:
    assert Client(secure_port).call("GET", "/").status == 200
    assert Client(secure_port).call("GET", "/resource_providers").status == 401


def test_the_tokens_user_and_project_are_the_actor(secure_port: int) -> None:
    uuid = str(uuid4())
    made = call(secure_port, "service", "POST", "/resource_providers",
                {"name": uuid, "uuid": uuid}, user="nova")
    assert made.status == 200, made.body
    history = call(secure_port, "admin", "GET", f"/ledger/history/provider/{uuid}").body
    assert [(e["actor"], e["project"]) for e in history["history"]] == [("nova", "svc")]


def test_the_legacy_defaults_also_let_an_admin_reshape(tmp_path: Path) -> None:
    with running_server(f"sqlite:///{tmp_path / 'ledger.db'}",
                        args=["--auth", "noauth2", "--policy-defaults", "legacy"]) as port:
        # the deprecated role:admin still counts (secure: service only)...
        assert call(port, "admin", "POST", "/reshaper", _body("reshape")).status != 403
        # ...from a project-scoped token: scope is enforced in both
        assert call(port, "system-admin", "GET", "/resource_providers").status == 403
        assert call(port, "reader", "GET", "/resource_providers").status == 403


def test_an_operators_policy_file_overrides_a_rule(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:resource_providers:list": "role:reader"\n')
    with running_server(f"sqlite:///{tmp_path / 'ledger.db'}",
                        args=["--auth", "noauth2", "--policy-file", str(policy)]) as port:
        assert call(port, "reader", "GET", "/resource_providers").status == 200
        refused = call(port, "reader", "POST", "/resource_providers", _body("provider"))
        assert refused.status == 403
        assert call(port, "service", "GET", "/resource_providers").status == 403


def test_the_token_file_ignores_keystones_headers(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("secret-read ops reader\n")
    with running_server(f"sqlite:///{tmp_path / 'ledger.db'}", str(tokens)) as port:
        reader = Client(port, "secret-read")
        faked = {"x-roles": "admin", "x-user-id": "admin", "x-project-id": PROJECT}
        answer = reader.call("POST", "/resource_providers", _body("provider"), "1.20",
                             headers=faked)
        assert answer.status == 403
        assert answer.body["errors"][0]["detail"] == "ops (reader) may not POST here"


@pytest.mark.parametrize("args", [
    ["--auth", "noauth2", "--bind", "0.0.0.0:1"],
    ["--auth", "keystone"],
    ["--auth", "noauth2", "--token-file", "tokens"],
    ["--auth", "noauth2", "--policy-file", "missing.yaml"],
], ids=["noauth2-off-loopback", "keystone-without-config", "noauth2-with-token-file",
        "missing-policy-file"])
def test_settings_that_cannot_work_are_refused(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "tokens").write_text("t n admin\n")
    done = subprocess.run(
        [sys.executable, "-c", "from allocation_ledger.cli import main; raise SystemExit(main())",
         "serve", "--url", f"sqlite:///{tmp_path / 'l.db'}", *args],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
