"""Starting a ledger from a real Placement 16 database: the schema made by Placement's own
migrations (on MariaDB and on SQLite), filled through Placement's own API with a nested
tree, custom classes, reserved inventory, traits (standard and custom) and aggregates,
rewritten consumers, an over-capacity host, a deleted consumer, a consumer without a type,
and two resizes in flight made as Nova's ``move_allocations`` makes them (one typed at 1.38,
one untyped at 1.28 as Nova writes it); imported; every inventory, usage, trait,
aggregate, allocation, owner and generation compared with what
Placement's API reports; the typed move listed as a migration (the untyped one too with
``--pair-untyped``), seen by the audit and repaired; new claims obey the imported capacity;
and an import killed midway leaves an empty ledger.

Placement cannot share a virtualenv with the ledger (conflicting pins): it runs in its own,
``$LEDGER_PLACEMENT_PYTHON`` or ``.venv-placement`` (``scripts/placement_venv.sh`` makes
it; CI does). Without it these tests are skipped with that reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from allocation_ledger import InsufficientCapacity, open_ledger
from allocation_ledger.cli import main
from allocation_ledger.placement.importer import MIGRATION_TYPE
from allocation_ledger.placement.source import read

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
    yield from filled(request.param, tmp_path)


def filled(backend: str, tmp_path: Path, *extra: str) -> Iterator[tuple[str, Any]]:
    python = placement_python()
    urls = (mariadb_database()
            if backend == "mariadb" else iter([f"sqlite:///{tmp_path / 'placement.db'}"]))
    for url in urls:
        done = subprocess.run([python, str(FILL), url, *extra], capture_output=True, text=True,
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
    assert [c["command"] for c in plan["commands"]] == ["create_trait"] * 2 + [
        "register_provider", "set_traits", "set_aggregates",  # compute-1
        "register_provider", "set_aggregates",  # compute-2
        "register_provider",  # compute-3, then the children: NUMA 0 and its NIC
        "register_provider", "set_traits", "register_provider"] + ["claim"] * 7 + [
        "claim", "swap", "set_inventories"]  # custom traits first, each provider's traits
    # and aggregates after it, the move after the claims, the over-capacity host's real
    # inventory last
    assert not (tmp_path / "ledger.db").exists()  # the dry run created nothing

    code, out = cli(capsys, "--url", url, "--json", "import-placement", "--from", source)
    report = json.loads(out)
    assert (code, report["ok"], report["providers"], report["consumers"]) == (0, True, 5, 9)
    _, _, _, migration, vm4, *_ = api["consumers"]
    assert report["migrations"] == [{"migration_uuid": migration, "instance_uuid": vm4,
                                     "rule": "consumer type MIGRATION"}]
    assert report["unpaired_migrations"] == []
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
            assert (sorted(view.traits), sorted(view.aggregates)) == (
                sorted(expected["traits"]), sorted(expected["aggregates"]))
        assert ledger.traits(prefix="CUSTOM_") == sorted(api["custom_traits"]) == [
            "CUSTOM_RACK_A", "CUSTOM_UNUSED"]
        for consumer, expected in api["consumers"].items():
            view = ledger.consumer(consumer)
            assert view.allocations == expected["allocations"]
            kind = {"MIGRATION": "MIGRATION" if consumer == migration else MIGRATION_TYPE,
                    "unknown": "UNKNOWN"}.get(expected["consumer_type"],
                                              expected["consumer_type"])
            assert (view.project_id, view.user_id, view.consumer_type) == (
                expected["project_id"], expected["user_id"], kind)
        assert {"MIGRATION", "UNKNOWN", "INSTANCE"} == {
            ledger.consumer(c).consumer_type for c in api["consumers"]}

    _the_move_is_a_migration(capsys, url, api)

    # the source generations are noted on the imported events
    for kind, items, field in (("provider", api["providers"], "generation"),
                               ("consumer", api["consumers"], "generation")):
        for uuid_, expected in items.items():
            if uuid_ in (migration, vm4):
                continue  # imported as the move: below
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

    _the_move_is_repaired(capsys, url, api)
    code, _ = cli(capsys, "--url", url, "import-placement", "--from", source)
    assert code == 1  # not into a ledger that already holds something

    _untyped_pairs_when_asked(capsys, tmp_path, source, api)


def _the_move_is_a_migration(capsys: pytest.CaptureFixture[str], url: str,
                             api: Any) -> None:
    """The resize in flight is the ledger's move: the migration holds the source, the
    instance its destination, as in Placement; it is listed and the audit sees it."""
    _, _, _, migration, vm4, _, _, untyped_migration, _ = api["consumers"]
    with open_ledger(url) as ledger:
        move = ledger.migration(migration)
        assert (move.instance_uuid, move.status, move.kind) == (vm4, "in-progress",
                                                               "migration")
        assert move.allocations == move.old_allocations == api["consumers"][migration][
            "allocations"]
        assert move.new_allocations == api["consumers"][vm4]["allocations"]
        assert ledger.consumer(vm4).migration_uuid == migration
        assert ledger.consumer(untyped_migration).migration_uuid is None  # not asked

    code, out = cli(capsys, "--url", url, "--json", "list", "migrations")
    assert code == 0 and [m["uuid"] for m in json.loads(out)] == [migration]
    code, out = cli(capsys, "--url", url, "--json", "audit", "--projections", "off",
                    "--stale-after", "0")
    assert code == 0 and [f["kind"] for f in json.loads(out)["findings"]] == [
        "stale-migration"]


def _the_move_is_repaired(capsys: pytest.CaptureFixture[str], url: str, api: Any) -> None:
    """The imported move is repaired like any other: reverted, the instance is back on
    its source."""
    _, _, _, migration, vm4, *_ = api["consumers"]
    code, out = cli(capsys, "--url", url, "repair", "--stale-after", "0", "--action", "revert")
    assert code == 0, out
    with open_ledger(url) as ledger:
        assert ledger.migration(migration).status == "reverted"
        assert ledger.consumer(vm4).allocations == api["consumers"][migration]["allocations"]


def _untyped_pairs_when_asked(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                              source: str, api: Any) -> None:
    """Asked to, the untyped pair (Nova's own write, at 1.28) is a move as well."""
    _, _, _, migration, vm4, old, _, untyped_migration, vm6 = api["consumers"]
    paired = f"sqlite:///{tmp_path / 'paired.db'}"
    code, out = cli(capsys, "--url", paired, "--json", "import-placement", "--from", source,
                    "--pair-untyped")
    report = json.loads(out)
    assert code == 0 and report["ok"], out
    assert [(m["migration_uuid"], m["instance_uuid"]) for m in report["migrations"]] == [
        (migration, vm4), (untyped_migration, vm6)]
    with open_ledger(paired) as ledger:
        assert ledger.migration(untyped_migration).instance_uuid == vm6
        assert ledger.consumer(old).consumer_type == "UNKNOWN"  # alone of its owner


def test_an_import_of_placement_killed_midway_leaves_an_empty_ledger(tmp_path: Path) -> None:
    """The real Placement database with 150 more instances, imported whole, then imported
    again and killed (SIGKILL) at fractions of how long the whole import ran: each killed
    import left nothing or everything, never part."""
    source, _ = next(filled("sqlite", tmp_path, "150"))
    env = {k: v for k, v in os.environ.items() if k not in ("LEDGER_URL", "PROJECTIONS_URL")}
    entry = "from allocation_ledger.cli import main; raise SystemExit(main())"

    def run(target: Path, kill_after: float | None) -> tuple[int, float]:
        running = subprocess.Popen(
            [sys.executable, "-c", entry, "--url", f"sqlite:///{target}", "import-placement",
             "--from", source, "--quiet"], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not target.exists() and running.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)  # the target is opened: the import is under way
        opened = time.monotonic()
        if kill_after is not None:
            time.sleep(kill_after)
            running.send_signal(signal.SIGKILL)
        return running.wait(timeout=120), time.monotonic() - opened

    def events(target: Path) -> int:
        with open_ledger(f"sqlite:///{target}") as ledger:
            return ledger.store.recorder.max_notification_id() or 0

    code, whole_run = run(tmp_path / "whole.db", None)
    complete = events(tmp_path / "whole.db")
    assert code == 0 and complete > 2 * 150
    assert len(read(source).consumers) == 9 + 150
    killed = 0
    for fraction in (0.1, 0.4, 0.7):
        target = tmp_path / f"killed-{fraction}.db"
        code, _ = run(target, fraction * whole_run)
        killed += code == -signal.SIGKILL
        assert events(target) in (0, complete)  # all or nothing
    assert killed, "every import finished before its kill: nothing was tried midway"
