"""Tokens and roles: 401 without a known token, 403 for a reader's write; the token's name
is stored as the events' actor. And the server refuses to listen off loopback without
tokens."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest

from tests.http.server import Client, running_server


@pytest.fixture(scope="module")
def secured_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A server over SQLite with an admin token and a reader token."""
    folder = tmp_path_factory.mktemp("auth")
    tokens = folder / "tokens"
    tokens.write_text("# token name role\nsecret-admin nova admin\nsecret-read ops reader\n")
    with running_server(f"sqlite:///{folder / 'ledger.db'}", str(tokens)) as port:
        yield port


@pytest.mark.parametrize(("token", "method", "status"), [
    (None, "GET", 401),
    ("wrong", "GET", 401),
    ("secret-read", "GET", 200),
    ("secret-read", "POST", 403),
    ("secret-admin", "POST", 200),
])
def test_roles(secured_port: int, token: str | None, method: str, status: int) -> None:
    client = Client(secured_port, token)
    uuid = str(uuid4())
    body = {"name": uuid, "uuid": uuid} if method == "POST" else None
    answer = client.call(method, "/resource_providers", body, "1.20")
    assert answer.status == status, answer.body
    if status >= 400:
        assert answer.body["errors"][0]["status"] == status
        reader = Client(secured_port, "secret-read")
        assert reader.call("GET", f"/resource_providers/{uuid}").status == 404


def test_the_tokens_name_is_the_actor(secured_port: int) -> None:
    admin, reader = Client(secured_port, "secret-admin"), Client(secured_port, "secret-read")
    uuid = str(uuid4())
    assert admin.call("POST", "/resource_providers", {"name": uuid, "uuid": uuid}).status == 201
    history = reader.call("GET", f"/ledger/history/provider/{uuid}").body["history"]
    assert [e["actor"] for e in history] == ["nova"]


def test_no_tokens_off_loopback_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from allocation_ledger.cli import main; raise SystemExit(main())",
         "serve", "--url", f"sqlite:///{tmp_path / 'l.db'}", "--bind", "0.0.0.0:1"],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2  # bad usage, as every refused combination of options
    assert "needs --token-file" in done.stderr
    assert "Traceback" not in done.stderr


def test_authentication_comes_before_anything_else(secured_port: int) -> None:
    """No token: 401 even for a request that is otherwise bad (its version, its body)."""
    anonymous = Client(secured_port)
    assert anonymous.call("GET", "/", version="0.5").status == 401
    assert anonymous.call("PUT", f"/allocations/{uuid4()}", b"{").status == 401
