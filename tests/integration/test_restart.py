"""A pending resize survives a restart (``domain/device-assignment-persistence.txt``).

Nova lost a same-host resize's source devices when nova-compute restarted, because only one
domain XML held them; the ledger keeps both sets in the store. One process starts a resize
(same-host: both sets on one host; cross-host: old on the source, new on the target) and
exits. A second, separate process opens the same SQLite file or PostgreSQL schema, must find
every assignment exactly as the first left it, and reverts or confirms from there. This test
process then reads the result a third time and checks the docs/guarantees.md §5 invariants.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from allocation_ledger import open_ledger
from tests.integration.restart_worker import state
from tests.invariants import assert_invariants
from tests.stores import store_url

WORKER = Path(__file__).with_name("restart_worker.py")

#: Who holds each device (by role), per provider role: while the resize is pending, and after
#: it is reverted or confirmed. ``None`` is a free device.
HOLDERS: dict[str, dict[str, dict[str, dict[str, str | None]]]] = {
    "same-host": {
        "pending": {"host": {"ns-0": "neighbour", "ns-1": "migration", "ns-2": "migration",
                             "ns-3": "instance", "ns-4": "instance"}},
        "revert": {"host": {"ns-0": "neighbour", "ns-1": "instance", "ns-2": "instance",
                            "ns-3": None, "ns-4": None}},
        "confirm": {"host": {"ns-0": "neighbour", "ns-1": None, "ns-2": None,
                             "ns-3": "instance", "ns-4": "instance"}},
    },
    "cross-host": {
        "pending": {"source": {"0000:81:00.1": "migration", "0000:81:00.2": "migration"},
                    "target": {"0000:3b:00.0": "neighbour", "0000:3b:00.1": "instance",
                               "0000:3b:00.2": "instance"}},
        "revert": {"source": {"0000:81:00.1": "instance", "0000:81:00.2": "instance"},
                   "target": {"0000:3b:00.0": "neighbour", "0000:3b:00.1": None,
                              "0000:3b:00.2": None}},
        "confirm": {"source": {"0000:81:00.1": None, "0000:81:00.2": None},
                    "target": {"0000:3b:00.0": "neighbour", "0000:3b:00.1": "instance",
                               "0000:3b:00.2": "instance"}},
    },
}
STATUS = {"revert": "reverted", "confirm": "confirmed"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store that separate processes can open: a SQLite file or a PostgreSQL schema
    (small pools: each process needs one connection)."""
    if request.param == "postgres":
        yield request.getfixturevalue("pg_url") + "&pool_size=1&max_overflow=1"
    else:
        with store_url("sqlite", tmp_path) as url:
            yield url


def run_worker(url: str, *args: str) -> dict[str, Any]:
    """Run ``restart_worker.py`` in a new interpreter; its JSON answer."""
    done = subprocess.run([sys.executable, str(WORKER), url, *args], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def holders_by_role(found: dict[str, Any], ids: dict[str, dict[str, str]]
                    ) -> dict[str, dict[str, str | None]]:
    """Each provider role's device table, with holders named by role."""
    roles = {uuid: role for role, uuid in ids["consumers"].items()}
    return {
        role: {d: roles.get(h, h) if h else None
               for table in view["devices"].values() for d, h in table.items()}
        for role, view in found["providers"].items()
    }


def device_ids(found: dict[str, Any], role: str) -> list[str]:
    """Every device id a consumer (by role) says it holds."""
    devices = found["consumers"][role]["devices"]
    return sorted(d for by_rc in devices.values() for ids in by_rc.values() for d in ids)


@pytest.mark.parametrize("action", ["revert", "confirm"])
@pytest.mark.parametrize("placement", ["same-host", "cross-host"])
def test_a_pending_resize_survives_a_restart(shared_url: str, placement: str,
                                             action: str) -> None:
    started = run_worker(shared_url, "start", placement)
    ids, pending = started["ids"], started["state"]
    assert holders_by_role(pending, ids) == HOLDERS[placement]["pending"]
    assert pending["migration"]["status"] == "in-progress"
    assert pending["consumers"]["migration"]["devices"] == pending["migration"]["old_devices"]
    assert pending["consumers"]["instance"]["devices"] == pending["migration"]["new_devices"]
    assert set(device_ids(pending, "migration")).isdisjoint(device_ids(pending, "instance"))

    resolved = run_worker(shared_url, action, json.dumps(ids))
    assert resolved["pid"] != started["pid"]
    assert resolved["found"] == pending
    after = resolved["after"]
    assert holders_by_role(after, ids) == HOLDERS[placement][action]
    assert after["migration"]["status"] == STATUS[action]
    assert after["consumers"]["migration"]["devices"] == {}
    expected = (pending["migration"]["old_devices"] if action == "revert"
                else pending["migration"]["new_devices"])
    assert after["consumers"]["instance"]["devices"] == expected

    with open_ledger(shared_url) as ledger:
        assert_invariants(ledger)
        assert json.loads(json.dumps(state(ledger, ids))) == after
