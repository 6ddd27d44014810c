"""The import as an operator runs it, against a Placement database written here by hand in
Placement 16's table shapes (the tests of ``test_import.py`` use Placement's own
migrations and API, which need ``.venv-placement``): it writes all or nothing, imports an
over-capacity host as it is and says so, a dry run creates nothing, a mistyped source path
is an error, and the source's password is never shown."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.cli import main

CLASSES = {"VCPU": 0, "MEMORY_MB": 1, "DISK_GB": 2}
SCHEMA = """
CREATE TABLE resource_classes (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE resource_providers (id INTEGER PRIMARY KEY, uuid TEXT, name TEXT,
    generation INTEGER, parent_provider_id INTEGER, root_provider_id INTEGER);
CREATE TABLE inventories (id INTEGER PRIMARY KEY, resource_provider_id INTEGER,
    resource_class_id INTEGER, total INTEGER, reserved INTEGER, min_unit INTEGER,
    max_unit INTEGER, step_size INTEGER, allocation_ratio FLOAT);
CREATE TABLE projects (id INTEGER PRIMARY KEY, external_id TEXT);
CREATE TABLE users (id INTEGER PRIMARY KEY, external_id TEXT);
CREATE TABLE consumer_types (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE consumers (id INTEGER PRIMARY KEY, uuid TEXT, project_id INTEGER,
    user_id INTEGER, consumer_type_id INTEGER, generation INTEGER);
CREATE TABLE allocations (id INTEGER PRIMARY KEY, resource_provider_id INTEGER,
    consumer_id TEXT, resource_class_id INTEGER, used INTEGER);
CREATE TABLE traits (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE resource_provider_traits (trait_id INTEGER, resource_provider_id INTEGER);
CREATE TABLE placement_aggregates (id INTEGER PRIMARY KEY, uuid TEXT);
CREATE TABLE resource_provider_aggregates (resource_provider_id INTEGER,
    aggregate_id INTEGER);
"""


class Placement:
    """A Placement database file being filled."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with closing(sqlite3.connect(path)) as conn:
            conn.executescript(SCHEMA)
            conn.executemany("INSERT INTO resource_classes VALUES (?, ?)",
                             [(i, n) for n, i in CLASSES.items()])
            conn.execute("INSERT INTO projects VALUES (1, 'project')")
            conn.execute("INSERT INTO users VALUES (1, 'user')")
            conn.execute("INSERT INTO consumer_types VALUES (1, 'INSTANCE')")
            conn.execute("INSERT INTO consumer_types VALUES (2, 'MIGRATION')")
            conn.commit()

    @property
    def url(self) -> str:
        return f"sqlite:///{self.path}"

    def _run(self, sql: str, *args: Any) -> int:
        with closing(sqlite3.connect(self.path)) as conn:
            found = conn.execute(sql, args).lastrowid
            conn.commit()
        return int(found or 0)

    def host(self, total: int, *, max_unit: int = 2**31 - 1, step_size: int = 1) -> str:
        """A root provider with ``total`` VCPU; its uuid."""
        rp = str(uuid.uuid4())
        rid = self._run("INSERT INTO resource_providers (uuid, name, generation) "
                        "VALUES (?, ?, 1)", rp, f"host-{rp[:8]}")
        self._run("UPDATE resource_providers SET root_provider_id = id WHERE id = ?", rid)
        self._run("INSERT INTO inventories (resource_provider_id, resource_class_id, total, "
                  "reserved, min_unit, max_unit, step_size, allocation_ratio) "
                  "VALUES (?, 0, ?, 0, 1, ?, ?, 1.0)", rid, total, max_unit, step_size)
        return rp

    def instance(self, allocations: dict[str, int], resource_class: str = "VCPU",
                 *, recorded: bool = True, kind: int = 1) -> str:
        """A consumer holding ``allocations`` (provider -> amount); its uuid (``kind`` 2:
        a migration)."""
        consumer = str(uuid.uuid4())
        if recorded:
            self._run("INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, "
                      "generation) VALUES (?, 1, 1, ?, 1)", consumer, kind)
        for rp, amount in allocations.items():
            self._run("INSERT INTO allocations (resource_provider_id, consumer_id, "
                      "resource_class_id, used) SELECT id, ?, ?, ? FROM resource_providers "
                      "WHERE uuid = ?", consumer, CLASSES[resource_class], amount, rp)
        return consumer


@pytest.fixture
def placement(tmp_path: Path) -> Placement:
    return Placement(tmp_path / "placement.db")


def imported(capsys: pytest.CaptureFixture[str], url: str, source: str,
             *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--url", url, "import-placement", "--from", source, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def events(url: str) -> int:
    with open_ledger(url) as ledger:
        return ledger.store.recorder.max_notification_id() or 0


def test_an_over_capacity_host_is_imported_as_it_is_and_reported(
        placement: Placement, durable_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Placement let the inventory be lowered to 4 VCPU, max_unit 2, step 2, under 3 + 3 + 2
    crowded = placement.host(4, max_unit=2, step_size=2)
    spare = placement.host(16)
    vms = [placement.instance({crowded: 3}), placement.instance({crowded: 3}),
           placement.instance({crowded: 2, spare: 4})]
    code, out, err = imported(capsys, durable_url, placement.url)
    assert (code, err) == (0, ""), out + err
    assert f"over capacity in Placement, imported as it is: provider {crowded}" in out
    assert "VCPU used 8 of capacity 4" in out
    with open_ledger(durable_url) as ledger:
        view = ledger.provider(crowded)
        vcpu = view.inventories["VCPU"]
        assert (vcpu.total, vcpu.max_unit, vcpu.step_size) == (4, 2, 2)  # the source's
        assert view.usages["VCPU"] == 8
        assert [ledger.consumer(vm).allocations for vm in vms] == [
            {crowded: {"VCPU": 3}}, {crowded: {"VCPU": 3}},
            {crowded: {"VCPU": 2}, spare: {"VCPU": 4}}]
    assert main(["--url", durable_url, "audit", "--projections", "off"]) == 0


def test_a_migration_whose_instance_cannot_be_told_is_imported_plain_and_reported(
        placement: Placement, durable_url: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    source, dest = placement.host(16), placement.host(16)
    migration = placement.instance({source: 2}, kind=2)
    first, second = placement.instance({dest: 2}), placement.instance({dest: 4})
    code, out, err = imported(capsys, durable_url, placement.url)
    assert (code, err) == (0, ""), out
    assert (f"note: migration consumer imported as a plain consumer, its instance not paired: "
            f"{migration}: 2 consumers of project project, user user could be its instance: "
            f"{first}, {second}") in out
    assert "move in flight" not in out
    with open_ledger(durable_url) as ledger:
        assert ledger.consumer(migration).consumer_type == "PLACEMENT_MIGRATION"
        assert ledger.migrations_in_flight() == []
    placement._run("DELETE FROM allocations WHERE consumer_id = ?", second)
    placement._run("DELETE FROM consumers WHERE uuid = ?", second)
    paired = f"sqlite:///{tmp_path / 'paired.db'}"  # one candidate left: paired
    code, out, err = imported(capsys, paired, placement.url)
    assert (code, err) == (0, ""), out
    assert f"move in flight: migration {migration} of instance {first}" in out
    with open_ledger(paired) as ledger:
        assert [m.migration_uuid for m in ledger.migrations_in_flight()] == [migration]
        assert ledger.migration(migration).instance_uuid == first


def test_a_refused_command_leaves_the_ledger_empty(
        placement: Placement, durable_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    host = placement.host(16)
    for _ in range(3):
        placement.instance({host: 1})
    placement.instance({host: 100}, "MEMORY_MB")  # a class the host has no inventory of
    placement.instance({host: 1})
    code, out, err = imported(capsys, durable_url, placement.url)
    assert code == 1 and err.splitlines() == [err.strip()] and "MEMORY_MB" in err
    assert events(durable_url) == 0
    placement._run("DELETE FROM allocations WHERE resource_class_id = 1")
    code, out, err = imported(capsys, durable_url, placement.url)  # and a rerun works
    assert (code, err) == (0, ""), out


def test_a_mismatch_leaves_the_ledger_empty(
        placement: Placement, durable_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    host = placement.host(16)
    placement.instance({host: 2})
    placement.instance({host: 2}, recorded=False)  # allocations of no consumer
    code, out, _ = imported(capsys, durable_url, placement.url)
    assert code == 1 and "MISMATCH" in out and "nothing was written" in out
    assert events(durable_url) == 0


def test_a_dry_run_creates_nothing(placement: Placement, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    placement.instance({placement.host(4): 8})  # over capacity: staged, not refused
    target = tmp_path / "ledger.db"
    code, out, err = imported(capsys, f"sqlite:///{target}", placement.url, "--dry-run")
    assert (code, err) == (0, ""), out
    assert "would import 1 providers, 1 consumers" in out
    assert not target.exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "placement.db"]


def test_a_mistyped_source_path_is_an_error_and_creates_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "placment.db"
    code, _, err = imported(capsys, f"sqlite:///{tmp_path / 'ledger.db'}",
                              f"sqlite:///{missing}")
    assert code == 2 and err.splitlines() == [err.strip()] and "no such file" in err
    assert not missing.exists()


@pytest.mark.parametrize("source", [
    "mysql+pymysql://placement:s3cr3t-pw@127.0.0.1:1/placement",
    "postgresql://placement:s3cr3t-pw@127.0.0.1:1/placement",
    "mysql+pymysql://placement:s3cr3t-pw@127.0.0.1:notaport/placement",
    "nosuchdriver://placement:s3cr3t-pw@host/placement",
])
@pytest.mark.parametrize("json_output", [False, True])
def test_the_source_password_is_never_shown(
        source: str, json_output: bool, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    capsys.readouterr()
    code = main(["--url", url, *(["--json"] if json_output else []), "import-placement",
                 "--from", source])
    captured = capsys.readouterr()
    assert code != 0
    assert "s3cr3t-pw" not in captured.out + captured.err
    assert "***" in captured.err
    if json_output:
        assert json.loads(captured.err)["url"].count("***") == 1


def test_an_import_killed_midway_leaves_an_empty_ledger(
        placement: Placement, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hosts = [placement.host(1000) for _ in range(10)]
    with closing(sqlite3.connect(placement.path)) as conn:  # 1,500 instances, in one go
        for n in range(1500):
            consumer = str(uuid.uuid4())
            conn.execute("INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, "
                         "generation) VALUES (?, 1, 1, 1, 1)", (consumer,))
            conn.execute("INSERT INTO allocations (resource_provider_id, consumer_id, "
                         "resource_class_id, used) SELECT id, ?, 0, 1 FROM resource_providers "
                         "WHERE uuid = ?", (consumer, hosts[n % 10]))
        conn.commit()
    whole = f"sqlite:///{tmp_path / 'whole.db'}"
    assert imported(capsys, whole, placement.url, "--quiet")[0] == 0
    complete = events(whole)
    env = {k: v for k, v in os.environ.items() if k not in ("LEDGER_URL", "PROJECTIONS_URL")}
    entry = "from allocation_ledger.cli import main; raise SystemExit(main())"

    def run(target: Path, kill_after: float | None) -> tuple[int, float]:
        """The import into ``target``, killed ``kill_after`` seconds after it opened the
        target (``None``: let it finish); its exit code and how long it ran from then."""
        running = subprocess.Popen(
            [sys.executable, "-c", entry, "--url", f"sqlite:///{target}", "import-placement",
             "--from", placement.url, "--quiet"], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not target.exists() and running.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # the target is opened: the import is under way
        opened = time.monotonic()
        if kill_after is not None:
            time.sleep(kill_after)
            running.send_signal(signal.SIGKILL)
        code = running.wait(timeout=120)
        return code, time.monotonic() - opened

    # kill at fractions of how long a whole import runs on this machine, now
    code, whole_run = run(tmp_path / "timed.db", None)
    assert code == 0 and events(f"sqlite:///{tmp_path / 'timed.db'}") == complete
    killed = 0
    for fraction in (0.1, 0.4, 0.7):
        target = tmp_path / f"killed-{fraction}.db"
        code, _ = run(target, fraction * whole_run)
        killed += code == -signal.SIGKILL
        assert events(f"sqlite:///{target}") in (0, complete)  # all or nothing
    assert killed, "every import finished before its kill: nothing was tried midway"
