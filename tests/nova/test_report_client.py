"""Nova's own ``SchedulerReportClient`` moving an instance through the ledger's server:
the resize Nova's code runs, unmodified, leaves a migration with its context, and history
names the move.

Nova cannot share a virtualenv with the ledger (conflicting pins): it runs in its own,
``$LEDGER_NOVA_PYTHON`` or ``.venv-nova`` (``scripts/nova_venv.sh`` makes it). Without it
these tests are skipped with that reason.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from tests.http.server import Client, running_server
from tests.http.world import build, inventory, provider

ROOT = Path(__file__).resolve().parents[2]
FLOW = Path(__file__).with_name("nova_flow.py")
FLAVOR = {"VCPU": 2, "MEMORY_MB": 512}


def nova_python() -> str:
    found = os.environ.get("LEDGER_NOVA_PYTHON") or str(ROOT / ".venv-nova" / "bin" / "python")
    if not Path(found).exists():
        pytest.skip("nova is not installed: run scripts/nova_venv.sh (or set "
                    "LEDGER_NOVA_PYTHON)")
    return found


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    path = tmp_path_factory.mktemp("nova") / "ledger.db"
    with running_server(f"sqlite:///{path}") as found:
        yield found


def _nova(port: int, instance: str, migration: str, destination: str,
          ending: str) -> dict[str, Any]:
    done = subprocess.run(
        [nova_python(), str(FLOW), f"http://127.0.0.1:{port}", instance, migration,
         destination, ending], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("ending", ["confirm", "revert", "revert-before-claim"])
def test_nova_moves_an_instance(port: int, ending: str) -> None:
    client = Client(port)
    world = build(client)
    dest = provider(client, f"dest-{uuid4()}")
    inventory(client, dest, VCPU=8, MEMORY_MB=4096)
    migration = str(uuid4())
    done = _nova(port, world.vm, migration, dest, ending)
    assert done["swap"] is True and done.get("claim", True) is True, done
    shown = client.call("GET", f"/ledger/migrations/{migration}").body
    assert (shown["instance_uuid"], shown["kind"], shown["source_root"]) == (
        world.vm, "migration", world.host)
    assert shown["old_allocations"] == {world.host: FLAVOR}
    events = [e["event"] for e in client.call(
        "GET", f"/ledger/history/migration/{migration}").body["history"]]
    assert events[:2] == ["Migration.Started", "Consumer.AllocationsHandedOver"]
    if ending == "confirm":
        assert done["confirm"] is True, done
        assert shown["status"] == "confirmed"
        assert shown["destination_root"] == dest
        assert events[-1] == "Migration.Confirmed"
        held_by_vm = {dest: FLAVOR}
    else:
        assert done["revert"] is True, done
        assert shown["status"] == "reverted"
        assert "Migration.Reverted" in events[-2:]
        held_by_vm = {world.host: FLAVOR}
    assert {rp: a["resources"] for rp, a in done["instance"]["allocations"].items()} == \
        held_by_vm
    assert client.call("GET", f"/allocations/{migration}").body == {"allocations": {}}
    client.close()
