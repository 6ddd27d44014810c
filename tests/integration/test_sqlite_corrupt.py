"""A SQLite ledger file with garbage in the middle is refused by every command, in one
line, before anything is read or written (``PRAGMA quick_check`` on open)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from allocation_ledger import open_ledger
from allocation_ledger.cli import main
from allocation_ledger.domain.errors import StoreUnusable
from tests.builders import a_host, an_instance


def test_a_corrupt_sqlite_file_is_refused_by_every_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ledger.db"
    url = f"sqlite:///{path}"
    with open_ledger(url) as ledger:
        host = a_host(ledger, vcpu=10_000, memory_mb=None)
        for _ in range(300):
            an_instance(ledger, {host: {"VCPU": 1}})
    assert main(["audit", "--url", url]) == 0
    size = path.stat().st_size
    page = 4096
    with open(path, "r+b") as file:  # one page in the middle overwritten
        file.seek((size // 2) // page * page)
        file.write(os.urandom(page))
    with pytest.raises(StoreUnusable, match="corrupt"):
        open_ledger(url)
    capsys.readouterr()
    for command in (["audit"], ["digest"], ["show", "provider", host],
                    ["projections", "status"], ["history", "ledger"],
                    ["state-at", "hosts", "--position", "3"]):
        assert main([*command, "--url", url]) == 1, command
        err = capsys.readouterr().err
        assert "corrupt" in err and len(err.strip().splitlines()) == 1, err
