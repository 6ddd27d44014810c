"""An auditor who may only read a SQLite ledger (the file 0444, its directory 0555) audits
it and reads its history, states and views, and nothing is written to it or beside it.

The tests run as root, whom file modes do not stop: the reader runs in a process of its
own without the capabilities that bypass them (``setpriv``), so the modes hold for it as
for any other user."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.bootstrap import open_read_models
from tests.builders import a_host, an_instance

#: The capabilities that let root read and write whatever the file modes say.
BYPASS = "-dac_override,-dac_read_search,-fowner"


def as_reader(*argv: str) -> subprocess.CompletedProcess[str]:
    """``allocation-ledger ARGV`` as a user the file modes apply to."""
    entry = "from allocation_ledger.cli import main; raise SystemExit(main())"
    command = [sys.executable, "-c", entry, *argv]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot drop the file-mode bypass")
        command = [setpriv, f"--bounding-set={BYPASS}", "--inh-caps=-all", *command]
    env = {k: v for k, v in os.environ.items() if k not in ("LEDGER_URL", "PROJECTIONS_URL")}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120,
                          check=False, cwd="/")


def contents(directory: Path) -> dict[str, str]:
    """Every file of ``directory`` and a hash of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir())}


@pytest.fixture
def read_only_ledger(tmp_path: Path) -> Iterator[tuple[str, Path, str]]:
    """A ledger with read models, in a file and directory only readable: (url, the
    directory, a provider)."""
    directory = tmp_path / "ledger"
    directory.mkdir()
    url = f"sqlite:///{directory / 'ledger.db'}"
    with open_ledger(url) as ledger:
        host = a_host(ledger, vcpu=8)
        an_instance(ledger, {host: {"VCPU": 2}})
    with open_read_models(url) as read:
        read.rebuild()
    for leftover in directory.glob("*-*"):  # the writer's lock file, an empty -wal/-shm
        leftover.unlink()
    (directory / "ledger.db").chmod(0o444)
    directory.chmod(0o555)
    try:
        yield url, directory, host
    finally:
        directory.chmod(0o755)


@pytest.mark.parametrize("command", [
    ["audit"],
    ["audit", "--projections", "off"],
    ["history", "ledger"],
    ["state-at", "hosts", "--position", "2"],
    ["digest"],
    ["list", "providers"],
    ["projections", "status"],
], ids=" ".join)
def test_a_reader_who_cannot_write_reads_and_writes_nothing(
        command: list[str], read_only_ledger: tuple[str, Path, str]) -> None:
    url, directory, _ = read_only_ledger
    before = contents(directory)
    done = as_reader(*command, "--url", url)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout
    assert contents(directory) == before


@pytest.mark.parametrize("what", ["show", "history"])
def test_a_reader_who_cannot_write_shows_a_provider(
        what: str, read_only_ledger: tuple[str, Path, str]) -> None:
    url, _, host = read_only_ledger
    done = as_reader(what, "provider", host, "--url", url)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert "VCPU" in done.stdout


def test_a_log_the_reader_cannot_index_is_refused_in_one_line(tmp_path: Path) -> None:
    """A file copied with its write-ahead log but not its index (a crash's leftovers): the
    reader cannot create the index, and reading the file alone would miss events."""
    directory = tmp_path / "ledger"
    directory.mkdir()
    url = f"sqlite:///{directory / 'ledger.db'}"
    saved = tmp_path / "copy"
    saved.mkdir()
    with open_ledger(url) as ledger:  # open: its writes are in the log until it closes
        a_host(ledger, vcpu=8)
        for name in ("ledger.db", "ledger.db-wal"):
            shutil.copy(directory / name, saved / name)
    assert (saved / "ledger.db-wal").stat().st_size > 0
    for file in saved.iterdir():
        file.chmod(0o444)
    saved.chmod(0o555)
    try:
        done = as_reader("audit", "--url", f"sqlite:///{saved / 'ledger.db'}")
    finally:
        saved.chmod(0o755)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert "write-ahead log" in done.stderr and "unexpected" not in done.stderr
