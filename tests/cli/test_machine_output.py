"""Machine output is even (issue 28, item 10): JSON numbers where a program reads numbers,
one JSON document per command, CSV with empty fields for nothing and plain numbers, no
Python reprs for a person, and one line and exit code for a missing extra, a port in use
and an unreachable import source."""

from __future__ import annotations

import csv
import io
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.cli import main
from tests.builders import a_host, an_instance, new_id


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture
def world(url: str) -> Iterator[tuple[Ledger, str, str, str, str]]:
    """A root with a child, an instance on the root, and a resize in flight to another
    host: (ledger, root, child, instance, migration)."""
    with open_ledger(url) as ledger:
        root = a_host(ledger, vcpu=8, memory_mb=4096)
        child = a_host(ledger, vcpu=None, memory_mb=None, parent=root)
        other = a_host(ledger, vcpu=8, memory_mb=4096)
        vm = an_instance(ledger, {root: {"VCPU": 2, "MEMORY_MB": 512}},
                         command_id="boot-1").consumer_uuid
        migration = new_id()
        ledger.swap(vm, migration, 1, kind="resize")
        ledger.claim(vm, {other: {"VCPU": 4}}, None, project_id="project-a",
                     user_id="user-a")
        yield ledger, root, child, vm, migration


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as done:
        code = int(done.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_providers_json_gives_usage_as_numbers(
        world: tuple[Ledger, str, str, str, str], url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, root, *_ = world
    code, out, err = cli(capsys, "list", "providers", "--url", url, "--json")
    assert code == 0, err
    [listed] = [p for p in json.loads(out) if p["uuid"] == root]
    # the migration holds the source until the resize is confirmed
    assert listed["usage"]["VCPU"] == {"used": 2, "capacity": 8, "free": 6,
                                       "over_capacity": False}
    assert listed["usage"]["MEMORY_MB"]["used"] == 512
    code, out, _ = cli(capsys, "list", "providers", "--url", url)   # a person's table
    assert "VCPU 2/8" in out


@pytest.mark.parametrize("what", ["consumer", "provider", "migration"])
def test_history_json_is_one_document(
        what: str, world: tuple[Ledger, str, str, str, str], url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, root, _, vm, migration = world
    uuid = {"consumer": vm, "provider": root, "migration": migration}[what]
    code, out, err = cli(capsys, "history", what, uuid, "--url", url, "--json")
    assert code == 0, err
    entries = json.loads(out)   # one document, not JSON lines
    assert isinstance(entries, list) and len(entries) >= 2
    assert all(isinstance(e["position"], int) for e in entries)


def test_history_ledger_json_is_one_array_and_names_every_stream(
        world: tuple[Ledger, str, str, str, str], url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "history", "ledger", "--url", url, "--json")
    assert code == 0, err
    records = json.loads(out)
    assert [r["position"] for r in records] == list(range(1, len(records) + 1))
    assert not any("unknown" in r for r in records)
    commands = [r for r in records if r["event"] == "Command.Recorded"]
    assert commands and all(r["command_id"] for r in commands)
    assert "boot-1" in {r["command_id"] for r in commands}
    code, out, _ = cli(capsys, "history", "ledger", "--url", url)   # JSON lines stay
    assert [json.loads(line)["position"] for line in out.splitlines()] == [
        r["position"] for r in records]


def test_history_csv_has_numbers_for_positions_and_empty_fields_for_nothing(
        world: tuple[Ledger, str, str, str, str], url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, root, *_ = world
    code, out, err = cli(capsys, "history", "provider", root, "--url", url, "-f", "csv")
    assert code == 0, err
    header, *rows = list(csv.reader(io.StringIO(out)))
    assert header[:4] == ["POSITION", "TIME", "ACTOR", "REQUEST"]
    assert rows and all(row[0].isdigit() for row in rows)
    assert all(row[2] == "" and row[3] == "" for row in rows)   # no actor, no request id
    code, out, _ = cli(capsys, "history", "provider", root, "--url", url)
    assert out.splitlines()[1].startswith("#")   # a person's table keeps #N and -


def test_list_csv_writes_nothing_as_an_empty_field(
        world: tuple[Ledger, str, str, str, str], url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, root, child, *_ = world
    code, out, err = cli(capsys, "list", "providers", "--url", url, "-f", "csv")
    assert code == 0, err
    rows = {row["UUID"]: row for row in csv.DictReader(io.StringIO(out))}
    assert rows[root]["PARENT_UUID"] == "" and rows[child]["PARENT_UUID"] == root
    assert rows[root]["GENERATION"].isdigit()


def test_show_provider_and_consumer_print_rows_as_csv(
        world: tuple[Ledger, str, str, str, str], url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, root, child, vm, _ = world
    code, out, err = cli(capsys, "show", "provider", root, "--url", url, "-f", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    vcpu = next(r for r in rows if r["PROVIDER_UUID"] == root and r["RESOURCE_CLASS"] == "VCPU")
    assert (vcpu["USED"], vcpu["CAPACITY"], vcpu["FREE"], vcpu["OVER_CAPACITY"]) == (
        "2", "8", "6", "false")
    assert [r["PARENT_UUID"] for r in rows if r["PROVIDER_UUID"] == child] == [root]
    code, out, err = cli(capsys, "show", "consumer", vm, "--url", url, "-f", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["RESOURCE_CLASS"], r["AMOUNT"]) for r in rows] == [("VCPU", "4")]


def test_show_migration_refuses_csv_in_one_line(
        world: tuple[Ledger, str, str, str, str], url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    *_, migration = world
    code, out, err = cli(capsys, "show", "migration", migration, "--url", url, "-f", "csv")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "--json" in err


def test_show_migration_prints_no_python_reprs(
        world: tuple[Ledger, str, str, str, str], url: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, root, *_, migration = world
    code, out, err = cli(capsys, "show", "migration", migration, "--url", url)
    assert code == 0, err
    for repr_only in ("{'", "{}", "None", "True", "False", "datetime("):
        assert repr_only not in out, out
    assert f"old_allocations: {root}: MEMORY_MB=512, VCPU=2" in out


def run_cli(*argv: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = (f"import sys\n{prelude}\nfrom allocation_ledger.cli import main\n"
            "raise SystemExit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *argv], check=False,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("missing", "extra", "argv"), [
    ("starlette", "http", ["serve", "--bind", "127.0.0.1:1"]),
    ("pymysql", "placement",
     ["import-placement", "--from", "mysql+pymysql://u@127.0.0.1:1/placement", "--dry-run"]),
], ids=["serve-without-starlette", "import-without-pymysql"])
def test_a_missing_extra_names_the_pip_command(
        missing: str, extra: str, argv: list[str], tmp_path: Path) -> None:
    done = run_cli("--url", f"sqlite:///{tmp_path / 'l.db'}", *argv,
                   prelude=f"sys.modules[{missing!r}] = None")
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"pip install 'allocation-ledger[{extra}]'" in done.stderr


def test_serve_on_a_port_in_use_says_so_in_one_line_and_exits_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("serve", "--url", f"sqlite:///{tmp_path / 'l.db'}",
                       "--bind", f"127.0.0.1:{port}")
    assert done.returncode == 1
    assert done.stderr == (f"allocation-ledger serve: cannot listen on 127.0.0.1:{port}: "
                           "Address already in use\n")
    assert not (tmp_path / "l.db").exists()   # refused before the store was opened


def test_an_unreachable_import_source_exits_1_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "--url", f"sqlite:///{tmp_path / 'l.db'}", "import-placement",
                         "--from", "postgresql://placement:s3cret@127.0.0.1:1/placement")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "Connection refused" in err and "s3cret" not in err
