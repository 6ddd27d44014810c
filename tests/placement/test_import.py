"""Starting a ledger from a real Placement 16 database: the schema made by Placement's own
migrations (on MariaDB and on SQLite), filled through Placement's own API with a nested
tree, custom classes, reserved inventory, rewritten consumers, a migration consumer and a
consumer without a type; imported; every inventory, usage, allocation, owner and
generation compared with what Placement's API reports; then the ledger's audit is clean
and new claims obey the imported capacity.

Placement cannot share a virtualenv with the ledger (conflicting pins): it runs in its own,
``$LEDGER_PLACEMENT_PYTHON`` or ``.venv-placement`` (``scripts/placement_venv.sh`` makes
it; CI does). Without it these tests are skipped with that reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from allocation_ledger import InsufficientCapacity, open_ledger
from allocation_ledger.cli import main
from allocation_ledger.placement.importer import MIGRATION_TYPE

ROOT = Path(__file__).resolve().parents[2]
FILL = Path(__file__).with_name("fill_placement.py")
MARIADB = {"host": "127.0.0.1", "port": 3306, "user": "root"}


def placement_python() -> str:
    found = os.environ.get("LEDGER_PLACEMENT_PYTHON") or str(
        ROOT / ".venv-placement" / "bin" / "python")
    if not Path(found).exists():
        pytest.skip("openstack-placement is not installed: run scripts/placement_venv.sh "
                    "(or set LEDGER_PLACEMENT_PYTHON)")
    return found


def mariadb_database() -> Iterator[str]:
    """A fresh database on the local MariaDB, dropped afterwards."""
    import pymysql

    name = f"ledger18_placement_{uuid.uuid4().hex[:8]}"
    try:
        admin = pymysql.connect(**MARIADB, autocommit=True)  # type: ignore[arg-type]
    except pymysql.err.OperationalError as err:
        pytest.skip(f"MariaDB is not reachable at 127.0.0.1:3306: {err}")
    try:
        admin.cursor().execute(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
        yield f"mysql+pymysql://root@127.0.0.1/{name}?charset=utf8mb4"
    finally:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {name}")
        admin.close()


@pytest.fixture(params=["mariadb", "sqlite"])
def placement(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """A Placement database URL and what Placement's API reports about it."""
    python = placement_python()
    urls = (mariadb_database() if request.param == "mariadb"
            else iter([f"sqlite:///{tmp_path / 'placement.db'}"]))
    for url in urls:
        done = subprocess.run([python, str(FILL), url], capture_output=True, text=True,
                              timeout=300, check=False, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        yield url.replace("?charset=utf8mb4", ""), json.loads(done.stdout)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_a_placement_database_becomes_a_ledger_that_matches_it(
        placement: tuple[str, Any], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    source, api = placement
    url = f"sqlite:///{tmp_path / 'ledger.db'}"

    code, out = cli(capsys, "--url", url, "--json", "import-placement", "--from", source,
                    "--dry-run")
    plan = json.loads(out)
    assert code == 0 and plan["dry_run"] and plan["ok"]
    assert [c["command"] for c in plan["commands"]] == ["register_provider"] * 5 + [
        "claim"] * 7 + ["set_inventories"]  # the over-capacity host's real inventory last
    assert not (tmp_path / "ledger.db").exists()  # the dry run created nothing

    code, out = cli(capsys, "--url", url, "--json", "import-placement", "--from", source)
    report = json.loads(out)
    assert (code, report["ok"], report["providers"], report["consumers"]) == (0, True, 5, 7)
    *_, host3 = api["providers"]
    assert [line.split(":")[0] for line in report["over_capacity"]] == [
        f"provider {host3} (compute-3)"]
    assert api["providers"][host3]["usages"]["VCPU"] == 6  # of 4: imported as it is

    with open_ledger(url) as ledger:
        for rp, expected in api["providers"].items():
            view = ledger.provider(rp)
            assert (view.name, view.parent_uuid) == (expected["name"], expected["parent_uuid"])
            assert {rc: n for rc, n in view.usages.items() if n} == {
                rc: n for rc, n in expected["usages"].items() if n}
            for rc, inv in expected["inventories"].items():
                mine = view.inventories[rc]
                assert (mine.total, mine.reserved, mine.min_unit, mine.max_unit,
                        mine.step_size) == (inv["total"], inv["reserved"], inv["min_unit"],
                                            inv["max_unit"], inv["step_size"])
                assert float(mine.allocation_ratio) == pytest.approx(inv["allocation_ratio"])
            assert set(view.inventories) == set(expected["inventories"])
        for consumer, expected in api["consumers"].items():
            view = ledger.consumer(consumer)
            assert view.allocations == expected["allocations"]
            kind = {"MIGRATION": MIGRATION_TYPE, "unknown": "UNKNOWN"}.get(
                expected["consumer_type"], expected["consumer_type"])
            assert (view.project_id, view.user_id, view.consumer_type) == (
                expected["project_id"], expected["user_id"], kind)
        assert {MIGRATION_TYPE, "UNKNOWN", "INSTANCE"} == {
            ledger.consumer(c).consumer_type for c in api["consumers"]}

    # the source generations are noted on the imported events
    for kind, items, field in (("provider", api["providers"], "generation"),
                               ("consumer", api["consumers"], "generation")):
        for uuid_, expected in items.items():
            code, out = cli(capsys, "--url", url, "--json", "history", kind, uuid_)
            first = json.loads(out)[0]
            assert f"{kind} generation {expected[field]}" in first["reason"]
            assert first["actor"] == "allocation-ledger import-placement"

    assert cli(capsys, "--url", url, "audit", "--projections", "off")[0] == 0
    *_, host2, _ = api["providers"]
    with open_ledger(url) as ledger:
        free = ledger.provider(host2).classes["VCPU"].free
        assert free == 7 - 6  # int((8 - 0) x 0.9) = 7, 6 used, as Placement counts
        ledger.claim(str(uuid.uuid4()), {host2: {"VCPU": free}}, None, project_id="p",
                     user_id="u")
        with pytest.raises(InsufficientCapacity):
            ledger.claim(str(uuid.uuid4()), {host2: {"VCPU": 1}}, None, project_id="p",
                         user_id="u")

    code, _ = cli(capsys, "--url", url, "import-placement", "--from", source)
    assert code == 1  # not into a ledger that already holds something
