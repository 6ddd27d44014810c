"""The command line as an operator meets it: help with examples on every command, the
global options before or after the command, JSON from every command that prints (errors
too), ISO 8601 times, exit 2 for bad values, UUID prefixes, trees root first, and a help
that imports nothing heavy."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from allocation_ledger import Ledger, open_ledger
from allocation_ledger.cli import COMMANDS, main
from tests.builders import PROJECT, USER, a_host, new_id


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture
def ledger(url: str) -> Iterator[Ledger]:
    with open_ledger(url) as opened:
        yield opened


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit code (argparse's SystemExit included), stdout and stderr of one call."""
    try:
        code = main(list(argv))
    except SystemExit as done:
        code = int(done.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def names() -> list[str]:
    import importlib
    return [importlib.import_module(m).NAME for m in COMMANDS]


@pytest.mark.parametrize("command", names())
def test_every_command_has_help_with_examples(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, command, "--help")
    assert code == 0
    assert f"allocation-ledger {command}" in out.split("examples:")[1]
    assert "--url URL" in out and "--json" in out and "--no-progress" in out


def test_version_and_top_level_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--version")
    assert code == 0 and out.startswith("allocation-ledger ") and out.strip()[-1].isdigit()
    code, out, _ = cli(capsys, "--help")
    assert code == 0 and "examples:" in out and all(name in out for name in names())


def test_help_imports_neither_the_store_nor_the_service() -> None:
    code = ("import sys\nfrom allocation_ledger.cli import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in ('eventsourcing', 'psycopg', 'sqlalchemy', 'pydantic') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_global_options_before_or_after_the_command(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    host = a_host(ledger, name="compute-1")
    for argv in (("--url", url, "--json", "list", "providers"),
                 ("list", "providers", "--url", url, "--json"),
                 ("--json", "list", "--url", url, "providers")):
        code, out, _ = cli(capsys, *argv)
        assert code == 0, argv
        assert [(p["uuid"], p["name"]) for p in json.loads(out)] == [(host, "compute-1")]


@pytest.mark.parametrize("argv", [
    ("state-at", "hosts", "--position", "-3"),
    ("audit", "--stale-after", "-5"),
    ("audit", "--to-position", "x"),
    ("list", "providers", "--resource", "VCPU=0"),
    ("list", "migrations", "--stale-after", "nan"),
    ("projections", "resume", "--batch-size", "0"),
    ("history", "consumer"),
    ("repair", "--action", "revert"),
    ("repair", "--stale-after", "60"),
])
def test_bad_values_are_usage_errors(
        argv: tuple[str, ...], url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, *argv, "--url", url)
    assert (code, out) == (2, "")
    assert "error:" in err.strip().splitlines()[-1] and "Traceback" not in err


def test_every_printing_command_speaks_json(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    host = a_host(ledger)
    vm, migration = new_id(), new_id()
    view = ledger.claim(vm, {host: {"VCPU": 1}}, None, project_id=PROJECT, user_id=USER)
    ledger.swap(vm, migration, view.generation or 0, kind="migration")
    calls = [("demo",), ("show", "provider", host), ("show", "consumer", migration),
             ("show", "migration", migration), ("list", "providers"), ("list", "consumers"),
             ("list", "migrations"), ("projections", "rebuild"), ("projections", "status"),
             ("audit", "--projections", "off"), ("state-at", "hosts"),
             ("repair", "--stale-after", "0", "--action", "revert", "--dry-run")]
    for argv in calls:
        code, out, _ = cli(capsys, *argv, "--url", url, "--json")
        assert code == 0, argv
        json.loads(out)
    for argv in (("history", "provider", host), ("history", "ledger")):
        code, out, _ = cli(capsys, *argv, "--url", url, "--json")
        assert code == 0 and json.loads(out)  # one document, like every other command
    started = json.loads(cli(capsys, "show", "migration", migration, "--url", url,
                             "--json")[1])["started_at"]
    assert "T" in started and " " not in started
    code, out, _ = cli(capsys, "show", "migration", migration, "--url", url)
    assert code == 0 and f"started_at: {started}" in out


def test_errors_are_json_under_json(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    missing = new_id()
    code, out, err = cli(capsys, "show", "provider", missing, "--url", url, "--json")
    assert (code, out) == (1, "")
    assert json.loads(err) == {"error": "ProviderNotFound", "provider_uuid": missing,
                               "message": f"provider {missing} does not exist"}
    code, _, err = cli(capsys, "show", "provider", missing, "--url", url)
    assert (code, err) == (1, f"allocation-ledger show: provider {missing} does not exist\n")


def test_prefixes_name_one_thing_or_are_refused(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    first = "6ae32ac4-1111-4111-8111-111111111111"
    second = "6ae39999-2222-4222-8222-222222222222"
    for uuid in (first, second):
        ledger.register_provider(uuid, f"host-{uuid[:4]}-{uuid[4:8]}",
                                 inventories={"VCPU": {"total": 4}})
    code, out, _ = cli(capsys, "show", "provider", "6ae32ac4", "--url", url)
    assert code == 0 and first in out
    code, _, err = cli(capsys, "show", "provider", "6ae3", "--url", url)
    # an ambiguous prefix is a bad value (InvalidRequest): exit 2 under issue 13's error path
    assert code == 2 and "ambiguous: 2 match" in err and first in err and second in err
    code, _, err = cli(capsys, "history", "provider", "7", "--url", url)
    assert code == 1 and "no provider starts with '7'" in err


def test_a_tree_prints_root_first_children_indented(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = "ffffffff-0000-4000-8000-000000000000"  # sorts after its children
    ledger.register_provider(root, "compute-9", inventories={"VCPU": {"total": 4}})
    numa = "00000000-0000-4000-8000-000000000001"
    ledger.register_provider(numa, "compute-9-numa0", parent_uuid=root)
    nic = "00000000-0000-4000-8000-000000000000"
    ledger.register_provider(nic, "compute-9-numa0-nic", parent_uuid=numa)
    code, out, _ = cli(capsys, "show", "provider", root, "--url", url)
    names_shown = [line for line in out.splitlines() if "generation" in line]
    assert code == 0
    assert [line.split(" (")[0] for line in names_shown] == [
        "  compute-9", "    compute-9-numa0", "      compute-9-numa0-nic"]
    code, out, _ = cli(capsys, "list", "providers", "--url", url)
    assert [line.split()[1] for line in out.splitlines()] == [
        "NAME", "compute-9", "compute-9-numa0", "compute-9-numa0-nic"]


def test_list_filters_by_room_owner_and_age(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    small, big = a_host(ledger, vcpu=2), a_host(ledger, vcpu=16)
    vm = new_id()
    ledger.claim(vm, {small: {"VCPU": 1}}, None, project_id="p1", user_id="alice")
    ledger.claim(new_id(), {big: {"VCPU": 1}}, None, project_id="p2", user_id="bob")

    def listed(*argv: str) -> list[str]:
        code, out, _ = cli(capsys, "list", *argv, "--url", url, "--json")
        assert code == 0
        return [row["uuid"] for row in json.loads(out)]

    assert listed("providers", "--resource", "VCPU=4") == [big]
    assert listed("providers", "--resource", "vcpu=1", "--resource", "DISK_GB=1") == []
    assert listed("consumers", "--project", "p1", "--user", "alice") == [vm]
    assert listed("migrations", "--stale-after", "3600") == []


def test_usage_of_a_project_and_of_one_user(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    host, other = a_host(ledger), a_host(ledger)
    ledger.claim(new_id(), {host: {"VCPU": 2, "MEMORY_MB": 512}}, None, project_id="p1",
                 user_id="alice")
    moving = ledger.claim(new_id(), {other: {"VCPU": 3}}, None, project_id="p1",
                          user_id="bob")
    ledger.swap(moving.consumer_uuid, new_id(), moving.generation or 0, kind="migration")
    ledger.claim(new_id(), {host: {"VCPU": 5}}, None, project_id="p2", user_id="alice")

    def usage(*argv: str) -> dict[str, int]:
        code, out, _ = cli(capsys, "usage", *argv, "--url", url, "--json")
        assert code == 0
        found: dict[str, int] = json.loads(out)["usages"]
        return found

    assert usage("--project", "p1") == {"MEMORY_MB": 512, "VCPU": 5}  # the mover counts once
    assert usage("--project", "p1", "--user", "alice") == {"MEMORY_MB": 512, "VCPU": 2}
    assert usage("--project", "nobody") == {}
    code, out, _ = cli(capsys, "usage", "--project", "p2", "--url", url)
    assert code == 0 and out.splitlines()[1].split() == ["VCPU", "5"]


def test_tables_as_csv_and_f_json_as_json(
        ledger: Ledger, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    import csv
    import io

    host = a_host(ledger, name="compute, the first")  # a comma: quoted in CSV
    code, out, _ = cli(capsys, "-f", "csv", "list", "providers", "--url", url)
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0 and rows[0][:2] == ["UUID", "NAME"]
    assert rows[1][:2] == [host, "compute, the first"]
    code, out, _ = cli(capsys, "list", "providers", "-f", "json", "--url", url)
    assert code == 0 and json.loads(out)[0]["uuid"] == host


@pytest.mark.postgres
def test_a_postgres_url_with_libpq_options_before_the_command(
        pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with open_ledger(pg_url) as opened:
        host = a_host(opened)
    code, out, _ = cli(capsys, "--url", f"{pg_url}&sslmode=disable&connect_timeout=5",
                       "--json", "list", "providers")
    assert code == 0 and [p["uuid"] for p in json.loads(out)] == [host]
    code, _, err = cli(capsys, "--url", f"{pg_url}&sslmod=disable", "list", "providers")
    # a URL libpq refuses is a bad value (InvalidRequest): exit 2 under issue 13's error path
    assert code == 2 and 'invalid URI query parameter: "sslmod"' in err


def test_bash_completion_completes_commands_choices_and_options(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, script, _ = cli(capsys, "completion", "bash")
    assert code == 0
    path = tmp_path / "completion.sh"
    path.write_text(script)

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        done = subprocess.run(
            ["bash", "-c", f"source {path}; COMP_WORDS=({line}); "
             f"COMP_CWORD={len(words) - 1}; _allocation_ledger; echo ${{COMPREPLY[@]}}"],
            capture_output=True, text=True, check=True)
        return done.stdout.split()

    assert complete("allocation-ledger", "rep") == ["repair"]
    assert complete("allocation-ledger", "--url", "x", "list", "mig") == ["migrations"]
    assert complete("allocation-ledger", "audit", "--stale") == ["--stale-after"]
    assert complete("allocation-ledger", "import-placement", "--fr") == ["--from"]


def test_the_projections_batch_default_is_the_runners() -> None:
    from allocation_ledger.cli import projections as cli
    from allocation_ledger.projections import runner

    parser = cli.argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert parser.parse_args(["rebuild"]).batch_size == runner.BATCH_SIZE == cli.BATCH_SIZE
